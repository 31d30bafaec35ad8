package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/source"
)

// openSessions opens one session per cluster: the single cluster section
// gives one, as oneSession does; a clusters list gives one per cluster
// (only the one named by --cluster when given), all read from one fetch
// of the repository, each from its own path.
func openSessions(ctx context.Context, flags *config.Flags, only string, stderr io.Writer) ([]*session, error) {
	cfg, err := loadConfig(flags, stderr)
	if err != nil {
		return nil, err
	}
	return sessionsOf(ctx, cfg, only)
}

// loadConfig loads the configuration (file, environment, flags) and prints
// its warnings.
func loadConfig(flags *config.Flags, stderr io.Writer) (*config.Config, error) {
	cfg, warnings, err := flags.Load()
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		fmt.Fprintln(stderr, "Warning:", w)
	}
	return cfg, nil
}

// oneCluster is the configuration of the one cluster a command works on:
// the single cluster section, or the entry of the clusters list that only
// (--cluster) names. A clusters list without --cluster is refused with
// the names to choose from.
func oneCluster(cfg *config.Config, only string) (*config.Config, error) {
	if !cfg.MultiCluster() {
		if only != "" && only != config.DefaultClusterName {
			return nil, fmt.Errorf("no cluster %q: the configuration has the single cluster section (cluster %q)", only, config.DefaultClusterName)
		}
		return cfg, nil
	}
	names := strings.Join(cfg.ClusterNames(), ", ")
	if only == "" {
		return nil, fmt.Errorf("the configuration lists several clusters: name one with --cluster (clusters: %s)", names)
	}
	cc, ok := cfg.ForCluster(only)
	if !ok {
		return nil, fmt.Errorf("no cluster %q (clusters: %s)", only, names)
	}
	return cc, nil
}

// sessionsOf opens the sessions of openSessions on a loaded configuration.
func sessionsOf(ctx context.Context, cfg *config.Config, only string) ([]*session, error) {
	if !cfg.MultiCluster() {
		if only != "" && only != config.DefaultClusterName {
			return nil, fmt.Errorf("no cluster %q: the configuration has the single cluster section (cluster %q)", only, config.DefaultClusterName)
		}
		s, err := sessionFor(ctx, cfg, nil, "")
		if err != nil {
			return nil, err
		}
		return []*session{s}, nil
	}
	targets := cfg.Targets()
	if only != "" {
		var picked []config.ClusterEntry
		for _, t := range targets {
			if t.Name == only {
				picked = append(picked, t)
			}
		}
		if len(picked) == 0 {
			return nil, fmt.Errorf("no cluster %q (clusters: %s)", only, strings.Join(cfg.ClusterNames(), ", "))
		}
		targets = picked
	}
	if err := requireSettings(cfg.RequireSource()); err != nil {
		return nil, err
	}
	syncer, err := source.New(source.FromConfig(cfg.Source))
	if err != nil {
		return nil, err
	}
	res, err := syncer.Sync(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the repository: %w", err)
	}
	var out []*session
	for _, t := range targets {
		cc, _ := cfg.ForCluster(t.Name)
		s, err := sessionFor(ctx, cc, res, t.Path)
		if err != nil {
			for _, o := range out {
				o.close()
			}
			return nil, fmt.Errorf("cluster %s: %w", t.Name, err)
		}
		s.name = t.Name
		s.db.prefix = api.ClusterStatePrefix(t.Name)
		out = append(out, s)
	}
	return out, nil
}

