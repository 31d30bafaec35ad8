package controller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// submitLocked hands one action to the dispatcher (caller holds mu). It
// returns false when the resource already has work queued or running, or
// when the controller is stopping.
func (c *Controller) submitLocked(ctx context.Context, eng *engine.Engine, plan *engine.Plan, a *engine.Action, commit string, by api.Actor) bool {
	if c.stopping.Load() {
		return false
	}
	key := a.Key()
	if a.Sync == vocab.SyncManual {
		a.Sync = vocab.SyncAuto // a person asked for this one resource (sync one)
	}
	sub := plan.Only(key)
	obs := &observer{c: c, commit: commit}
	ok := c.dispatcher.Submit(c.workCtx, dispatch.Job{
		Key: key,
		Run: func(jctx context.Context) error {
			_, err := eng.Apply(jctx, sub, obs)
			return err
		},
		Done: func(err error) {
			// What proxmops changed is read again on the next pass.
			c.currentRuntime().reads.Refresh(a.VMID)
			switch {
			case err == nil || obs.finished.Load():
			case obs.neverStarted():
				c.dropQueued(key)
			default:
				c.finish(key, a.Action, commit, nil, err.Error(), failedAttempt{commit: commit, a: a}, 0, "")
			}
			c.afterAction()
		},
	})
	if !ok {
		return false
	}
	c.markInflightLocked(ctx, key, a.Action, commit, by)
	c.log.Info("action queued", "resource", key, "action", a.Action.String(), "by", by.String())
	return true
}

func (c *Controller) markInflightLocked(ctx context.Context, key string, action vocab.Action, commit string, by api.Actor) {
	c.inflight[key] = inflightAction{Action: vocab.Action(action), Commit: commit, Started: c.clock.Now().UTC(), Queued: true, Actor: by}
	c.saveInflightLocked(context.WithoutCancel(ctx))
}

// markStarted records that a queued action got its slot and runs: from
// now on a stop interrupts it.
func (c *Controller) markStarted(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	in, ok := c.inflight[key]
	if !ok {
		return
	}
	in.Queued, in.Started = false, c.clock.Now().UTC()
	c.inflight[key] = in
	c.saveInflightLocked(context.Background())
}

// observer follows one submitted action through the engine's callbacks.
type observer struct {
	c        *Controller
	commit   string
	started  atomic.Bool
	finished atomic.Bool
}

func (o *observer) ActionStarted(a *engine.Action) {
	o.started.Store(true)
	o.c.markStarted(a.Key())
	o.c.progress(a.Key(), &api.Progress{Message: a.Action.String() + " started"})
}

// neverStarted reports an action the stop took out of the queue before it
// started: it changed nothing and is no failure.
func (o *observer) neverStarted() bool {
	return !o.started.Load() && o.c.stopping.Load()
}

func (o *observer) ActionProgress(a *engine.Action, ev engine.ProgressEvent) {
	p := &api.Progress{Task: ev.Task, Message: ev.Message}
	if ev.Percent >= 0 {
		pct := ev.Percent
		p.Percent = &pct
	}
	o.c.progress(a.Key(), p)
}

func (o *observer) ActionFinished(a *engine.Action, r engine.Result) {
	o.finished.Store(true)
	if r.Status != vocab.StatusSynced && o.neverStarted() {
		o.c.dropQueued(a.Key())
		return
	}
	if r.Status == vocab.StatusSynced {
		if a.Adopt {
			o.c.adopted(a, o.commit)
		}
		o.c.finish(a.Key(), a.Action, o.commit, a.Changes, "", failedAttempt{}, r.Duration, r.Detail)
		return
	}
	msg := r.Error
	if msg == "" {
		msg = "not applied"
	}
	var te *pve.TaskError
	if errors.As(r.Err, &te) {
		o.c.m.PVEErrors.WithLabelValues("task", o.c.Name()).Inc()
	}
	o.c.finish(a.Key(), a.Action, o.commit, a.Changes, msg, failedAttempt{commit: o.commit, a: a, terminal: !r.Retry}, r.Duration, "")
}

