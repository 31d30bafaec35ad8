package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/spf13/cobra"
)

func init() {
	cmd := &cobra.Command{
		Use:   "adopt KIND/NAME",
		Short: "Take ownership of the unowned guest at a manifest's VMID (the ownership tag only)",
		Long: "adopt tags the guest at the VMID of the VirtualMachine, Template or Container KIND/NAME,\n" +
			"which proxmops does not own, with the ownership tag (its other tags kept), as the annotation\n" +
			"proxmops.dev/adopt: \"true\" would. It changes nothing else: the other differences are\n" +
			"shown and wait for a sync (proxmops apply, or the daemon). It refuses a guest of the other\n" +
			"type, a template where a VM is declared (or the reverse) and a locked guest, with the reason.",
		Args: cobra.ExactArgs(1),
	}
	flags := config.BindFlags(cmd.Flags(), clusterKeys...)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		key := args[0]
		kind, name, ok := strings.Cut(key, "/")
		if !ok || kind == "" || name == "" {
			return fmt.Errorf("name the guest as KIND/NAME, e.g. VirtualMachine/web-01, not %q", key)
		}
		ctx := cmd.Context()
		s, err := openSession(ctx, flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer s.close()
		if s.cfg.Reconcile.DryRun {
			return errors.New("reconcile.dryRun is set: nothing is adopted")
		}
		eng := engine.New(s.client, engine.Options{Concurrency: s.cfg.Reconcile.Concurrency, Adopt: []string{key}})
		full, err := eng.Plan(ctx, s.desired, s.revision)
		if err != nil {
			return fmt.Errorf("planning against %s: %w", s.client.Endpoint(), err)
		}
		p, err := full.AdoptOnly(key)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		engine.WritePlanText(out, full.Only(key), false)
		rep, err := eng.Apply(ctx, p, nil)
		if err != nil {
			return err
		}
		for _, r := range rep.Results {
			if r.Error != "" {
				return fmt.Errorf("%s: %s", key, r.Error)
			}
		}
		fmt.Fprintf(out, "\nadopted %s: the guest now carries %s; the other changes above wait for a sync\n", key, engine.OwnerTag)
		return nil
	}
	rootCmd.AddCommand(cmd)
}
