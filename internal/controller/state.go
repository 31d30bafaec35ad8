package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Keys of the controller's state in the store.
const (
	stateRecords  = "controller/records"
	stateInflight = "controller/inflight"
)

// record is what the controller remembers of a resource across restarts,
// so history is written on transitions only, not again after a restart.
type record struct {
	Status vocab.Status     `json:"status"`
	Event  api.HistoryEvent `json:"event,omitempty"`
	// Message of the last failure recorded, so a retry failing the same
	// way is not written again.
	Failure string `json:"failure,omitempty"`
	// Failures counts consecutive failed attempts (for the retry backoff);
	// RetryAt is when the next automatic attempt may start.
	Failures int       `json:"failures,omitempty"`
	RetryAt  time.Time `json:"retryAt,omitzero"`
	// Terminal names the attempt (attemptOf) whose failure a retry could
	// not change; a pass whose plan attempts something else retries at
	// once, RetryAt (a slow interval) otherwise.
	Terminal string `json:"terminal,omitempty"`
	// Attempt (attemptOf) and AttemptCommit name a retryable failure's
	// attempt: its backoff holds every pass of that commit (a partly
	// applied action plans other changes, and must not run again at once:
	// provisioning commands would), and of a later commit that plans the
	// same; a commit that changes what is planned is tried at once.
	Attempt       string `json:"attempt,omitempty"`
	AttemptCommit string `json:"attemptCommit,omitempty"`
	// Unfinished is the last action that started and did not end in a
	// success: cut by the daemon's stop (Interrupted) or failed. Its task
	// may have gone on in the cluster, so the passes after it say in the
	// history what became of it: a create whose guest turns up reads
	// "created", a delete whose guest is gone "deleted" (never a bare
	// "synced", or nothing at all).
	Unfinished  vocab.Action `json:"unfinished,omitempty"`
	Interrupted bool         `json:"interrupted,omitempty"`
	// Node is the node the guest was on at the last pass, so a move (by
	// HA or a migration) is written to the history once.
	Node string `json:"node,omitempty"`
	// Degraded: a degraded notification went out and the resource has
	// not been Healthy since (noteHealthLocked).
	Degraded bool `json:"degraded,omitempty"`
}

// inflightAction is an action handed to the dispatcher and not finished.
// It is persisted so that a daemon killed mid-apply records it as
// interrupted on its next start: only if it had started (Queued false).
// An action still waiting for a slot changed nothing; the next start
// plans it again without a word in the history.
type inflightAction struct {
	Action vocab.Action `json:"action"`
	Commit string       `json:"commit"`
	// Started is when it was queued, then when it started.
	Started time.Time `json:"started"`
	// Queued: waiting for a slot, not started (absent in records of
	// older versions, which counted as started).
	Queued bool `json:"queued,omitempty"`
	// Done: the action ended; Outcome (nil when it adds nothing to the
	// history, a failure repeating itself) and Record are what finish
	// writes next. A daemon killed before it dropped this entry writes
	// what did not land on its next start, not "interrupted".
	Done    bool              `json:"done,omitempty"`
	Outcome *api.HistoryEntry `json:"outcome,omitempty"`
	Record  *record           `json:"record,omitempty"`
	// Actor started it (the pass, a user, a token, a webhook).
	Actor api.Actor `json:"actor,omitzero"`
}

// recordOutcomeLocked records an action's end in three steps a kill may
// cut anywhere: the outcome in the in-flight entry, then the history, then
// the record; forgetInflightLocked drops the entry once the records are
// saved (caller holds mu).
func (c *Controller) recordOutcomeLocked(ctx context.Context, key string, entry *api.HistoryEntry, rec record) {
	if entry != nil {
		entry.Time = c.clock.Now()
	}
	if in, ok := c.inflight[key]; ok {
		in.Done, in.Outcome, in.Record = true, entry, &rec
		c.inflight[key] = in
		c.saveInflightLocked(ctx)
	}
	if entry != nil {
		kind, name := splitKey(key)
		c.addEntryLocked(ctx, kind, name, *entry)
	}
	c.records[key] = rec
	c.dirty = true
}

