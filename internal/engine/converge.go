package engine

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proxmops/proxmops/internal/vocab"
)

// ConvergeOptions bound Converge.
type ConvergeOptions struct {
	// Passes is the most plan-and-apply passes (default 20).
	Passes int
	// Wait is the pause before a further pass (default 2s, doubled each
	// time up to MaxWait, default 8s), which lets tasks started by lost
	// requests finish.
	Wait, MaxWait time.Duration
}

// Converge applies first, then, while some action failed or a resource is
// still in progress on the cluster, re-reads the cluster, plans again and
// applies what is left: never repeating a request blindly, since each pass
// acts on a fresh read. It stops when everything is done, after Passes
// passes, or when four passes in a row changed nothing and failed (or
// stayed in progress) exactly alike: a lasting refusal, a node that stays
// unreachable, a guest a crash left locked; a passing fault, such as a
// lost answer, a lock timeout or a stray 500, does not repeat like that.
// A refusal the plan foresaw (no request sent) is planned again only
// after a pass that changed something. The report holds
// the last result per resource; a resource still in progress after the
// last pass is reported failed, and so is one the last plan could not
// plan (Failed or Unknown with no action; sync disabled is a choice, not
// a failure).
func (e *Engine) Converge(ctx context.Context, d *Desired, first *Plan, prog Progress, o ConvergeOptions) (*Report, error) {
	if o.Passes <= 0 {
		o.Passes = 20
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Second
	}
	if o.MaxWait <= 0 {
		o.MaxWait = 8 * time.Second
	}
	start := time.Now()
	final := map[string]Result{}
	var order []string
	record := func(r Result) {
		k := vocab.Key(r.Kind, r.Name)
		if _, ok := final[k]; !ok {
			order = append(order, k)
		}
		final[k] = r
	}
	p := first
	wait := o.Wait
	passes := 0
	var lastFailures map[string]string
	stale := 0
	for pass := 1; ; pass++ {
		passes = pass
		rep, err := e.Apply(ctx, p, prog)
		if err != nil {
			return nil, err
		}
		again, progressed, refused := false, false, false
		failures := map[string]string{}
		for _, r := range rep.Results {
			record(r)
			switch {
			case r.Status == vocab.StatusFailed && foreseen(p, r):
				refused = true
				failures[vocab.Key(r.Kind, r.Name)] = r.Error
			case r.Status == vocab.StatusFailed:
				again = true
				failures[vocab.Key(r.Kind, r.Name)] = r.Error
			case r.Status == vocab.StatusSynced && r.Action != vocab.ActionNone:
				progressed = true
			}
		}
		// A refusal the plan foresaw lifts only if this pass changed
		// something it depends on: without progress, planning again would
		// only repeat it; so does a wait on a dependency (waits.go).
		waiting := slices.ContainsFunc(p.Actions, func(a *Action) bool { return a.Waits() && a.Sync == vocab.SyncAuto })
		again = again || (refused || waiting) && progressed
		for _, a := range p.Actions {
			if a.Status == vocab.StatusProgressing {
				// Still running on the cluster: looked at again, but a guest
				// a crashed node left locked stays so, and ends the passes
				// like any refusal that repeats.
				again = true
				failures[a.Key()] = a.Reason
				record(Result{Kind: a.Kind, Name: a.Name, Action: a.Action, Status: vocab.StatusFailed, Retry: true,
					Error: "still in progress on the cluster: " + a.Reason})
			}
		}
		e.log.Debug("converge: pass done", "pass", pass, "failures", len(failures), "progressed", progressed)
		if !progressed && sameFailures(failures, lastFailures) {
			stale++
		} else {
			stale = 0
		}
		if stale >= 3 {
			break // the same refusals four times: another pass would repeat them
		}
		lastFailures = failures
		if !again || pass >= o.Passes {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, o.MaxWait)
		next, err := e.replan(ctx, d, p.Revision, wait, o.MaxWait)
		if err != nil {
			return nil, fmt.Errorf("re-planning after pass %d: %w", pass, err)
		}
		// Resources now in sync drop their earlier failure.
		for _, a := range next.Actions {
			if r, ok := final[a.Key()]; ok && a.Status == vocab.StatusSynced {
				r.Status, r.Error, r.Err, r.Retry = vocab.StatusSynced, "", nil, false
				final[a.Key()] = r
			}
		}
		p = next
	}
	for _, a := range p.Actions {
		if r, ok := unplanned(a); ok {
			if _, done := final[a.Key()]; !done {
				record(r)
				if prog != nil {
					prog.ActionFinished(a, r)
				}
			}
		}
	}
	rep := &Report{Revision: first.Revision, Duration: time.Since(start), Passes: passes}
	for _, k := range order {
		r := final[k]
		rep.Results = append(rep.Results, r)
		switch r.Status {
		case vocab.StatusSynced:
			rep.Applied++
		case vocab.StatusFailed:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	return rep, nil
}

// sameFailures reports whether two passes failed the same resources with
// the same errors.
func sameFailures(a, b map[string]string) bool {
	if len(a) != len(b) || b == nil {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// unplanned is the failed result of a resource with no action that the
// plan could not evaluate or plan.
func unplanned(a *Action) (Result, bool) {
	if a.Action != vocab.ActionNone || a.Sync == vocab.SyncDisabled {
		return Result{}, false
	}
	r := Result{Kind: a.Kind, Name: a.Name, Action: a.Action, Status: vocab.StatusFailed}
	switch StatusOf(a) {
	case vocab.StatusFailed:
		r.Error = "cannot be planned: " + a.Reason
	case vocab.StatusUnknown:
		r.Error = "not evaluated: " + a.Reason
	default:
		return Result{}, false
	}
	return r, true
}

// foreseen reports a failure the plan foresaw (a refusal found in the
// cluster's state, no request sent), not one of a dependency or a run.
func foreseen(p *Plan, r Result) bool {
	a := p.Find(r.Kind, r.Name)
	return a != nil && a.Refused() && a.BlockedBy == "" && r.Blocked == ""
}

// replanAttempts is how often Converge reads the cluster again when a
// re-read between passes fails: the actions already sent stand, so giving
// up on one failed read (an unlucky run of 5xx past the client's own GET
// retries) would leave the cluster half done for no reason.
const replanAttempts = 3

// replan plans again, waiting (doubling up to maxWait) between failed reads.
func (e *Engine) replan(ctx context.Context, d *Desired, revision string, wait, maxWait time.Duration) (*Plan, error) {
	for attempt := 1; ; attempt++ {
		p, err := e.Plan(ctx, d, revision)
		if err == nil || attempt >= replanAttempts || ctx.Err() != nil {
			return p, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait = min(2*wait, maxWait)
	}
}
