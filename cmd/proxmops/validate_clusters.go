package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/manifest"
)

// clusterReport is one cluster's part of `validate --output json` with a
// clusters list.
type clusterReport struct {
	Cluster string `json:"cluster"`
	Path    string `json:"path"`
	validateReport
}

// validateClusters validates each cluster's directory under root (the
// directory of source.path) on its own: names and VMIDs are unique per
// cluster, not across clusters. only picks one cluster.
func validateClusters(cfg *config.Config, root, only, output string, stdout, stderr io.Writer) error {
	var reports []clusterReport
	total := 0
	for _, t := range cfg.Targets() {
		if only != "" && t.Name != only {
			continue
		}
		dir := filepath.Join(root, filepath.FromSlash(t.Path))
		set, err := manifest.LoadPath(dir)
		var errs manifest.ErrorList
		if err != nil && !errors.As(err, &errs) {
			return fmt.Errorf("cluster %s: %w", t.Name, err)
		}
		r := clusterReport{Cluster: t.Name, Path: dir, validateReport: validateReport{Valid: len(errs) == 0, Resources: set.Resources, Errors: errs}}
		if r.Resources == nil {
			r.Resources = []manifest.Resource{}
		}
		if r.Errors == nil {
			r.Errors = manifest.ErrorList{}
		}
		reports = append(reports, r)
		total += len(errs)
		if output == "text" {
			fmt.Fprintf(stdout, "== cluster %s (%s)\n", t.Name, dir)
			if len(errs) == 0 {
				printSummary(stdout, set)
			}
		}
		for _, e := range errs {
			fmt.Fprintf(stderr, "cluster %s: %s\n", t.Name, e.Error())
		}
	}
	if len(reports) == 0 {
		return fmt.Errorf("no cluster %q (clusters: %s)", only, strings.Join(cfg.ClusterNames(), ", "))
	}
	if output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(struct {
			Valid    bool            `json:"valid"`
			Clusters []clusterReport `json:"clusters"`
		}{total == 0, reports}); err != nil {
			return err
		}
	}
	if total > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d error(s) in %d cluster(s) under %s", total, len(reports), root)}
	}
	return nil
}
