package controller

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/source"
	"github.com/proxmops/proxmops/internal/vocab"
)

// resource is the controller's view of one resource.
type resource struct {
	sum      api.ResourceSummary
	desired  manifest.Resource // nil for a resource only on the cluster
	observed map[string]any
	action   *engine.Action // from the last plan
	lastTask string         // UPID of the last Proxmox task of its actions (TaskLog)
}

// maxListedErrors bounds the manifest errors quoted in the status.
const maxListedErrors = 5

// pass is one reconcile pass. It never waits for actions.
func (c *Controller) pass(ctx context.Context, req request) {
	start := time.Now()
	clockStart := c.clock.Now()
	rt := c.runtime()
	log := c.log

	var problems []string
	if rt.sourceErr != "" {
		problems = append(problems, rt.sourceErr)
	}
	sourceOK := rt.syncer != nil
	if rt.syncer != nil && (req.pull || c.currentDesired() == nil) {
		if err := c.pull(ctx, rt); err != nil {
			sourceOK = false
			// A load failure is the loadError (one item per error), not a
			// source problem repeating the same errors in one line.
			if !errors.As(err, new(loadFailure)) {
				problems = append(problems, err.Error())
			}
		}
	}
	if ctx.Err() != nil {
		return
	}
	ds := c.currentDesired()
	if ds != nil && len(ds.set.Resources) == 0 {
		problems = append(problems, fmt.Sprintf("the repository has no manifests at %s; nothing is pruned from an empty load", short(ds.commit)))
	}
	clusterProblem := rt.clusterErr

	// The action ends recorded before the cluster is read: the plan's view
	// of a resource whose action ends later is older than that end.
	c.mu.Lock()
	readAfter := c.outcomes
	c.mu.Unlock()
	var plan *engine.Plan
	var eng *engine.Engine
	if rt.client != nil && ds != nil {
		// Prune only from a good, non-empty load of this very pass.
		asked := rt.cfg.Reconcile.Prune || len(req.pruneFor) > 0
		prune := asked && sourceOK && len(ds.set.Resources) > 0
		eng = rt.engine(prune, pruneHeld(asked, sourceOK, ds), c.opts.Logger)
		desired := ds.desired
		if len(req.rebootFor) > 0 {
			desired = withReboot(desired, req.rebootFor)
		}
		var err error
		plan, err = eng.Plan(ctx, desired, ds.commit)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			clusterProblem = "observing the cluster failed: " + err.Error()
			log.Warn("observing the cluster failed", "err", err)
		}
	}

	if c.planned != nil {
		c.planned()
	}
	var submitted, deferred []string
	c.mu.Lock()
	now := c.clock.Now().UTC()
	if plan != nil {
		submitted, deferred = c.applyPlanLocked(ctx, rt, eng, plan, ds, req, readAfter)
		c.syncProbesLocked(ctx)
		c.observedAt = &now
	}
	c.clusterErr = clusterProblem
	if clusterProblem != "" && ds != nil {
		c.markUnobservedLocked(ds)
	}
	c.sourceErr = strings.Join(problems, "; ")
	if ds != nil {
		c.noteSourceLocked(ds.commit)
	} else {
		c.noteSourceLocked("")
	}
	c.lastPass = &now
	c.passDur = time.Since(start)
	c.ready = true
	counts := c.statusCounts()
	var revision, message string
	if ds != nil {
		revision, message = ds.commit, ds.message
	}
	passEv := api.PassEvent{Cluster: c.Name(), Revision: revision, RevisionMessage: message, PassDurationMs: c.passDur.Milliseconds(),
		LastPass: now, Counts: counts, SourceError: c.sourceErr, ClusterError: c.clusterErr, LastObserved: c.observedAt,
		LoadError: c.loadErr, Pinned: c.pins.current()}
	triedCluster := plan != nil || clusterProblem != ""
	c.mu.Unlock()

	c.notePass(context.WithoutCancel(ctx), revision, now, counts)
	c.saveState(context.WithoutCancel(ctx))
	c.saveSnapshot(context.WithoutCancel(ctx))
	c.publish(api.SSEPass, passEv)
	c.m.PassDuration.WithLabelValues(c.Name()).Observe(time.Since(start).Seconds())
	for st, n := range counts {
		c.m.Resources.WithLabelValues(st.String(), c.Name()).Set(float64(n))
	}
	if triedCluster {
		c.noteClusterUp(passEv)
	}
	if len(deferred) > 0 {
		log.Warn("actions deferred: the action queue is full; they are queued on a later pass",
			"deferred", len(deferred), "queueLimit", c.opts.QueueLimit, "first", deferred[0])
	}
	log.Debug("pass done", "revision", short(revision), "duration", time.Since(start).String(),
		"submitted", len(submitted), "problems", len(problems), "started", clockStart)
	if req.pull {
		c.schedulePull(rt.cfg.Reconcile.Interval)
	} else {
		c.markPassEnd()
	}
}

