package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ProgressEvent is one step of a running action.
type ProgressEvent struct {
	Message string
	Task    string // UPID, when a Proxmox task runs
	Percent int    // -1 when unknown
}

// Progress follows Apply. Calls may come from several goroutines at once.
type Progress interface {
	ActionStarted(a *Action)
	ActionProgress(a *Action, ev ProgressEvent)
	ActionFinished(a *Action, r Result)
}

// ProgressFuncs adapts functions to Progress; nil members are skipped.
type ProgressFuncs struct {
	Started  func(a *Action)
	Progress func(a *Action, ev ProgressEvent)
	Finished func(a *Action, r Result)
}

// ActionStarted implements Progress.
func (f ProgressFuncs) ActionStarted(a *Action) {
	if f.Started != nil {
		f.Started(a)
	}
}

// ActionProgress implements Progress.
func (f ProgressFuncs) ActionProgress(a *Action, ev ProgressEvent) {
	if f.Progress != nil {
		f.Progress(a, ev)
	}
}

// ActionFinished implements Progress.
func (f ProgressFuncs) ActionFinished(a *Action, r Result) {
	if f.Finished != nil {
		f.Finished(a, r)
	}
}

// Result is the outcome of one applied action.
type Result struct {
	Kind     string        `json:"kind"`
	Name     string        `json:"name"`
	Action   vocab.Action  `json:"action"`
	Status   vocab.Status  `json:"status"` // Synced, Failed, OutOfSync (skipped)
	Error    string        `json:"error,omitempty"`
	Blocked  string        `json:"blockedBy,omitempty"`
	Duration time.Duration `json:"durationNs"`
	// Retry says a failure may pass by itself (a 5xx answer, a failed
	// task, a lock, a timeout, an unknown outcome, an unreachable node, a
	// guest that moved away): retried with backoff. A failure without it
	// is terminal (Proxmox refused a parameter or the token's privileges,
	// a conflict, a refusal the plan foresaw, a change Proxmox cannot
	// make): the same attempt would fail alike until something changes,
	// as controller-runtime's TerminalError.
	Retry bool  `json:"retry,omitempty"`
	Err   error `json:"-"`
	// Detail is what the action reports beyond its changes (a
	// provisioning run's summary and last output), for history.
	Detail string `json:"detail,omitempty"`
}

// Report is the outcome of Apply.
type Report struct {
	Revision string        `json:"revision"`
	Results  []Result      `json:"results"`
	Applied  int           `json:"applied"`
	Failed   int           `json:"failed"`
	Skipped  int           `json:"skipped"`
	Duration time.Duration `json:"durationNs"`
	// Passes is how many plan-and-apply passes Converge made (1 for Apply).
	Passes int `json:"passes"`
}

// stepFunc carries out an action.
type stepFunc func(ctx context.Context, x *execCtx) error

// chainStep makes step run after the action's own step, if any.
func chainStep(a *Action, step stepFunc) {
	prev := a.run
	a.run = func(ctx context.Context, x *execCtx) error {
		if prev != nil {
			if err := prev(ctx, x); err != nil {
				return err
			}
		}
		return step(ctx, x)
	}
}

// claim is what an action occupies while it runs.
type claim struct {
	nodes    []string
	storages []string
}

// execCtx is handed to a running action.
type execCtx struct {
	e    *Engine
	a    *Action
	pass *passState
	prog Progress
	// sdnApply is the key of the SDN action that applies the SDN
	// configuration in this Apply call (see sdnApplier).
	sdnApply string
	// notes become Result.Detail.
	notes []string
}

// note adds a line to the action's result detail.
func (x *execCtx) note(s string) { x.notes = append(x.notes, s) }

func (x *execCtx) progress(msg, task string, pct int) {
	if x.prog != nil {
		x.prog.ActionProgress(x.a, ProgressEvent{Message: msg, Task: task, Percent: pct})
	}
}

// task starts an operation with start and waits for its task. A lock
// timeout (another operation held the guest) is a definite failure, so the
// operation is started again a few times before giving up: Proxmox's locks
// are short-lived.
func (x *execCtx) task(ctx context.Context, msg string, start func() (string, error)) error {
	backoff := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		upid, err := start()
		err = x.wait(ctx, upid, msg, err)
		if err == nil || !pve.IsLockTimeout(err) || pve.IsUnknownOutcome(err) || attempt >= lockRetries {
			return err
		}
		x.progress(fmt.Sprintf("%s: lock busy, retrying (%d/%d)", msg, attempt, lockRetries-1), "", -1)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(backoff):
		}
		backoff *= 2
	}
}

// lockRetries is how often an operation is tried when the guest is locked.
const lockRetries = 4

