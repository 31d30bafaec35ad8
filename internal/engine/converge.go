package engine

import (
	"context"
	"fmt"
	"time"
)

// ConvergeOptions bound Converge.
type ConvergeOptions struct {
	// Passes is the most plan-and-apply passes (default 3).
	Passes int
	// Wait is the pause before a further pass (default 2s, doubled each
	// time), which lets tasks started by lost requests finish.
	Wait time.Duration
}

// Converge applies first, then, while some action failed transiently (a lock
// timeout, a request whose outcome is unknown, an unreachable node) or a
// resource is still in progress on the cluster, re-reads the cluster, plans
// again and applies what is left: never repeating a request blindly. The
// report holds the last result per resource; a resource still in progress
// after the last pass is reported failed.
func (e *Engine) Converge(ctx context.Context, d *Desired, first *Plan, prog Progress, o ConvergeOptions) (*Report, error) {
	if o.Passes <= 0 {
		o.Passes = 3
	}
	if o.Wait <= 0 {
		o.Wait = 2 * time.Second
	}
	start := time.Now()
	final := map[string]Result{}
	var order []string
	record := func(r Result) {
		k := r.Kind + "/" + r.Name
		if _, ok := final[k]; !ok {
			order = append(order, k)
		}
		final[k] = r
	}
	p := first
	wait := o.Wait
	for pass := 1; ; pass++ {
		rep, err := e.Apply(ctx, p, prog)
		if err != nil {
			return nil, err
		}
		again := false
		for _, r := range rep.Results {
			record(r)
			if r.Status == StatusFailed && r.Retry {
				again = true
			}
		}
		for _, a := range p.Actions {
			if a.Status == StatusProgressing {
				again = true
				record(Result{Kind: a.Kind, Name: a.Name, Action: a.Action, Status: StatusFailed, Retry: true,
					Error: "still in progress on the cluster: " + a.Reason})
			}
		}
		if !again || pass >= o.Passes {
			break
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
		next, err := e.Plan(ctx, d, p.Revision)
		if err != nil {
			return nil, fmt.Errorf("re-planning after pass %d: %w", pass, err)
		}
		// Resources now in sync drop their earlier failure.
		for _, a := range next.Actions {
			if r, ok := final[a.Key()]; ok && a.Status == StatusSynced {
				r.Status, r.Error, r.Err, r.Retry = StatusSynced, "", nil, false
				final[a.Key()] = r
			}
		}
		p = next
	}
	rep := &Report{Revision: first.Revision, Duration: time.Since(start)}
	for _, k := range order {
		r := final[k]
		rep.Results = append(rep.Results, r)
		switch r.Status {
		case StatusSynced:
			rep.Applied++
		case StatusFailed:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	return rep, nil
}