// pruneHeld says why a configured prune is held back this pass, for the
// reason of each resource it leaves in place ("" when it is not).
func pruneHeld(configured, sourceOK bool, ds *desiredState) string {
	switch {
	case !configured:
		return ""
	case !sourceOK:
		return fmt.Sprintf("the repository could not be read this pass; nothing is pruned after a failed load, the last good one is %s", short(ds.commit))
	case len(ds.set.Resources) == 0:
		return fmt.Sprintf("the repository has no manifests at %s; nothing is pruned from an empty load", short(ds.commit))
	}
	return ""
}

// currentDesired is the last good desired state, or nil before the first.
func (c *Controller) currentDesired() *desiredState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.desired
}

// pull fetches Git and, when the commit changed, loads the manifests. On
// any failure the last good desired state stays in force.
func (c *Controller) pull(ctx context.Context, rt *runtime) error {
	t0 := time.Now()
	res, err := rt.syncer.Sync(ctx)
	c.m.GitFetchDuration.Observe(time.Since(t0).Seconds())
	if err != nil {
		c.m.GitFetchErrors.Inc()
		if ctx.Err() == nil {
			c.log.Warn("Git sync failed; keeping the last good desired state", "err", err)
		}
		return err
	}
	if res.HistoryRewritten {
		c.log.Warn("the watched branch was force-pushed", "previous", short(res.PreviousCommit), "now", short(res.Commit.Hash))
	}
	if res, err = c.checkoutPinned(ctx, rt, res); err != nil {
		c.log.Warn("keeping the last good desired state", "err", err)
		return err
	}
	cur := c.currentDesired()
	if cur != nil && cur.commit == res.Commit.Hash && !res.Local {
		return nil
	}
	ds, err := c.load(res)
	if err != nil {
		c.log.Warn("manifests cannot be loaded; keeping the last good desired state", "commit", res.Commit.Hash, "err", err)
		c.mu.Lock()
		c.loadErr = loadErrorOf(res.Commit.Hash, err)
		c.mu.Unlock()
		return loadFailure{err}
	}
	if cur != nil {
		// Resources this revision prunes go before what they depended on.
		ds.desired.WithFormer(cur.desired)
	}
	c.mu.Lock()
	changed := c.desired == nil || c.desired.commit != ds.commit
	c.desired = ds
	c.loadErr = nil
	c.mu.Unlock()
	if changed {
		c.log.Info("desired state loaded", "commit", ds.commit, "message", ds.message, "resources", len(ds.set.Resources))
	}
	return nil
}

// load reads the manifests of a checkout.
func (c *Controller) load(res *source.Result) (*desiredState, error) {
	set, err := loadManifests(res.Dir)
	if err != nil {
		return nil, fmt.Errorf("manifests at %s are invalid: %w", short(res.Commit.Hash), err)
	}
	ds := &desiredState{set: set, desired: engine.DesiredFromSet(set, c.opts.Secrets), commit: res.Commit.Hash,
		message: res.Commit.Subject(), author: res.Commit.Author, byKey: map[string]manifest.Resource{}, texts: manifestTexts(res.Dir, set)}
	for _, r := range set.Resources {
		ds.byKey[vocab.Key(r.Kind(), r.Name())] = r
	}
	return ds, nil
}

// loadManifests loads a directory of manifests, or one file.
func loadManifests(dir string) (*manifest.Set, error) {
	set, err := manifest.LoadPath(dir)
	if err != nil {
		var list manifest.ErrorList
		if errors.As(err, &list) && len(list) > maxListedErrors {
			msgs := make([]string, 0, maxListedErrors)
			for _, e := range list[:maxListedErrors] {
				msgs = append(msgs, e.Error())
			}
			return nil, truncatedErrors{msg: fmt.Sprintf("%s; and %d more", strings.Join(msgs, "; "), len(list)-maxListedErrors), list: list}
		}
		return nil, err
	}
	return set, nil
}

