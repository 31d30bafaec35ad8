package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/check"
	"github.com/proxmops/proxmops/internal/config"
)

func init() {
	var output, only string
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check, read-only, that a Proxmox VE cluster and the repository are ready for proxmops",
		Long: "check looks at the cluster and the Git source without changing anything (GET requests only) and prints\n" +
			"one line per check, OK, WARN or FAIL, with what to do: the TLS certificate (its fingerprint and the line\n" +
			"that pins it), the API and node versions, the token and every privilege the manifests need on its path,\n" +
			"the nodes (online, clocks, quorum), the storages, bridges and SDN zones the manifests name, HA and pools,\n" +
			"and the repository (reachable, commit, manifests valid). It exits 1 when any line is FAIL.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), clusterKeys...)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: check this cluster only (default: every cluster)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if output != "text" && output != "json" {
			return fmt.Errorf("--output must be text or json, not %q", output)
		}
		cfg, err := loadConfig(flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		names, cfgs, err := checkTargets(cfg, only)
		if err != nil {
			return err
		}
		results := make([]api.TestResult, len(cfgs))
		for i, cc := range cfgs {
			results[i] = check.Run(cmd.Context(), check.Options{Config: cc, Name: names[i]})
		}
		res := check.Merge(names, results)
		out := cmd.OutOrStdout()
		if output == "json" {
			b, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return err
			}
			fmt.Fprintln(out, string(b))
		} else {
			check.WriteText(out, res)
		}
		if !res.OK {
			return &exitError{code: 1}
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// checkTargets are the clusters check looks at: the single cluster
// section, every entry of a clusters list, or the one --cluster names.
func checkTargets(cfg *config.Config, only string) ([]string, []*config.Config, error) {
	if !cfg.MultiCluster() || only != "" {
		cc, err := oneCluster(cfg, only)
		if err != nil {
			return nil, nil, err
		}
		return []string{only}, []*config.Config{cc}, nil
	}
	var names []string
	var cfgs []*config.Config
	for _, n := range cfg.ClusterNames() {
		cc, _ := cfg.ForCluster(n)
		names, cfgs = append(names, n), append(cfgs, cc)
	}
	return names, cfgs, nil
}
