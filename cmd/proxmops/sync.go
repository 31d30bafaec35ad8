package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/vocab"
)

func init() {
	var output, only string
	var o api.SyncOptions
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "sync [KIND/NAME]",
		Short: "Ask the daemon to sync the cluster (or one resource) now and wait for its pass",
		Long: "sync asks the daemon at --server (cli.server), with the API token in " + envCLIToken + " or\n" +
			"cli.tokenFile, to pull Git and sync every resource now (or only KIND/NAME), waits for the pass,\n" +
			"and shows every resource that is not in sync. The daemon does the work, so its queue, its\n" +
			"locks and its history (which names the token and the CLI's user) see it. It exits 1 when a\n" +
			"resource failed. Without a daemon, proxmops apply does the same from this machine.",
		Args: cobra.MaximumNArgs(1),
	}
	flags := config.BindFlags(cmd.Flags(), "cli.server")
	outputFlag(cmd, &output)
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: sync this cluster only")
	cmd.Flags().BoolVar(&o.Prune, "prune", false, "also delete owned resources no longer declared")
	cmd.Flags().BoolVar(&o.Reboot, "reboot", false, "apply changes that need a reboot by rebooting")
	cmd.Flags().BoolVar(&o.DryRun, "dry-run", false, "show the plan of the sync and change nothing")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultSyncWait, "how long to wait for the daemon's pass")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		kind, name := "", ""
		if len(args) == 1 {
			var ok bool
			if kind, name, ok = vocab.SplitKey(args[0]); !ok || kind == "" || name == "" {
				return fmt.Errorf("name the resource as KIND/NAME, e.g. VirtualMachine/web-01, not %q", args[0])
			}
		}
		cfg, err := loadConfig(flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		if cfg.CLI.Server == "" {
			return errors.New("sync asks a running daemon: give its URL with --server (or cli.server); without a daemon, use proxmops apply")
		}
		return syncCommand(cmd, cfg, only, kind, name, o, output, timeout)
	}
	rootCmd.AddCommand(cmd)
}

// defaultSyncWait bounds the wait for the daemon's pass (apply --server
// waits as long).
const defaultSyncWait = 30 * time.Minute

// syncCommand runs a sync through the daemon and reports it (sync, and
// apply with --server).
func syncCommand(cmd *cobra.Command, cfg *config.Config, only, kind, name string, o api.SyncOptions, output string, wait time.Duration) error {
	if err := checkOutput(output); err != nil {
		return err
	}
	d, err := newDaemonClient(cfg, only)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	progress := out
	if output == "json" {
		progress = cmd.ErrOrStderr()
	}
	if o.DryRun {
		var doc struct {
			Status string   `json:"status"`
			Plan   api.Plan `json:"plan"`
		}
		path := "/sync"
		if kind != "" {
			path = resourcePath(kind, name) + "/sync"
		}
		if err := d.do(cmd.Context(), http.MethodPost, path, o, &doc); err != nil {
			return err
		}
		if output == "json" {
			return writeJSONDoc(out, doc.Plan)
		}
		fmt.Fprintln(out, doc.Status)
		for _, a := range doc.Plan.Actions {
			fmt.Fprintf(out, "  %s %s/%s: %s\n", a.Action, a.Kind, a.Name, a.Reason)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), wait)
	defer cancel()
	list, err := syncThroughDaemon(ctx, d, kind, name, o, progress)
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("the daemon's pass did not finish in time; it goes on (see its UI or GET /api/v1/resources)")
	}
	if err != nil {
		return err
	}
	if output == "json" {
		if err := writeJSONDoc(out, list); err != nil {
			return err
		}
	} else {
		writeStatusList(out, list, kind, name)
	}
	if n := list.Counts[vocab.StatusFailed]; n > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d resource(s) failed; see the daemon's UI or GET /api/v1/resources", n)}
	}
	return nil
}

// writeStatusList prints the resources a sync left out of sync (only the
// one synced, when kind is set), then the counts.
func writeStatusList(w interface{ Write([]byte) (int, error) }, list api.ResourceList, kind, name string) {
	for _, r := range list.Resources {
		if kind != "" && (r.Kind != kind || r.Name != name) {
			continue
		}
		if kind == "" && r.Status == vocab.StatusSynced {
			continue
		}
		prefix := ""
		if r.Cluster != "" {
			prefix = r.Cluster + ": "
		}
		fmt.Fprintf(w, "%s%s/%s: %s: %s\n", prefix, r.Kind, r.Name, r.Status, r.Reason)
	}
	var parts []string
	for _, s := range vocab.Statuses {
		parts = append(parts, fmt.Sprintf("%d %s", list.Counts[s], s))
	}
	fmt.Fprintf(w, "Status after the daemon's pass at revision %s: %s.\n", shortRevision(list.Revision), strings.Join(parts, ", "))
}

func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}

// adoptThroughDaemon is proxmops adopt with --server: the daemon adopts
// and records it with the token and the CLI's user.
func adoptThroughDaemon(cmd *cobra.Command, cfg *config.Config, only, kind, name string) error {
	d, err := newDaemonClient(cfg, only)
	if err != nil {
		return err
	}
	var res api.AdoptResult
	if err := d.do(cmd.Context(), http.MethodPost, resourcePath(kind, name)+"/adopt", api.AdoptRequest{}, &res); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s/%s: %s\n", kind, name, res.Message)
	return nil
}

// rollbackThroughDaemon is proxmops rollback with --server.
func rollbackThroughDaemon(cmd *cobra.Command, cfg *config.Config, only, kind, name, snapshot string, list bool, output string) error {
	d, err := newDaemonClient(cfg, only)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if list {
		var l api.SnapshotList
		if err := d.do(cmd.Context(), http.MethodGet, resourcePath(kind, name)+"/snapshots", nil, &l); err != nil {
			return err
		}
		if output == "json" {
			return writeJSONDoc(out, l)
		}
		writeSnapshotList(out, l)
		return nil
	}
	var res api.RollbackResult
	if err := d.do(cmd.Context(), http.MethodPost, resourcePath(kind, name)+"/rollback", api.RollbackRequest{Snapshot: snapshot}, &res); err != nil {
		return err
	}
	if output == "json" {
		return writeJSONDoc(out, res)
	}
	fmt.Fprintf(out, "✓ %s/%s rolled back to %s", kind, name, res.Snapshot)
	if res.Started {
		fmt.Fprint(out, " and started again")
	}
	fmt.Fprintln(out, ".")
	fmt.Fprintln(out, res.Next)
	return nil
}