// truncatedErrors quotes the first errors of a list in its text and keeps
// the whole list for the API's load error.
type truncatedErrors struct {
	msg  string
	list manifest.ErrorList
}

func (e truncatedErrors) Error() string { return e.msg }
func (e truncatedErrors) Unwrap() error { return e.list }

// maxLoadErrors bounds the errors a LoadError lists.
const maxLoadErrors = 50

// loadErrorOf lists a load failure's errors one per item, each with its
// file:line:column, so the UI need not split a paragraph.
func loadErrorOf(commit string, err error) *api.LoadError {
	le := &api.LoadError{Revision: commit}
	var list manifest.ErrorList
	if !errors.As(err, &list) {
		le.Errors = []string{err.Error()}
		return le
	}
	for i, e := range list {
		if i == maxLoadErrors {
			le.Errors = append(le.Errors, fmt.Sprintf("and %d more", len(list)-maxLoadErrors))
			break
		}
		le.Errors = append(le.Errors, e.Error())
	}
	return le
}

// applyPlanLocked records the plan's statuses, hands runnable actions to
// the dispatcher and publishes what changed (caller holds mu). readAfter
// is the number of action ends recorded before the plan read the cluster.
func (c *Controller) applyPlanLocked(ctx context.Context, rt *runtime, eng *engine.Engine, plan *engine.Plan, ds *desiredState, req request, readAfter uint64) (submitted, deferred []string) {
	now := c.clock.Now()
	autoSync := rt.cfg.Reconcile.AutoSync || req.force
	dryRun := rt.cfg.Reconcile.DryRun
	seen := map[string]bool{}
	pendingDeps := map[string]bool{} // keys whose action is queued, running or about to be
	for _, a := range plan.Actions {
		if a.Runnable() || c.dispatcher.Busy(a.Key()) {
			pendingDeps[a.Key()] = true
		}
	}
	// What depends on a resource whose end this plan did not see still
	// waits for it (pendingDeps), until the re-scan reads it done.
	stale := c.endedSinceLocked(readAfter)
	for _, a := range plan.Actions {
		key := a.Key()
		seen[key] = true
		if stale[key] {
			// Its action ended after the plan read the cluster: this view
			// (a guest still missing, still stopped) would write a false
			// "drifted" after "created" or act again. The outcome stands
			// until the re-scan that end asked for; a sync one waits for it.
			if req.keys[key] {
				c.ask(request{keys: map[string]bool{key: true}, by: map[string]api.Actor{key: req.actorFor(key)}})
			}
			continue
		}
		r := c.resources[key]
		if r == nil {
			r = &resource{}
			c.resources[key] = r
		}
		prev := r.sum
		r.action = a
		r.desired = ds.byKey[key]
		r.observed = a.Observed
		sum := summaryOf(a, r.desired)
		rec := c.records[key]
		busy := c.dispatcher.Busy(key)

		forced := req.keys[key]
		wantRun := !a.Conflicted() && sumRunnable(a, forced)
		if a.Action == vocab.ActionDelete && ds.byKey[key] == nil && !req.prunedHere(key, rt.cfg.Reconcile.Prune) {
			wantRun = false // pruned for another resource's sync only
		}
		switch {
		case busy:
			// What runs is the action submitted earlier: its action, reason
			// and changes stay shown, not this plan's view of a cluster the
			// action is changing (a clone locked mid-way plans no action).
			sum = runningSummary(sum, prev, c.inflight[key])
		case wantRun && !dryRun && (autoSync || forced):
			if waiting := waitingOn(a, pendingDeps); waiting != "" {
				sum.Reason = joinReason(sum.Reason, "waiting for "+waiting+" first")
				break
			}
			if !forced && !rec.RetryAt.IsZero() && now.Before(rec.RetryAt) && rec.holds(ds.commit, a) {
				sum.Status, sum.Health = vocab.StatusFailed, vocab.HealthDegraded
				when := "retried after " + rec.RetryAt.UTC().Format(time.RFC3339)
				if rec.Terminal != "" {
					when = "not retried until a commit or the cluster changes it, a manual sync, or " + rec.RetryAt.UTC().Format(time.RFC3339)
				}
				sum.Reason = joinReason(rec.Failure, when)
				break
			}
			if len(c.dispatcher.Active()) >= c.opts.QueueLimit {
				deferred = append(deferred, key)
				sum.Reason = joinReason(sum.Reason, "deferred: the action queue is full")
				break
			}
			if c.submitLocked(ctx, eng, plan, a, ds.commit, req.actorFor(key)) {
				submitted = append(submitted, key)
				sum.Status, sum.Health = vocab.StatusProgressing, vocab.HealthProgressing
				sum.Progress = &api.Progress{Message: a.Action.String() + " queued"}
			}
		case rec.Status == vocab.StatusFailed && rec.Failure != "" && a.Action != vocab.ActionNone && sum.Status == vocab.StatusOutOfSync:
			// The last attempt failed and nothing retries it automatically.
			sum.Status, sum.Health = vocab.StatusFailed, vocab.HealthDegraded
			sum.Reason = joinReason(rec.Failure, sum.Reason)
		}
		if a.Waits() && !busy {
			sum.Reason = joinReason(sum.Reason, a.Waiting.Text())
		}
		if a.Action != vocab.ActionNone && sum.Status == vocab.StatusOutOfSync && !a.Waits() {
			switch {
			case dryRun:
				sum.Reason = joinReason(sum.Reason, "dry run: not applied")
			case a.Sync == vocab.SyncManual && !forced:
				sum.Reason = joinReason(sum.Reason, "sync policy manual: applied only when synced by hand")
			case !autoSync:
				sum.Reason = joinReason(sum.Reason, "auto-sync is off: applied only when synced by hand")
			}
		}
		c.noteTransitionLocked(ctx, key, sum, a, ds, rec, busy)
		c.setSummaryLocked(r, sum)
	}
	for key := range c.resources {
		if !seen[key] && !c.dispatcher.Busy(key) {
			kind, name := splitKey(key)
			c.noteHealthMetricLocked(kind, name, c.resourceHealthLocked(key), 0)
			delete(c.resources, key)
			c.publish(api.SSEDeleted, api.DeletedEvent{Cluster: c.Name(), Kind: kind, Name: name})
		}
	}
	for key, rec := range c.records {
		if _, ok := c.resources[key]; !ok {
			c.settleDeleteLocked(ctx, key, ds.commit, &rec)
			delete(c.records, key)
			c.dirty = true
		}
	}
	return submitted, deferred
}