// forgetInflightLocked drops the in-flight entry of an action whose end is
// recorded and saved (caller holds mu).
func (c *Controller) forgetInflightLocked(ctx context.Context, key string) {
	if in, ok := c.inflight[key]; ok && in.Done {
		delete(c.inflight, key)
		c.saveInflightLocked(ctx)
	}
}

// addUnlessLastLocked writes a history entry unless it is the resource's
// last one already: what a start writes for the previous run is written
// once even if a kill cuts that start short.
func (c *Controller) addUnlessLastLocked(ctx context.Context, key string, e api.HistoryEntry) {
	kind, name := splitKey(key)
	h, err := c.st.History(ctx, kind, c.historyName(name), 1)
	if err != nil {
		c.log.Error("reading history failed", "resource", key, "err", err)
		return
	}
	if len(h) == 1 && h[0].Event == e.Event && h[0].Message == e.Message && h[0].Commit == e.Commit {
		return
	}
	c.addEntryLocked(ctx, kind, name, e)
}

// recoverDoneLocked finishes the recording of an action that ended just
// before a kill: the history entry if it is not the last one yet, and the
// record (caller holds mu).
func (c *Controller) recoverDoneLocked(ctx context.Context, key string, in inflightAction) {
	if in.Outcome != nil {
		c.addUnlessLastLocked(ctx, key, *in.Outcome)
	}
	if in.Record != nil {
		c.records[key] = *in.Record
		c.dirty = true
	}
	c.log.Info("an action ended just before the stop; its outcome is recorded now", "resource", key, "action", in.Action.String())
}

func (c *Controller) loadState(ctx context.Context) error {
	if err := readState(ctx, c, stateRecords, "controller state unreadable; starting afresh", &c.records, map[string]record{}); err != nil {
		return err
	}
	return readState(ctx, c, stateInflight, "controller in-flight state unreadable", &c.inflight, map[string]inflightAction{})
}

// readState decodes the JSON state under key into v, if there is one; an
// unreadable one is logged as unreadable and v starts afresh.
func readState[T any](ctx context.Context, c *Controller, key, unreadable string, v *T, afresh T) error {
	b, ok, err := c.st.State(ctx, c.stateKey(key))
	if err != nil {
		return fmt.Errorf("controller state: %w", err)
	}
	if ok {
		if err := json.Unmarshal(b, v); err != nil {
			c.log.Warn(unreadable, "err", err)
			*v = afresh
		}
	}
	return nil
}

// saveState writes the records when they changed.
func (c *Controller) saveState(ctx context.Context) {
	if c.fenced.Load() {
		return
	}
	c.mu.Lock()
	if !c.dirty {
		c.mu.Unlock()
		return
	}
	b, err := json.Marshal(c.records)
	c.dirty = false
	c.mu.Unlock()
	c.putRecords(ctx, b, err)
}

// putRecords writes the marshalled records (err: the marshalling's) and
// logs a failure; the caller decides whether dirty clears.
func (c *Controller) putRecords(ctx context.Context, b []byte, err error) error {
	if err == nil {
		err = c.st.PutState(ctx, c.stateKey(stateRecords), b)
	}
	if err != nil {
		c.log.Error("saving controller state failed", "err", err)
	}
	return err
}

// saveInflight writes the actions in flight (caller holds mu).
func (c *Controller) saveInflightLocked(ctx context.Context) {
	if c.fenced.Load() {
		return
	}
	b, err := json.Marshal(c.inflight)
	if err == nil {
		err = c.st.PutState(ctx, c.stateKey(stateInflight), b)
	}
	if err != nil {
		c.log.Error("saving in-flight actions failed", "err", err)
	}
}

