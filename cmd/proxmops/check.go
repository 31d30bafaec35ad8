package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/check"
	"github.com/proxmops/proxmops/internal/config"
)

func init() {
	var output, only string
	var exercise bool
	var eo check.ExerciseOptions
	cmd := &cobra.Command{
		Use:   "check",
		Short: "Check, read-only, that a Proxmox VE cluster and the repository are ready for proxmops",
		Long: "check looks at the cluster and the Git source without changing anything (GET requests only) and prints\n" +
			"one line per check, OK, WARN or FAIL, with what to do: the TLS certificate (its fingerprint and the line\n" +
			"that pins it), the API and node versions, the token and every privilege the manifests need on its path,\n" +
			"the nodes (online, clocks, quorum), the storages, bridges and SDN zones the manifests name, HA and pools,\n" +
			"and the repository (reachable, commit, manifests valid). It exits 1 when any line is FAIL.\n\n" +
			"--exercise (it writes!) then runs a throwaway VM and container through their lives on the cluster, in a pool\n" +
			"proxmops-check it creates and removes: create with an empty disk, config updates, tags and description records,\n" +
			"snapshot and rollback, resize, firewall options, full and linked clones, start, pending and hot-plugged changes,\n" +
			"stop, migration (with shared storage and a second node), a container from an existing template, delete, and\n" +
			"refusals provoked on purpose; each answer is compared with what the simulator answers for the same calls, and\n" +
			"each difference is a \"deviation\" line. It cleans up on success, failure and Ctrl-C, and a run removes what an\n" +
			"interrupted one left.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), clusterKeys...)
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: check this cluster only (default: every cluster)")
	cmd.Flags().BoolVar(&exercise, "exercise", false, "also run a throwaway VM and container through their whole lives on the cluster (writes; cleans up)")
	cmd.Flags().StringVar(&eo.Node, "node", "", "with --exercise: the node to run on (default: the first online one)")
	cmd.Flags().StringVar(&eo.Storage, "storage", "", "with --exercise: the storage for the VM's disks (default: the node's first taking images)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		cfg, err := loadConfig(flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		names, cfgs, err := checkTargets(cfg, only)
		if err != nil {
			return err
		}
		if !exercise && (eo.Node != "" || eo.Storage != "") {
			return fmt.Errorf("--node and --storage choose where --exercise runs: add --exercise")
		}
		// Ctrl-C ends the exercise's steps; its cleanup still runs.
		ctx, stop := signal.NotifyContext(commandContext(cmd), os.Interrupt, syscall.SIGTERM)
		defer stop()
		results := make([]api.TestResult, len(cfgs))
		for i, cc := range cfgs {
			o := check.Options{Config: cc, Name: names[i]}
			if exercise {
				o.Exercise = &eo
			}
			results[i] = check.Run(ctx, o)
		}
		res := check.Merge(names, results)
		out := cmd.OutOrStdout()
		if output == "json" {
			// Unescaped, so the report pastes as it reads ("<vmid>", not "\u003cvmid\u003e").
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(res); err != nil {
				return err
			}
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
