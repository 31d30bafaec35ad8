package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/spf13/cobra"
)

func init() {
	var output string
	var noColor bool
	cmd := &cobra.Command{
		Use:   "apply",
		Short: "Apply the repository to the cluster once and wait for every action",
		Long: "apply plans like plan, then carries out every action, showing progress as it goes,\n" +
			"and waits for every Proxmox task. It exits 1 if any action failed.",
		Args: cobra.NoArgs,
	}
	flags := config.BindFlags(cmd.Flags(), append(clusterKeys, "reconcile.prune")...)
	cmd.Flags().StringVarP(&output, "output", "o", "text", "output format: text or json")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "never colour the text output")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if output != "text" && output != "json" {
			return fmt.Errorf("--output must be text or json, not %q", output)
		}
		ctx := cmd.Context()
		s, err := openSession(ctx, flags, cmd.ErrOrStderr())
		if err != nil {
			return err
		}
		defer s.close()
		p, err := s.plan(ctx)
		if err != nil {
			return err
		}
		out := cmd.OutOrStdout()
		// Progress goes where a person looks: stdout for text, stderr when
		// stdout carries the JSON document.
		progressOut := out
		if output == "json" {
			progressOut = cmd.ErrOrStderr()
		}
		color := output == "text" && useColor(out, noColor)
		if output == "text" {
			engine.WritePlanText(out, p, color)
			fmt.Fprintln(out)
		}
		if s.cfg.Reconcile.DryRun {
			fmt.Fprintln(progressOut, "reconcile.dryRun is set: nothing applied.")
			return writeApplyJSON(out, output, p, &engine.Report{Revision: p.Revision})
		}
		// Transient failures (lock timeouts, lost answers) are re-planned
		// from a fresh read of the cluster, never retried blindly.
		rep, err := s.engine.Converge(ctx, s.desired, p, progressPrinter(progressOut, color), engine.ConvergeOptions{})
		if err != nil {
			return err
		}
		if output == "text" {
			fmt.Fprintf(out, "\nApply: %d applied, %d failed, %d skipped in %s.\n", rep.Applied, rep.Failed, rep.Skipped, rep.Duration.Round(1e7))
		}
		if err := writeApplyJSON(out, output, p, rep); err != nil {
			return err
		}
		if rep.Failed > 0 {
			return &exitError{code: 1, msg: fmt.Sprintf("%d resource(s) failed or could not be planned", rep.Failed)}
		}
		return nil
	}
	rootCmd.AddCommand(cmd)
}

func writeApplyJSON(out io.Writer, output string, p *engine.Plan, rep *engine.Report) error {
	if output != "json" {
		return nil
	}
	planDoc, err := p.JSON()
	if err != nil {
		return err
	}
	doc := struct {
		Revision string          `json:"revision"`
		Plan     json.RawMessage `json:"plan"`
		Results  []engine.Result `json:"results"`
		Applied  int             `json:"applied"`
		Failed   int             `json:"failed"`
		Skipped  int             `json:"skipped"`
	}{p.Revision, planDoc, rep.Results, rep.Applied, rep.Failed, rep.Skipped}
	if doc.Results == nil {
		doc.Results = []engine.Result{}
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(out, string(b))
	return err
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
			engine.WriteResultLine(w, a, r, color)
		},
	}
}
