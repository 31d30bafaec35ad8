package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/spf13/cobra"
)

// kindList is --kind: repeatable, each value a comma list; "" (its
// default) empties it, so that a reset to the default clears it.
type kindList []string

func (k *kindList) String() string { return strings.Join(*k, ",") }
func (k *kindList) Type() string   { return "strings" }
func (k *kindList) Set(v string) error {
	if v == "" {
		*k = nil
		return nil
	}
	*k = append(*k, v)
	return nil
}

func init() {
	var o export.Options
	var out string
	var force bool
	var only string
	cmd := &cobra.Command{
		Use:   "export --out DIR [--node N] [--vmid LIST|--all] [--kind KIND...]",
		Short: "Write manifests for guests already on the cluster (onboarding)",
		Long: "export reads the cluster and writes one manifest per guest under DIR: vms/, templates/ and\n" +
			"containers/ (and networks/, sdn/ with --kind), in Proxmox's values, each guest proxmops does\n" +
			"not own annotated proxmops.dev/adopt: \"true\". Review the files, commit them, and plan shows\n" +
			"only the adoptions (the ownership tag); a sync adopts them. What a manifest cannot say as it\n" +
			"is on the cluster is written as a NOTE in the file's head. export never overwrites a file\n" +
			"unless --force, and checks that the written tree validates.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), clusterConnKeys...)
	cmd.Flags().StringVar(&out, "out", "", "directory to write the manifests to (required)")
	cmd.Flags().StringVar(&o.Node, "node", "", "only the guests (and interfaces) of this node")
	cmd.Flags().StringVar(&o.VMIDs, "vmid", "", "guests to export, e.g. 100,105-110")
	cmd.Flags().BoolVar(&o.All, "all", false, "export every guest")
	cmd.Flags().Var((*kindList)(&o.Kinds), "kind", "kinds to export (repeatable or comma-separated): "+export.KindWords()+" (default the guest kinds)")
	cmd.Flags().BoolVar(&force, "force", false, "overwrite files that exist in --out")
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: the cluster to export (required there)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if out == "" {
			return errors.New("--out DIR is required")
		}
		cfg, err := loadConfig(flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if cfg, err = oneCluster(cfg, only); err != nil {
			return err
		}
		if err := requireSettings(cfg.RequireCluster()); err != nil {
			return err
		}
		client, err := pve.New(pve.Config{Endpoint: cfg.Cluster.Endpoint, TokenID: cfg.Cluster.TokenID,
			TokenSecret: cfg.Cluster.TokenSecret, CAFile: cfg.Cluster.CAFile, Fingerprint: cfg.Cluster.Fingerprint,
			InsecureSkipVerify: cfg.Cluster.InsecureSkipVerify})
		if err != nil {
			return err
		}
		defer client.Close()
		ctx := cmd.Context()
		res, err := export.Run(ctx, client, o)
		if err != nil {
			return err
		}
		if err := res.WriteDir(out, force); err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		for _, f := range res.Files {
			fmt.Fprintf(w, "wrote %s\n", f.Path)
			for _, n := range f.Notes {
				fmt.Fprintf(w, "  NOTE: %s\n", n)
			}
		}
		for _, s := range res.Skipped {
			fmt.Fprintf(w, "skipped %s\n", s)
		}
		issues, err := res.Check(ctx, client)
		if err != nil {
			return fmt.Errorf("planning the exported manifests: %w", err)
		}
		fmt.Fprintf(w, "\n%d manifest(s) in %s; they validate.\n", len(res.Files), out)
		if len(issues) == 0 {
			fmt.Fprintln(w, "A plan of them against the cluster shows only the adoptions (the ownership tag).")
		} else {
			fmt.Fprintln(w, "A plan of them against the cluster shows more than the adoptions; review these before a sync:")
			for _, s := range issues {
				fmt.Fprintln(w, "  "+s)
			}
		}
		return refusedError(res.Refused)
	}
	rootCmd.AddCommand(cmd)
}

// refusedError reports the guests an export refused (no manifest keeps
// their Proxmox name): the command fails after writing the others.
func refusedError(refused []string) error {
	if len(refused) == 0 {
		return nil
	}
	return fmt.Errorf("%d guest(s) not exported: a VM's or template's manifest name is its Proxmox name, and theirs cannot be one as it is, so a manifest would rename them:\n  %s\nrename them on the cluster and export them again, or leave them out with --vmid",
		len(refused), strings.Join(refused, "\n  "))
}
