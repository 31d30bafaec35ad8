package main

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/spf13/cobra"
)

func init() {
	var snapshot, output, only string
	var list bool
	cmd := &cobra.Command{
		Use:   "rollback KIND/NAME",
		Short: "Roll a VirtualMachine or Container back to a Proxmox snapshot",
		Long: "rollback rolls an owned guest back to one of its snapshots: the newest proxmops-* one\n" +
			"(taken before a change, see spec.snapshots) unless --snapshot names another. Proxmox stops\n" +
			"a running guest for the rollback; proxmops starts it again and waits for the task.\n" +
			"Afterwards the guest differs from Git: with sync policy auto the next pass re-applies the\n" +
			"manifest, with manual it stays as rolled back until you sync or revert the commit.\n" +
			"--list shows the guest's snapshots instead. With --server (cli.server) the daemon does both.",
		Args: cobra.ExactArgs(1),
	}
	flags := config.BindFlags(cmd.Flags(), append(clusterKeys, "cli.server")...)
	cmd.Flags().StringVar(&snapshot, "snapshot", "", "snapshot to roll back to (default: the newest proxmops-* snapshot)")
	cmd.Flags().BoolVar(&list, "list", false, "list the guest's snapshots and change nothing")
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: the cluster of the guest (required there)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		kind, name, err := guestArg(args[0])
		if err != nil {
			return err
		}
		if err := checkOutput(output); err != nil {
			return err
		}
		ctx := cmd.Context()
		cfg, daemon, err := writerConfig(cmd, flags, !list)
		if err != nil {
			return err
		}
		if daemon {
			return rollbackThroughDaemon(cmd, cfg, only, kind, name, snapshot, list, output)
		}
		s, err := oneSession(ctx, cfg, only)
		if err != nil {
			return err
		}
		defer s.close()
		out := cmd.OutOrStdout()
		if list {
			l, err := s.engine.GuestSnapshots(ctx, s.desired, kind, name)
			if err != nil {
				return err
			}
			if output == "json" {
				return writeJSONDoc(out, l)
			}
			writeSnapshotList(out, l)
			return nil
		}
		if s.cfg.Reconcile.DryRun {
			return errors.New("reconcile.dryRun is set: nothing is rolled back")
		}
		progress := cmd.ErrOrStderr()
		if output == "text" {
			progress = out
		}
		res, err := s.engine.Rollback(ctx, s.desired, kind, name, snapshot, func(m string) { fmt.Fprintln(progress, "… "+m) })
		if err != nil {
			return err
		}
		// Show the guest against Git as it now is.
		p, perr := s.plan(ctx)
		var a *engine.Action
		if perr == nil {
			a = p.Find(kind, name)
		}
		if output == "json" {
			doc := struct {
				api.RollbackResult
				Status vocab.Status    `json:"status,omitempty"`
				Plan   *api.PlanAction `json:"plan,omitempty"`
			}{RollbackResult: res}
			if a != nil {
				doc.Status = a.Status
				for _, pa := range planDocOf(s, p).Actions {
					if pa.Kind == kind && pa.Name == name {
						doc.Plan = &pa
					}
				}
			}
			return writeJSONDoc(out, doc)
		}
		fmt.Fprintf(out, "✓ %s/%s rolled back to %s", kind, name, res.Snapshot)
		if res.Started {
			fmt.Fprint(out, " and started again")
		}
		fmt.Fprintln(out, ".")
		if a != nil {
			fmt.Fprintf(out, "Against Git it is now %s: %s\n", a.Status, a.Reason)
		} else if perr != nil {
			fmt.Fprintf(out, "Could not plan it against Git afterwards: %v\n", perr)
		}
		fmt.Fprintln(out, res.Next)
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// writeSnapshotList prints a guest's snapshots, newest first, marking the
// one its current state is based on.
func writeSnapshotList(out io.Writer, l api.SnapshotList) {
	fmt.Fprintf(out, "%s/%s (%s, vmid %d), sync %s:\n", l.Kind, l.Name, l.Node, l.VMID, l.SyncPolicy)
	if len(l.Snapshots) == 0 {
		fmt.Fprintln(out, "  no snapshots")
		return
	}
	for _, sn := range l.Snapshots {
		mark := " "
		if sn.Name == l.Current {
			mark = "*"
		}
		when := time.Unix(sn.Time, 0).UTC().Format("2006-01-02 15:04:05Z")
		fmt.Fprintf(out, "%s %-32s %s  %s\n", mark, sn.Name, when, sn.Description)
		if sn.RollbackBlocked != "" {
			fmt.Fprintf(out, "  %-32s cannot be rolled back to: %s\n", "", sn.RollbackBlocked)
		}
	}
	if l.Current != "" {
		fmt.Fprintln(out, "(* the snapshot the current state is based on)")
	}
}
