package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/render"
	"github.com/spf13/cobra"
)

// clusterConnKeys are the keys of how to reach a cluster and trust its
// certificate: every command that talks to a cluster binds them as flags
// (--endpoint, --token-id, --insecure-skip-verify, --fingerprint, --ca-file).
var clusterConnKeys = []string{"cluster.endpoint", "cluster.tokenId", "cluster.insecureSkipVerify",
	"cluster.fingerprint", "cluster.caFile"}

// clusterKeys are the configuration keys plan and apply take as flags
// (secrets come from the file or the environment only).
var clusterKeys = slices.Concat(clusterConnKeys, []string{"source.repoURL", "source.path", "source.revision",
	"reconcile.concurrency"})

func init() {
	var output, only string
	var detailed, noColor bool
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Show what apply would change, without changing anything",
		Long: "plan reads the repository and the cluster and prints the difference, in the style of terraform plan:\n" +
			"+ create, ~ update, ↻ reboot, - delete, ! conflict, each with its reason and field changes.\n" +
			"With --prune it shows the deletions apply --prune would make.\n" +
			"With --detailed-exitcode it exits 0 when every resource is in sync (sync-disabled ones aside),\n" +
			"2 when any is not (changes, drift, failed, conflict or unknown), 1 on error.",
		Args: cobra.NoArgs,
	}
	// --prune (reconcile.prune) previews the deletions apply --prune makes.
	flags := config.BindFlags(cmd.Flags(), append(clusterKeys, "reconcile.prune")...)
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 2 when any resource is not in sync, 0 when all are")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "never colour the text output")
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: plan this cluster only (default: every cluster, grouped)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		ctx := cmd.Context()
		ss, err := openSessions(ctx, flags, only, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer closeSessions(ss)
		for _, s := range ss {
			s.db.readOnly = true // a plan leaves no database behind
		}
		plans := make([]*engine.Plan, len(ss))
		changes := false
		for i, s := range ss {
			if plans[i], err = s.plan(ctx); err != nil {
				if s.name != "" {
					return fmt.Errorf("cluster %s: %w", s.name, err)
				}
				return err
			}
			changes = changes || plans[i].HasChanges()
		}
		out := cmd.OutOrStdout()
		if output == "json" {
			if err := writeJSONDoc(out, planDocument(ss, plans)); err != nil {
				return err
			}
		} else {
			for i, s := range ss {
				if i > 0 {
					fmt.Fprintln(out)
				}
				clusterHeader(out, ss, s)
				render.Plan(out, plans[i], useColor(out, noColor))
			}
		}
		if detailed && changes {
			return &exitError{code: 2}
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

// session is what plan and apply share: configuration, the manifests of the
// chosen revision, and an engine on the cluster.
type session struct {
	cfg      *config.Config
	engine   *engine.Engine
	client   *pve.Client
	desired  *engine.Desired
	revision string
	db       *lazyStore
	name     string // the cluster's name in a clusters list; "" for the single cluster section
}

// oneSession reads the repository and connects the engine on a loaded
// configuration, for a command that works on one cluster: with a clusters
// list, the one only (--cluster) names, which it must. It contacts the
// cluster only later.
func oneSession(ctx context.Context, cfg *config.Config, only string) (*session, error) {
	if _, err := oneCluster(cfg, only); err != nil {
		return nil, err
	}
	ss, err := sessionsOf(ctx, cfg, only)
	if err != nil {
		return nil, err
	}
	return ss[0], nil
}

func (s *session) plan(ctx context.Context) (*engine.Plan, error) {
	p, err := s.engine.Plan(ctx, s.desired, s.revision)
	if err != nil {
		return nil, fmt.Errorf("planning against %s: %w", s.client.Endpoint(), err)
	}
	return p, nil
}

func (s *session) close() {
	s.client.Close()
	s.db.close()
}

func closeSessions(ss []*session) {
	for _, s := range ss {
		s.close()
	}
}

// useColor colours text for a terminal, unless NO_COLOR or --no-color.
func useColor(w io.Writer, noColor bool) bool {
	if noColor || os.Getenv("NO_COLOR") != "" || strings.EqualFold(os.Getenv("TERM"), "dumb") {
		return false
	}
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
