package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/user"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/render"
	"github.com/proxmops/proxmops/internal/vocab"
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
			"type, a template where a VM is declared (or the reverse) and a locked guest, with the reason.\n" +
			"It also tags the guest adopted-by-proxmops and records its disk sizes in its description\n" +
			"(a proxmops-adopted: line): disks up to those sizes stay accepted, growth beyond them is\n" +
			"drift. Run again on a guest adopted before these existed, it adds them and says so; on a\n" +
			"guest whose adoption is complete it changes nothing. With --server (cli.server) the daemon adopts it.",
		Args: cobra.ExactArgs(1),
	}
	flags := config.BindFlags(cmd.Flags(), append(clusterKeys, "cli.server")...)
	var only string
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: the cluster of the guest (required there)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		key := args[0]
		kind, name, err := guestArg(key)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		cfg, daemon, err := writerConfig(cmd, flags, true)
		if err != nil {
			return err
		}
		if daemon {
			return adoptThroughDaemon(cmd, cfg, only, kind, name)
		}
		s, err := oneSession(ctx, cfg, only)
		if err != nil {
			return err
		}
		defer s.close()
		if s.cfg.Reconcile.DryRun {
			return errors.New("reconcile.dryRun is set: nothing is adopted")
		}
		eng := s.engine
		ad, err := eng.PlanAdoption(ctx, s.desired, s.revision, key)
		out := cmd.OutOrStdout()
		if errors.Is(err, engine.ErrAlreadyAdopted) {
			// Run again: nothing to add, not a failure.
			fmt.Fprintln(out, strings.TrimSuffix(err.Error(), ": "+api.ErrConflict.Error()))
			return nil
		}
		if err != nil {
			return err
		}
		render.Plan(out, ad.Plan, false)
		if err := eng.ApplyAdoption(ctx, ad, nil); err != nil {
			return err
		}
		if err := recordAdoption(ctx, s.db, kind, historyName(s, name), s.revision, ad); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "Warning: adopted, but not recorded in the daemon's history: %v\n", err)
		}
		if ad.Completes {
			fmt.Fprintf(out, "\ncompleted the adoption of %s, which proxmops owned already: added %s and recorded its disk sizes (%s) in its description; the other changes above wait for a sync\n",
				key, engine.AdoptedTag, ad.Record)
		} else {
			fmt.Fprintf(out, "\nadopted %s: the guest now carries %s and %s, its disk sizes (%s) are recorded in its description; the other changes above wait for a sync\n",
				key, engine.OwnerTag, engine.AdoptedTag, ad.Record)
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// guestArg reads a command's KIND/NAME argument.
func guestArg(key string) (kind, name string, err error) {
	kind, name, ok := vocab.SplitKey(key)
	if !ok || kind == "" || name == "" {
		return "", "", fmt.Errorf("name the guest as KIND/NAME, e.g. VirtualMachine/web-01, not %q", key)
	}
	return kind, name, nil
}

// recordAdoption writes the adoption to the daemon's history, as the API
// does, with the OS user as its user.
func recordAdoption(ctx context.Context, db *lazyStore, kind, name, revision string, ad *engine.Adoption) error {
	st, err := db.open(ctx)
	if err != nil {
		return err
	}
	_, err = st.AddHistory(ctx, kind, name, api.HistoryEntry{Event: api.EventAdopted, Commit: revision,
		Actor: cliActor(), Message: ad.HistoryMessage(revision)})
	return err
}

// historyName is the name a resource's history is kept under, as the
// daemon keeps it: "home/app-01" in cluster home of a clusters list.
func historyName(s *session, name string) string { return api.HistoryName(s.name, name) }

// cliActor is the command as a history entry's actor.
func cliActor() *api.Actor { return &api.Actor{Kind: api.ActorCLI, Name: cliUser()} }

// cliUser names the person running the command: the OS user, else "cli".
func cliUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "cli"
}