// recoverInterrupted records the actions a previous run left in flight
// (the daemon was killed mid-apply) as failed with the reason, once. The
// first pass then re-reads the cluster and converges.
func (c *Controller) recoverInterrupted(ctx context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.inflight) == 0 {
		return
	}
	for key, in := range c.inflight {
		if in.Done {
			c.recoverDoneLocked(ctx, key, in)
			continue
		}
		if in.Queued {
			c.log.Info("an action queued before the stop never started; planned again", "resource", key, "action", in.Action.String())
			continue
		}
		msg := fmt.Sprintf("%s interrupted: the daemon stopped while it ran (started %s); the cluster is read again and the next pass converges",
			in.Action, in.Started.UTC().Format(time.RFC3339))
		c.addUnlessLastLocked(ctx, key, api.HistoryEntry{Event: api.EventFailed, Commit: in.Commit, Message: msg, Actor: in.actor()})
		rec := c.records[key]
		rec.Status, rec.Event, rec.Failure = vocab.StatusFailed, api.EventFailed, msg
		rec.Unfinished, rec.Interrupted = in.Action, true
		c.records[key] = rec
		c.dirty = true
		c.log.Warn("action interrupted by a previous stop", "resource", key, "action", in.Action.String(), "commit", in.Commit)
	}
	// The records first: a kill between the two writes leaves the
	// in-flight entries, recorded again (the outcomes only if missing).
	c.saveRecordsLocked(ctx)
	c.inflight = map[string]inflightAction{}
	c.saveInflightLocked(ctx)
}

// saveRecordsLocked writes the records now (caller holds mu).
func (c *Controller) saveRecordsLocked(ctx context.Context) {
	if c.fenced.Load() || !c.dirty {
		return
	}
	if b, err := json.Marshal(c.records); c.putRecords(ctx, b, err) == nil {
		c.dirty = false
	}
}

// actor is who started the action; the pass for entries of older versions.
func (in inflightAction) actor() *api.Actor {
	a := in.Actor
	if a.Kind == "" {
		a = api.PassActor
	}
	return &a
}

// addHistoryLocked writes one history entry (caller holds mu, which only
// orders entries; the store has its own locking) naming the actor ctx
// carries (api.WithActor), else the pass.
func (c *Controller) addHistoryLocked(ctx context.Context, kind, name string, ev api.HistoryEvent, commit, msg string) {
	c.addEntryLocked(ctx, kind, name, api.HistoryEntry{Event: ev, Commit: commit, Message: msg})
}

// addEntryLocked is addHistoryLocked for an entry with more (its user).
// History is written on transitions only, so each entry is also the
// notification of its event (notificationOf).
func (c *Controller) addEntryLocked(ctx context.Context, kind, name string, e api.HistoryEntry) {
	c.addEntryAsLocked(ctx, kind, name, e, notificationOf(e.Event))
}

// addEntryAsLocked writes e and announces it as ev ("": not announced).
func (c *Controller) addEntryAsLocked(ctx context.Context, kind, name string, e api.HistoryEntry, ev api.NotificationEvent) {
	if c.fenced.Load() {
		return
	}
	if e.Time.IsZero() {
		e.Time = c.clock.Now()
	}
	if e.Actor == nil {
		a := api.ActorFrom(ctx)
		e.Actor = &a
	}
	if _, err := c.st.AddHistory(ctx, kind, c.historyName(name), e); err != nil {
		c.log.Error("recording history failed", "resource", vocab.Key(kind, name), "event", string(e.Event), "err", err)
	}
	if ev != "" {
		c.notifyLocked(api.Notice{Event: ev, Kind: kind, Name: name, Revision: e.Commit, Message: e.Message, Time: e.Time})
	}
}

// holds reports whether the failure recorded holds a's attempt at commit
// until RetryAt. A record written before attempts were recorded holds
// whatever is planned.
func (r record) holds(commit string, a *engine.Action) bool {
	switch {
	case r.Terminal != "":
		return r.Terminal == attemptOf(commit, a)
	case r.Attempt != "":
		return commit == r.AttemptCommit || attemptOf("", a) == r.Attempt
	}
	return true
}