// attemptOf names what an action tried: the commit, the action and its
// changes. A terminal failure is tried again without waiting once the
// plan's attempt for the resource differs (a new commit, a changed
// manifest, the cluster changed by hand).
func attemptOf(commit string, a *engine.Action) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", commit, a.Action, a.Key())
	for _, ch := range a.Changes {
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s", ch.Field, ch.From, ch.To)
	}
	return hex.EncodeToString(h.Sum(nil)[:12])
}

// progress publishes a running action's progress.
func (c *Controller) progress(key string, p *api.Progress) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.resources[key]
	if r == nil {
		return
	}
	if p.Task != "" {
		r.lastTask = p.Task
	}
	sum := r.sum
	sum.Status, sum.Health, sum.Progress = vocab.StatusProgressing, vocab.HealthProgressing, p
	c.setSummaryLocked(r, sum)
}

// failedAttempt is what a failed action tried at its commit (nil when
// unknown) and whether a retry could change its outcome.
type failedAttempt struct {
	commit   string
	a        *engine.Action
	terminal bool
}

// finish records an action's outcome: history, metrics, status, and a
// re-scan that confirms it (or picks up what waited for it). errMsg is ""
// on success; at is the attempt that failed; detail is what the action
// reported beyond its changes.
func (c *Controller) finish(key string, action vocab.Action, commit string, changes []vocab.Change, errMsg string, at failedAttempt, dur time.Duration, detail string) {
	kind, _ := splitKey(key)
	result := "ok"
	if errMsg != "" {
		result = "failed"
	}
	c.m.Actions.WithLabelValues(kind, action.String(), result, c.Name()).Inc()
	ctx := context.Background()
	interval := c.currentRuntime().cfg.Reconcile.Interval

	c.mu.Lock()
	rec := c.records[key]
	r := c.resources[key]
	by := c.inflight[key].actor()
	var sum api.ResourceSummary
	if r != nil {
		sum = r.sum
	}
	sum.Progress = nil
	var entry *api.HistoryEntry // the outcome's history entry, if any
	if errMsg == "" {
		ev := api.EventApplied
		switch action {
		case vocab.ActionCreate:
			ev = api.EventCreated
		case vocab.ActionDelete:
			ev = api.EventDeleted
		}
		msg := fmt.Sprintf("%s done in %s", action, dur.Round(time.Millisecond))
		if action != vocab.ActionDelete {
			msg += appliedChanges(changes)
		}
		if detail != "" {
			msg += "; " + detail
		}
		entry = &api.HistoryEntry{Event: ev, Commit: commit, Message: msg, Actor: by}
		rec = record{Status: vocab.StatusSynced, Event: ev, Node: rec.Node}
		// Done: nothing is planned until the next scan says otherwise.
		sum.Status, sum.Health, sum.Action = vocab.StatusSynced, vocab.HealthHealthy, vocab.ActionNone
		sum.Changes, sum.NeedsReboot = []vocab.Change{}, false
		sum.Reason = action.String() + " done; confirmed by the next scan"
		c.log.Info("action done", "resource", key, "action", action.String(), "commit", commit, "duration", dur.String(), "by", by.String())
	} else {
		msg := fmt.Sprintf("%s failed: %s", action, errMsg)
		interrupted := c.stopping.Load() && c.workCtx.Err() != nil
		if interrupted {
			msg = fmt.Sprintf("%s interrupted: the daemon stopped while it ran; the next start re-reads the cluster and converges", action)
		}
		rec.Unfinished, rec.Interrupted = action, interrupted
		if at.a != nil && rec.Failures > 0 && !rec.holds(at.commit, at.a) {
			rec.Failures = 0 // a new attempt: its backoff starts over
		}
		rec.Failures++
		rec.RetryAt = c.clock.Now().Add(retryDelay(interval, rec.Failures))
		rec.Terminal, rec.Attempt, rec.AttemptCommit = "", "", ""
		switch {
		case at.a != nil && at.terminal:
			rec.Terminal = attemptOf(at.commit, at.a)
			rec.RetryAt = c.clock.Now().Add(terminalRetryDelay(interval))
		case at.a != nil:
			rec.Attempt, rec.AttemptCommit = attemptOf("", at.a), at.commit
		}
		if msg != rec.Failure {
			entry = &api.HistoryEntry{Event: api.EventFailed, Commit: commit, Message: msg, Actor: by}
			rec.Failure, rec.Event = msg, api.EventFailed
		}
		rec.Status = vocab.StatusFailed
		sum.Status, sum.Health, sum.Reason = vocab.StatusFailed, vocab.HealthDegraded, msg
		c.log.Warn("action failed", "resource", key, "action", action.String(), "commit", commit, "err", errMsg, "attempt", rec.Failures, "by", by.String())
	}
	c.recordOutcomeLocked(ctx, key, entry, rec)
	c.outcomes++
	c.endedAt[key] = c.outcomes
	if r != nil {
		c.setSummaryLocked(r, sum)
	}
	c.mu.Unlock()
	c.saveState(ctx)
	c.mu.Lock()
	c.forgetInflightLocked(ctx, key)
	c.mu.Unlock()
}