// sessionFor reads the manifests (from res's sub-directory sub, or from a
// sync of cfg's source when res is nil) and connects to cfg's cluster.
func sessionFor(ctx context.Context, cfg *config.Config, res *source.Result, sub string) (*session, error) {
	if err := requireSettings(cfg.RequireSource(), cfg.RequireCluster()); err != nil {
		return nil, err
	}
	dir := ""
	if res == nil {
		syncer, err := source.New(source.FromConfig(cfg.Source))
		if err != nil {
			return nil, err
		}
		if res, err = syncer.Sync(ctx); err != nil {
			return nil, fmt.Errorf("reading the repository: %w", err)
		}
		dir = res.Dir
	} else {
		dir = filepath.Join(res.Dir, filepath.FromSlash(sub))
	}
	set, err := manifest.LoadDir(dir)
	if err != nil {
		var list manifest.ErrorList
		if errors.As(err, &list) {
			return nil, fmt.Errorf("invalid manifests (%d problem(s)):\n%s", len(list), list.Error())
		}
		return nil, err
	}
	client, err := pve.New(pve.Config{Endpoint: cfg.Cluster.Endpoint, TokenID: cfg.Cluster.TokenID,
		TokenSecret: cfg.Cluster.TokenSecret, CAFile: cfg.Cluster.CAFile, Fingerprint: cfg.Cluster.Fingerprint,
		InsecureSkipVerify: cfg.Cluster.InsecureSkipVerify})
	if err != nil {
		return nil, err
	}
	prov, db := provisioner(cfg)
	// The daemon's guard: an empty load prunes nothing (an emptied or wrong
	// directory is never a reason to delete every guest), and says so.
	prune, held := cfg.Reconcile.Prune, ""
	if prune && len(set.Resources) == 0 {
		at := ""
		if res.Commit.Hash != "" {
			at = " at " + res.Commit.Short()
		}
		prune, held = false, "the repository has no manifests"+at+"; nothing is pruned from an empty load"
	}
	opts := engine.Options{Prune: prune, PruneHeld: held, Concurrency: cfg.Reconcile.Concurrency, Provisioner: prov}
	if len(set.OfKind(manifest.KindStorage)) > 0 {
		// Storages are proxmops' by the daemon's records (Proxmox keeps no
		// comment on them): plan and apply read and write the same ones.
		opts.Records = db
	}
	eng := engine.New(client, opts)
	return &session{cfg: cfg, engine: eng, client: client, desired: engine.DesiredFromSet(set, nil),
		revision: res.Commit.Hash, db: db}, nil
}

// clusterHeader starts a cluster's part of the text output when several
// clusters are shown.
func clusterHeader(w io.Writer, ss []*session, s *session) {
	if len(ss) > 1 || s.name != "" {
		fmt.Fprintf(w, "== cluster %s (%s)\n", s.name, s.client.Endpoint())
	}
}

// planDocument is the plan document of several clusters' plans: each
// action names its cluster (GET /api/v1/plan's form).
func planDocument(ss []*session, plans []*engine.Plan) api.Plan {
	docs := make([]api.Plan, len(plans))
	for i, p := range plans {
		d := p.Document()
		if ss[i].name != "" {
			d.Cluster = ss[i].name
			for j := range d.Actions {
				d.Actions[j].Cluster = ss[i].name
			}
		}
		docs[i] = d
	}
	return api.MergePlans(docs)
}

// planDocOf is one session's plan document, naming its cluster.
func planDocOf(s *session, p *engine.Plan) api.Plan {
	return planDocument([]*session{s}, []*engine.Plan{p})
}

// settingFlags are the flags that set a required key, named beside it.
var settingFlags = map[string]string{"source.repoURL": "--repo", "cluster.endpoint": "--endpoint", "cluster.tokenId": "--token-id"}

// requireSettings joins what the configuration lacks into one error, so a
// first run names every missing setting at once (not one per attempt), each
// with its flag where it has one.
func requireSettings(errs ...error) error {
	var probs []config.Problem
	for _, err := range errs {
		var ce *config.Error
		if errors.As(err, &ce) {
			probs = append(probs, ce.Problems...)
		} else if err != nil {
			return err
		}
	}
	if len(probs) == 0 {
		return nil
	}
	for i, p := range probs {
		if f, ok := settingFlags[p.Key]; ok {
			probs[i].Message = strings.Replace(p.Message, "(or ", "(or "+f+", or ", 1)
		}
	}
	return &config.Error{Problems: probs}
}