// endedSinceLocked returns the resources whose action ended after
// readAfter, and forgets the ends a plan has now seen (caller holds mu).
func (c *Controller) endedSinceLocked(readAfter uint64) map[string]bool {
	stale := map[string]bool{}
	for key, n := range c.endedAt {
		if n > readAfter {
			stale[key] = true
		} else {
			delete(c.endedAt, key)
		}
	}
	return stale
}

// sumRunnable: an action runs on its own when the engine says so; sync
// policy manual runs only when a person asks for this resource.
func sumRunnable(a *engine.Action, forced bool) bool {
	if a.Runnable() {
		return true
	}
	return forced && a.Sync == vocab.SyncManual && runnableIfAuto(a)
}

// runnableIfAuto tells whether a would be runnable with policy auto.
func runnableIfAuto(a *engine.Action) bool { return a.Acts() && a.BlockedBy == "" && !a.Waits() }

// waitingOn names a prerequisite still to be done, or "".
func waitingOn(a *engine.Action, pending map[string]bool) string {
	for _, d := range a.DependsOn {
		if pending[d] {
			return d
		}
	}
	return ""
}

// noteTransitionLocked writes history when a resource's status changes in
// a way worth remembering, and keeps the record (caller holds mu). busy:
// an action submitted by an earlier pass is still queued or running.
func (c *Controller) noteTransitionLocked(ctx context.Context, key string, sum api.ResourceSummary, a *engine.Action, ds *desiredState, rec record, busy bool) {
	kind, name := splitKey(key)
	prevStatus := rec.Status
	var ev api.HistoryEvent
	var msg string
	nev := api.NotificationEvent("") // the announcement, when not notificationOf(ev)
	// A resource never seen on the cluster has not drifted: its first
	// event is "created" (or the failure of its create). So is one whose
	// interrupted or failed create a pass finds done, or missing again.
	unborn := a.Action == vocab.ActionCreate && (rec.Event == "" || rec.Unfinished == vocab.ActionCreate)
	if c.settleCreateLocked(ctx, key, a, sum, ds, &rec, busy) || a.Action == vocab.ActionCreate && c.settleDeleteLocked(ctx, key, ds.commit, &rec) {
		unborn = true
		c.dirty = true
	}
	switch sum.Status {
	case vocab.StatusOutOfSync:
		if prevStatus != vocab.StatusOutOfSync && prevStatus != vocab.StatusProgressing && !unborn {
			ev, msg = api.EventDrifted, driftMessage(a, sum, ds)
		}
	case vocab.StatusSynced:
		if prevStatus != vocab.StatusSynced && rec.Event != api.EventCreated && rec.Event != api.EventApplied {
			ev, msg = api.EventSynced, syncedMessage(rec, ds)
		}
		rec.Failure, rec.Failures, rec.RetryAt, rec.Terminal, rec.Attempt, rec.AttemptCommit = "", 0, time.Time{}, "", "", ""
		rec.Unfinished, rec.Interrupted = 0, false
	case vocab.StatusConflict:
		if prevStatus != vocab.StatusConflict {
			ev, msg, nev = api.EventFailed, "conflict: "+sum.Reason, api.NotifyConflict
		}
	case vocab.StatusFailed:
		if prevStatus != vocab.StatusFailed && rec.Failure == "" {
			ev, msg = api.EventFailed, sum.Reason
			rec.Failure = sum.Reason
		}
	}
	if sum.Status == vocab.StatusProgressing && prevStatus == vocab.StatusSynced && !unborn {
		// A drift found and queued in the same pass.
		ev, msg = api.EventDrifted, driftMessage(a, sum, ds)
	}
	wasOn := rec.Node
	if moved := placementChange(a, &rec); moved != "" {
		c.addHistoryLocked(ctx, kind, name, api.EventMoved, ds.commit, moved)
	}
	if rec.Node != wasOn {
		c.dirty = true
	}
	if ev != "" {
		if nev == "" {
			nev = notificationOf(ev)
		}
		c.addEntryAsLocked(ctx, kind, name, api.HistoryEntry{Event: ev, Commit: ds.commit, Message: msg}, nev)
		rec.Event = ev
	}
	if rec.Status != sum.Status || ev != "" {
		rec.Status = sum.Status
		c.dirty = true
	}
	c.records[key] = rec
}