// dropQueued forgets an action the daemon's stop took out of the queue
// before it started: no history, no failure; the next pass plans it again.
func (c *Controller) dropQueued(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.inflight, key)
	c.saveInflightLocked(context.Background())
	if r := c.resources[key]; r != nil && r.sum.Status == vocab.StatusProgressing {
		sum := r.sum
		sum.Status, sum.Progress = vocab.StatusOutOfSync, nil
		sum.Health = vocab.HealthUnknown
		if r.action != nil {
			sum.Health = engine.HealthOf(r.action)
		}
		sum.Reason = joinReason(sum.Reason, "not started: the daemon stopped first")
		c.setSummaryLocked(r, sum)
	}
	c.log.Info("a queued action was dropped by the stop before it started", "resource", key)
}

// afterAction asks for a re-scan once a job has left the dispatcher: it
// confirms the outcome and picks up actions that waited for this one.
func (c *Controller) afterAction() {
	if !c.stopping.Load() {
		c.askRescan()
	}
}

// retryDelay is how long a failed action waits before it is tried again
// automatically: half an interval first (so the next interval pass
// retries, but not the re-scan right after the failure), doubling up to
// 15 minutes or one interval, whichever is longer.
func retryDelay(interval time.Duration, failures int) time.Duration {
	if interval <= 0 {
		interval = time.Minute
	}
	d := interval / 2
	limit := max(15*time.Minute, interval)
	for i := 1; i < failures && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// terminalRetryDelay is how long a terminal failure waits before it is
// tried again unchanged: the slow interval of a refusal that something
// else (a commit, a manifest, the cluster, the token) has to lift.
func terminalRetryDelay(interval time.Duration) time.Duration {
	return max(time.Hour, interval)
}

// appliedChanges tells what an action that ended well changed, apart from
// what the plan only listed (vocab.Change.Held): those stay as they are on
// the cluster, and the entry says so rather than claim them applied.
func appliedChanges(changes []vocab.Change) string {
	var applied, held []vocab.Change
	for _, ch := range changes {
		if ch.Held() {
			held = append(held, ch)
		} else {
			applied = append(applied, ch)
		}
	}
	msg := ""
	if len(applied) > 0 {
		msg = ": " + changeList(applied)
	}
	if len(held) > 0 {
		msg += "; left as they are on the cluster: " + changeList(held)
	}
	return msg
}

func changeList(changes []vocab.Change) string {
	parts := make([]string, 0, len(changes))
	for _, ch := range changes {
		parts = append(parts, ch.String())
	}
	return strings.Join(parts, ", ")
}

// adopted records that an action took ownership of a guest proxmops did
// not make, before its outcome is recorded as any other.
// The user is the author of the commit that annotated it.
func (c *Controller) adopted(a *engine.Action, commit string) {
	kind, name := splitKey(a.Key())
	var author string
	if ds := c.currentDesired(); ds != nil && ds.commit == commit {
		author = ds.author
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	by := &api.Actor{Kind: api.ActorCommit, Name: author}
	if author == "" {
		by = &api.PassActor
	}
	c.addEntryLocked(context.Background(), kind, name, api.HistoryEntry{Event: api.EventAdopted, Commit: commit, Actor: by,
		Message: a.AdoptionMessage(commit)})
}
