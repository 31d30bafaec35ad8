package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/render"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/spf13/cobra"
)

func init() {
	var output, only string
	var noColor bool
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply the repository to the cluster once and wait for every action",
		Long: "apply plans like plan, then carries out every action, showing progress as it goes,\n" +
			"and waits for every Proxmox task. It exits 1 if any action failed.\n" +
			"With a clusters list it applies every cluster in turn (or the one --cluster names);\n" +
			"a cluster that cannot be reached is reported and the others are still applied.\n" +
			"With --server (cli.server) it asks that daemon for a full sync instead and waits for its pass,\n" +
			"as proxmops sync does: the daemon stays the one writer.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), append(clusterKeys, "reconcile.prune", "cli.server")...)
	outputFlag(cmd, &output)
	cmd.Flags().BoolVar(&noColor, "no-color", false, "never colour the text output")
	cmd.Flags().StringVar(&only, "cluster", "", "with a clusters list: apply this cluster only (default: every cluster, in turn)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkOutput(output); err != nil {
			return err
		}
		ctx := cmd.Context()
		cfg, daemon, err := writerConfig(cmd, flags, true)
		if err != nil {
			return err
		}
		if daemon {
			return syncCommand(cmd, cfg, only, "", "", api.SyncOptions{Prune: cfg.Reconcile.Prune}, output, defaultSyncWait)
		}
		ss, err := sessionsOf(ctx, cfg, only)
		if err != nil {
			return err
		}
		defer closeSessions(ss)
		out := cmd.OutOrStdout()
		// Progress goes where a person looks: stdout for text, stderr when
		// stdout carries the JSON document.
		progressOut := out
		if output == "json" {
			progressOut = cmd.ErrOrStderr()
		}
		color := output == "text" && useColor(out, noColor)
		var docs []applyDoc
		var problems []string
		for i, s := range ss {
			if output == "text" {
				if i > 0 {
					fmt.Fprintln(out)
				}
				clusterHeader(out, ss, s)
			}
			doc, err := applyOne(ctx, s, out, progressOut, output, color)
			if err != nil {
				if s.name == "" {
					return err
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "cluster %s: %v\n", s.name, err)
				problems = append(problems, "cluster "+s.name+": "+err.Error())
				continue
			}
			docs = append(docs, doc)
			if doc.Failed > 0 {
				problems = append(problems, fmt.Sprintf("%s%d resource(s) failed or could not be planned", clusterPrefix(s), doc.Failed))
			}
		}
		if output == "json" {
			var v any = struct {
				Clusters []applyDoc `json:"clusters"`
			}{docs}
			if len(ss) == 1 && ss[0].name == "" && len(docs) == 1 {
				v = docs[0]
			}
			if err := writeJSONDoc(out, v); err != nil {
				return err
			}
		}
		if len(problems) > 0 {
			return &exitError{code: 1, msg: strings.Join(problems, "; ")}
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

func clusterPrefix(s *session) string {
	if s.name == "" {
		return ""
	}
	return "cluster " + s.name + ": "
}

// applyDoc is the JSON document of one cluster's apply.
type applyDoc struct {
	Cluster  string          `json:"cluster,omitempty"`
	Revision string          `json:"revision"`
	Plan     json.RawMessage `json:"plan"`
	Results  []engine.Result `json:"results"`
	Applied  int             `json:"applied"`
	Failed   int             `json:"failed"`
	Skipped  int             `json:"skipped"`
}

// applyOne plans and applies one cluster's session.
func applyOne(ctx context.Context, s *session, out, progressOut io.Writer, output string, color bool) (applyDoc, error) {
	p, err := s.plan(ctx)
	if err != nil {
		return applyDoc{}, err
	}
	if output == "text" {
		render.Plan(out, p, color)
		fmt.Fprintln(out)
	}
	rep := &engine.Report{Revision: p.Revision}
	if s.cfg.Reconcile.DryRun {
		fmt.Fprintln(progressOut, "reconcile.dryRun is set: nothing applied.")
	} else {
		// Transient failures (lock timeouts, lost answers) are re-planned
		// from a fresh read of the cluster, never retried blindly.
		rep, err = s.engine.Converge(ctx, s.desired, p, progressPrinter(progressOut, color), engine.ConvergeOptions{})
		if err != nil {
			return applyDoc{}, err
		}
		if output == "text" {
			fmt.Fprintf(out, "\nApply: %d applied, %d failed, %d skipped in %s.\n", rep.Applied, rep.Failed, rep.Skipped, rep.Duration.Round(1e7))
		}
		recordAdoptions(ctx, s, p, rep, progressOut)
	}
	doc := planDocOf(s, p)
	planDoc, err := json.Marshal(doc)
	if err != nil {
		return applyDoc{}, err
	}
	d := applyDoc{Cluster: s.name, Revision: p.Revision, Plan: planDoc, Results: rep.Results, Applied: rep.Applied, Failed: rep.Failed, Skipped: rep.Skipped}
	if d.Results == nil {
		d.Results = []engine.Result{}
	}
	return d, nil
}

// progressPrinter prints one line per action event; lines from concurrent
// actions never interleave.
func progressPrinter(w io.Writer, color bool) engine.Progress {
	var mu sync.Mutex
	return engine.ProgressFuncs{
		Started: func(a *engine.Action) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "… %s: %s started\n", a.Key(), a.Action)
		},
		Progress: func(a *engine.Action, ev engine.ProgressEvent) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(w, "  %s: %s\n", a.Key(), ev.Message)
		},
		Finished: func(a *engine.Action, r engine.Result) {
			mu.Lock()
			defer mu.Unlock()
			render.Result(w, a, r, color)
		},
	}
}

// recordAdoptions writes the adoptions the apply made for annotated
// manifests to the daemon's history, as the daemon and `proxmops adopt`
// do: `adopted`, with the revision and the OS user.
func recordAdoptions(ctx context.Context, s *session, p *engine.Plan, rep *engine.Report, warn io.Writer) {
	for _, r := range rep.Results {
		a := p.Find(r.Kind, r.Name)
		if a == nil || !a.Adopt || r.Status != vocab.StatusSynced {
			continue
		}
		err := func() error {
			st, err := s.db.open(ctx)
			if err != nil {
				return err
			}
			_, err = st.AddHistory(ctx, r.Kind, historyName(s, r.Name), api.HistoryEntry{Event: api.EventAdopted, Commit: p.Revision,
				Actor: cliActor(), Message: a.AdoptionMessage(p.Revision)})
			return err
		}()
		if err != nil {
			fmt.Fprintf(warn, "Warning: %s/%s adopted, but not recorded in the daemon's history: %v\n", r.Kind, r.Name, err)
		}
	}
}