// placementChange notes the node an owned guest is on in rec and says,
// for the history, when it is not the node of the last pass (or, first
// seen, not the node its manifest names): HA or a migration moved it, and
// proxmops leaves it there. "" when there is nothing to say.
func placementChange(a *engine.Action, rec *record) string {
	if a.Observed == nil || !a.Owned || a.Node == "" || a.VMID == 0 {
		return ""
	}
	prev := rec.Node
	rec.Node = a.Node
	switch {
	case prev == a.Node || prev == "" && a.ManifestNode == "":
		return ""
	case a.ManifestNode != "":
		return engine.MovedNote(a.Node, a.ManifestNode, a.Observed["status"] == "running")
	}
	return fmt.Sprintf("now on %s (was on %s): moved by HA or a migration, left where it is", a.Node, prev)
}

func driftMessage(a *engine.Action, sum api.ResourceSummary, ds *desiredState) string {
	var b strings.Builder
	switch {
	case a.Action == vocab.ActionCreate:
		fmt.Fprintf(&b, "declared at %s but missing on the cluster", short(ds.commit))
	case a.Action == vocab.ActionDelete || (sum.File == "" && a.Observed != nil):
		b.WriteString(a.Reason)
	default:
		fmt.Fprintf(&b, "differs from the manifest at %s", short(ds.commit))
	}
	if len(a.Changes) > 0 && a.Action != vocab.ActionCreate {
		parts := make([]string, 0, len(a.Changes))
		for _, ch := range a.Changes {
			parts = append(parts, ch.String())
		}
		b.WriteString(": ")
		b.WriteString(strings.Join(parts, ", "))
	}
	return b.String()
}