// wait waits for a task, reporting it as progress.
func (x *execCtx) wait(ctx context.Context, upid, msg string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	x.progress(msg, upid, -1)
	observe := taskPercent(ctx, x.e.client, upid, func(pct int) { x.progress(msg, upid, pct) })
	if _, err := x.e.client.WaitTask(ctx, upid, observe); err != nil {
		return fmt.Errorf("%s: %w", msg, err)
	}
	return nil
}

// terminalError is a failure of the engine's own that a retry cannot
// change (changes Proxmox refuses to make, such as a shrink).
type terminalError struct{ msg string }

func (e *terminalError) Error() string { return e.msg }

// retryable says whether a failed action may succeed when tried again
// unchanged (see Result.Retry).
func retryable(err error) bool {
	var te *terminalError
	return !pve.IsTerminal(err) && !errors.As(err, &te)
}

// Apply carries out the runnable actions of p, in dependency order, under
// the engine's concurrency limits, waiting for every task. An action whose
// dependency failed is not run and reported blocked. The returned error is
// only for a plan that cannot be applied at all; failed actions are in the
// report.
func (e *Engine) Apply(ctx context.Context, p *Plan, prog Progress) (*Report, error) {
	start := time.Now()
	rep := &Report{Revision: p.Revision, Passes: 1}
	if p.pass == nil {
		return nil, errors.New("engine: plan was not made by this engine")
	}
	type node struct {
		a    *Action
		done chan struct{}
		res  Result
	}
	nodes := map[string]*node{}
	var order []*node
	for _, a := range p.Actions {
		if a.Action == vocab.ActionNone {
			continue
		}
		n := &node{a: a, done: make(chan struct{})}
		nodes[a.Key()] = n
		order = append(order, n)
	}
	sdnApply := sdnApplier(p)
	for _, n := range order {
		go func(n *node) {
			defer close(n.done)
			a := n.a
			n.res = Result{Kind: a.Kind, Name: a.Name, Action: a.Action}
			finish := func() {
				if prog != nil {
					prog.ActionFinished(a, n.res)
				}
			}
			switch {
			case a.Sync != vocab.SyncAuto:
				n.res.Status, n.res.Error = vocab.StatusOutOfSync, fmt.Sprintf("not applied: sync policy is %s", a.Sync)
				finish()
				return
			case a.BlockedBy != "":
				n.res.Status, n.res.Blocked, n.res.Error = vocab.StatusFailed, a.BlockedBy, a.Reason
				finish()
				return
			case a.Waits():
				n.res.Status, n.res.Error = vocab.StatusOutOfSync, a.Waiting.Text()
				finish()
				return
			case a.Refused():
				n.res.Status, n.res.Error = vocab.StatusFailed, a.Reason
				finish()
				return
			}
			for _, k := range a.DependsOn {
				dep := nodes[k]
				if dep == nil {
					continue
				}
				select {
				case <-dep.done:
				case <-ctx.Done():
					n.res.Status, n.res.Error = vocab.StatusFailed, ctx.Err().Error()
					finish()
					return
				}
				if dep.res.Status != vocab.StatusSynced {
					n.res.Status, n.res.Blocked = vocab.StatusFailed, k
					n.res.Error = fmt.Sprintf("blocked: %s failed: %s", k, dep.res.Error)
					finish()
					return
				}
			}
			release, err := e.limiter.Acquire(ctx, dispatch.Claim{Nodes: a.claim.nodes, Storages: a.claim.storages})
			if err != nil {
				n.res.Status, n.res.Error = vocab.StatusFailed, err.Error()
				finish()
				return
			}
			defer release()
			if prog != nil {
				prog.ActionStarted(a)
			}
			t0 := time.Now()
			x := &execCtx{e: e, a: a, pass: p.pass, prog: prog, sdnApply: sdnApply}
			if a.adoptRecord != nil {
				err = a.adoptRecord(ctx, x)
			}
			if err == nil {
				err = a.run(ctx, x)
			}
			n.res.Duration = time.Since(t0)
			n.res.Detail = strings.Join(x.notes, "\n")
			if err != nil {
				n.res.Status, n.res.Error, n.res.Err = vocab.StatusFailed, err.Error(), err
				n.res.Retry = retryable(err)
				if moved := e.movedAway(ctx, a, err); moved != "" {
					n.res.Error, n.res.Retry = n.res.Error+"; "+moved, true
				}
			} else {
				n.res.Status = vocab.StatusSynced
			}
			e.log.Debug("action finished", "resource", a.Key(), "action", a.Action, "status", n.res.Status, "error", n.res.Error)
			finish()
		}(n)
	}
	for _, n := range order {
		<-n.done
		rep.Results = append(rep.Results, n.res)
		switch {
		case n.res.Status == vocab.StatusSynced:
			rep.Applied++
		case n.res.Status == vocab.StatusFailed:
			rep.Failed++
		default:
			rep.Skipped++
		}
	}
	rep.Duration = time.Since(start)
	return rep, nil
}