// runningSummary is the summary of a resource whose action is queued or
// running: the action in flight with the reason and changes it was
// submitted with (prev, while it was Progressing), never a contradiction
// such as action none with the reason of a create.
//
// An action whose outcome is recorded (finish marked its inflight entry
// done, or dropped it) while its job is still leaving the dispatcher is
// no longer running:
// the plan's view stands, not Progressing with the reason "in sync".
func runningSummary(sum, prev api.ResourceSummary, in inflightAction) api.ResourceSummary {
	if in == (inflightAction{}) || in.Done {
		return sum
	}
	sum.Status, sum.Health = vocab.StatusProgressing, vocab.HealthProgressing
	sum.Progress = prev.Progress
	if prev.Status == vocab.StatusProgressing && prev.Action != vocab.ActionNone && prev.Action.Valid() {
		sum.Action, sum.Reason, sum.Changes, sum.NeedsReboot = prev.Action, prev.Reason, prev.Changes, prev.NeedsReboot
	} else if in.Action.Valid() && in.Action != sum.Action {
		sum.Action, sum.Reason, sum.Changes = in.Action, in.Action.String()+" in progress", []vocab.Change{}
	}
	return sum
}

// setSummaryLocked stores sum and publishes it when it changed.
func (c *Controller) setSummaryLocked(r *resource, sum api.ResourceSummary) {
	prev := r.sum
	sum.Cluster = c.Name()
	sum.UpdatedAt = prev.UpdatedAt
	sum = c.overlayProbeLocked(sum)
	c.noteHealthLocked(vocab.Key(sum.Kind, sum.Name), sum.Health, sum.Reason)
	if prev.Health != sum.Health {
		c.noteHealthMetricLocked(sum.Kind, sum.Name, prev.Health, sum.Health)
	}
	if prev.Kind == "" || !reflect.DeepEqual(stripTime(prev), stripTime(sum)) {
		sum.UpdatedAt = c.clock.Now().UTC()
		r.sum = sum
		c.publish(api.SSEResource, sum)
		return
	}
	r.sum = sum
}

func stripTime(s api.ResourceSummary) api.ResourceSummary {
	s.UpdatedAt = time.Time{}
	return s
}

// summaryOf maps a planned action to the API's summary.
func summaryOf(a *engine.Action, desired manifest.Resource) api.ResourceSummary {
	sum := api.ResourceSummary{
		Kind: a.Kind, Name: a.Name, Node: a.Node, ManifestNode: a.ManifestNode, VMID: a.VMID,
		Tags:        []string{},
		Status:      a.Status,
		Action:      a.Action,
		Reason:      a.Reason,
		NeedsReboot: a.NeedsReboot,
		Changes:     make([]vocab.Change, 0, len(a.Changes)),
		Owned:       a.Owned,
		SyncPolicy:  a.Sync,
		File:        a.File,
		DependsOn:   dependenciesOf(desired),
		Waiting:     a.Waiting.Document(),
	}
	sum.Status = engine.StatusOf(a)
	if !sum.SyncPolicy.Valid() { // not set
		sum.SyncPolicy = vocab.SyncAuto
	}
	if desired != nil {
		if md := desired.Meta(); md != nil && md.Tags != nil {
			sum.Tags = append(sum.Tags, md.Tags...)
		}
		sum.Summary = manifest.Summary(desired)
	}
	for _, ch := range a.Changes {
		sum.Changes = append(sum.Changes, vocab.Change{Field: ch.Field, From: ch.From, To: ch.To, Pending: ch.Pending, Hold: ch.Hold})
	}
	sum.Health = engine.HealthOf(a)
	return sum
}

func joinReason(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

func splitKey(key string) (kind, name string) {
	kind, name, _ = vocab.SplitKey(key)
	return kind, name
}

// short abbreviates a commit hash for messages.
func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func (c *Controller) publish(typ string, payload any) {
	if err := c.hub.Publish(typ, payload); err != nil {
		c.log.Error("publishing event failed", "type", typ, "err", err)
	}
}

// sortedSummaries lists the resources' summaries by kind then name
// (caller holds mu).
func (c *Controller) sortedSummariesLocked() []api.ResourceSummary {
	out := make([]api.ResourceSummary, 0, len(c.resources))
	for _, r := range c.resources {
		out = append(out, r.sum)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Kind != out[j].Kind {
			return out[i].Kind < out[j].Kind
		}
		return out[i].Name < out[j].Name
	})
	return out
}
