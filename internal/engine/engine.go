package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Options tune an Engine.
type Options struct {
	// Prune deletes owned resources that are no longer declared.
	// PruneHeld, with Prune false, says why a configured prune is held
	// back this pass (an empty or failed load): the reasons of what is
	// left in place name it instead of "prune is off".
	Prune     bool
	PruneHeld string
	// Concurrency bounds actions running at once (reconcile.concurrency,
	// default 4); PerNode and PerStorage bound them per Proxmox node and per
	// storage (default 2 each), which keeps Proxmox's lock timeouts away.
	Concurrency int
	PerNode     int
	PerStorage  int
	// ShutdownTimeout is how long a graceful shutdown may take before the
	// VM is stopped hard (default 2 minutes); a VM's own setting wins.
	ShutdownTimeout time.Duration
	// Limiter, when set, replaces the limits above (the daemon shares its
	// dispatcher's limiter between passes).
	Limiter *dispatch.Limiter
	// Logger receives debug lines (default: discard).
	Logger *slog.Logger
	// Records keeps the source and checksum of each download proxmops made
	// (default: in memory, for the engine's life).
	Records Records
	// TaskLogs keeps task log lines between engines (default: per engine).
	TaskLogs *TaskLogCache
	// Provisioner applies spec.provision over SSH (nil: guests that
	// declare provision fail to plan).
	Provisioner *provision.Runner
	// Adopt lists resources ("Kind/name") asked to adopt the unowned guest
	// at their VMID as if annotated proxmops.dev/adopt (`proxmops adopt`).
	Adopt []string
	// Reads, when set, keeps guests' configurations between plans and
	// spreads their reads over the passes (the daemon); nil reads every
	// guest on every plan (the CLI).
	Reads *ReadCache
}

// Engine plans and applies desired state against one cluster.
type Engine struct {
	client  *pve.Client
	opts    Options
	limiter *dispatch.Limiter
	log     *slog.Logger
	records Records
	logs    *TaskLogCache

	// staged holds, per node, the staged network changes ("changes" of
	// GET /nodes/{node}/network) that proxmops itself staged and failed to
	// apply: a later pass applies them, and only them.
	staged *stagedNets
	// sdnReload names the nodes whose network reload failed after an SDN
	// apply: the configuration is committed, so nothing is pending, but
	// their vnets are no bridges until a later apply reloads them.
	sdnReload *failedReloads
}

// failedReloads is Engine.sdnReload, shared by the copies Delete makes.
type failedReloads struct {
	mu    sync.Mutex
	nodes string // "" when the last apply reloaded every node
}

func (f *failedReloads) set(nodes string) {
	f.mu.Lock()
	f.nodes = nodes
	f.mu.Unlock()
}

func (f *failedReloads) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.nodes
}

// stagedNets is Engine.staged, shared by the copies Delete makes.
type stagedNets struct {
	mu  sync.Mutex
	own map[string]string
}

// New returns an engine using client.
func New(client *pve.Client, opts Options) *Engine {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 4
	}
	if opts.PerNode <= 0 {
		opts.PerNode = 2
	}
	if opts.PerStorage <= 0 {
		opts.PerStorage = 2
	}
	if opts.ShutdownTimeout <= 0 {
		opts.ShutdownTimeout = 2 * time.Minute
	}
	lim := opts.Limiter
	if lim == nil {
		lim = dispatch.NewLimiter(dispatch.Limits{Total: opts.Concurrency, PerNode: opts.PerNode, PerStorage: opts.PerStorage})
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rec := opts.Records
	if rec == nil {
		rec = &memRecords{}
	}
	logs := opts.TaskLogs
	if logs == nil {
		logs = &TaskLogCache{}
	}
	return &Engine{client: client, opts: opts, limiter: lim, log: log, records: rec, logs: logs,
		staged: &stagedNets{own: map[string]string{}}, sdnReload: &failedReloads{}}
}

// Client is the engine's Proxmox client.
func (e *Engine) Client() *pve.Client { return e.client }

// reconciler is one kind's planning logic (the registry's rows make one
// per plan).
type reconciler interface {
	// scope adds what must be read for the desired resources of the kind
	// (guest configurations, storage listings, reads of its own).
	scope(pc *planContext, sc *scope)
	// plan returns one action per desired resource, plus prune candidates.
	plan(pc *planContext) []*Action
}

// planContext is what reconcilers see while planning.
type planContext struct {
	ctx      context.Context
	e        *Engine
	d        *Desired
	snap     *Snapshot
	declared map[int]string // vmid -> Kind/name
	isos     map[string]*IsoSpec
	tpls     map[string]*TemplateSpec
	kinds    kindsPlan // what the container, network and SDN reconcilers share
	// ownerCache holds what the ownership proofs of volumes read.
	ownersOnce sync.Once
	ownerCache *ownerCache
	// tagOpts is /cluster/options, read when a plan first needs it.
	tagOnce sync.Once
	tagOpts *pve.ClusterOptions
	// storageCfg is storage.cfg, read when a plan first needs it.
	storageOnce sync.Once
	storageCfg  storageConfigs
}

// clusterOptions reads /cluster/options once per plan (nil when it cannot
// be read).
func (pc *planContext) clusterOptions() *pve.ClusterOptions {
	pc.tagOnce.Do(func() {
		if o, err := pc.e.client.ClusterOptions(pc.ctx); err == nil {
			pc.tagOpts = &o
		}
	})
	return pc.tagOpts
}

// tagsCaseSensitive is tag-style's case-sensitive (GuestHelpers.pm
// get_unique_tags lower-cases tags without it).
func (pc *planContext) tagsCaseSensitive() bool {
	o := pc.clusterOptions()
	return o != nil && o.TagStyle.CaseSensitive != 0
}

// storageConfigs reads storage.cfg once per plan.
func (pc *planContext) storageConfigs() storageConfigs {
	pc.storageOnce.Do(func() { pc.storageCfg = pc.e.readStorageConfigs(pc.ctx) })
	return pc.storageCfg
}

// reconcilers makes the reconcilers of one plan, in registry order.
func reconcilers() []reconciler {
	var out []reconciler
	for _, row := range kinds {
		if row.reconciler != nil {
			out = append(out, row.reconciler())
		}
	}
	return out
}

// maxPlanRounds bounds the observations of one plan with a ReadCache; the
// last one reads every guest in scope.
const maxPlanRounds = 4

// Plan observes the cluster and computes the actions that would bring it to
// d. It changes nothing.
//
// With a ReadCache, a guest whose summary is unchanged may be planned from
// its configuration as last read; when the plan would then act on it (or
// plans anything while a template came from the cache), those guests are
// read and the plan is made again, so every action is planned from a
// configuration read in this very plan.
func (e *Engine) Plan(ctx context.Context, d *Desired, revision string) (*Plan, error) {
	if d == nil {
		d = &Desired{}
	}
	force := map[int]bool{}
	confirm := map[int]bool{} // guests whose power state a round reads from status/current
	var stats ObserveStats
	for round := 1; ; round++ {
		cr := e.opts.Reads.begin(force)
		if cr != nil && round >= maxPlanRounds {
			cr.all = true
		}
		p, err := e.planRound(ctx, d, revision, cr, confirm)
		if err != nil {
			return nil, err
		}
		stats = stats.add(p.Stats)
		p.Stats = stats
		stale := cachedActing(p)
		lagging := powerUnconfirmed(p)
		if len(stale) == 0 && len(lagging) > 0 {
			// Only power states to confirm: a round is needed only if one
			// of them is not what pvestatd reported.
			changed, n := e.confirmPower(ctx, p.pass.snap, lagging)
			stats.Requests += n
			p.Stats = stats
			if len(changed) == 0 {
				return p, nil
			}
			e.log.Debug("plan: power states differ from /cluster/resources", "guests", sortedIDs(changed), "round", round)
		}
		if len(stale) == 0 && len(lagging) == 0 {
			return p, nil
		}
		if round >= maxPlanRounds {
			return nil, fmt.Errorf("planning: guests %v were served from the read cache or guests %v planned from a lagging power state after %d rounds",
				sortedIDs(stale), sortedIDs(lagging), round)
		}
		for id := range stale {
			force[id] = true
		}
		for id := range lagging {
			confirm[id] = true
		}
		e.log.Debug("plan: reading cached guests the plan acts on", "guests", len(stale), "round", round)
	}
}

// powerUnconfirmed lists the guests the plan acts on (or reports out of
// sync) whose power state is still pvestatd's report from
// /cluster/resources, up to 10 seconds old: whether a change applies now
// or waits for a restart, whether a reboot or a start is due, all follow
// from it. Deletes read the state themselves; templates do not run.
func powerUnconfirmed(p *Plan) map[int]bool {
	out := map[int]bool{}
	snap := p.pass.snap
	for _, a := range p.Actions {
		if a.VMID <= 0 || a.Conflicted() || a.Action == vocab.ActionDelete || a.Action == vocab.ActionCreate ||
			a.Action == vocab.ActionNone && (a.Status != vocab.StatusOutOfSync || a.Sync == vocab.SyncDisabled) {
			continue
		}
		if g := snap.Guests[a.VMID]; g != nil && g.Read && !g.statusRead && !g.Template && (g.Type == "qemu" || g.Type == "lxc") {
			out[a.VMID] = true
		}
	}
	return out
}

// confirmPower reads the power state of these guests from status/current
// and returns those whose state is not the one the plan used, with the
// requests it made.
func (e *Engine) confirmPower(ctx context.Context, snap *Snapshot, ids map[int]bool) (map[int]bool, int64) {
	before := e.client.Stats()
	var mu sync.Mutex
	changed := map[int]bool{}
	var jobs []func(context.Context) error
	for id := range ids {
		g := snap.Guests[id]
		status := e.client.QemuStatus
		if g.Type == "lxc" {
			status = e.client.LxcStatus
		}
		jobs = append(jobs, func(ctx context.Context) error {
			st, err := status(ctx, g.Node, g.VMID)
			mu.Lock()
			defer mu.Unlock()
			// A guest that cannot be read (or is gone) is planned again
			// with its state read in the observation, which reports that.
			if err != nil || st.Status != g.Status {
				changed[g.VMID] = true
			}
			return nil
		})
	}
	_ = runParallel(ctx, observeWorkers, jobs)
	return changed, e.client.Stats().Sub(before).Total()
}

// add sums the costs of two observations of one plan.
func (s ObserveStats) add(o ObserveStats) ObserveStats {
	s.Requests += o.Requests
	s.Guests = o.Guests
	s.ConfigsRead += o.ConfigsRead
	s.ConfigsCached = o.ConfigsCached
	s.StoragesListed += o.StoragesListed
	s.Duration += o.Duration
	s.Rounds += o.Rounds
	return s
}

// cachedActing lists the guests planned from a cached configuration that
// the plan cannot take as read: the guest of every action that is not
// plainly in sync, and, when there is any, every template (clones plan
// from their template's disks).
func cachedActing(p *Plan) map[int]bool {
	out := map[int]bool{}
	snap := p.pass.snap
	acting := false
	for _, a := range p.Actions {
		if a.Settled() {
			continue
		}
		acting = true
		if g := snap.Guests[a.VMID]; a.VMID > 0 && g != nil && g.cached {
			out[a.VMID] = true
		}
	}
	if acting {
		for id, g := range snap.Guests {
			if g.cached && g.Template {
				out[id] = true
			}
		}
	}
	return out
}

func sortedIDs(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// planRound is one observation and the plan made from it.
func (e *Engine) planRound(ctx context.Context, d *Desired, revision string, cr *cacheRound, confirm map[int]bool) (*Plan, error) {
	pc := &planContext{ctx: ctx, e: e, d: d, declared: claimVMIDs(d), isos: map[string]*IsoSpec{}, tpls: map[string]*TemplateSpec{}}
	for _, s := range specsOf[*IsoSpec](d, KindIso) {
		pc.isos[s.Name] = s
	}
	for _, s := range specsOf[*TemplateSpec](d, KindTemplate) {
		pc.tpls[s.Name] = s
	}
	recs := reconcilers()
	snap, err := e.observe(ctx, cr, func(snap *Snapshot) *scope {
		pc.snap = snap
		sc := newScope()
		for _, g := range snap.Guests {
			if g.Owned {
				sc.guest(g.VMID)
			}
		}
		for _, r := range recs {
			r.scope(pc, sc)
		}
		for id := range confirm {
			if snap.Guests[id] != nil {
				sc.guest(id)
				sc.status[id] = true
			}
		}
		for _, st := range d.alsoList {
			sc.storage(nodeFor(pc, st[0]), st[1])
		}
		return sc
	})
	if err != nil {
		return nil, err
	}
	pc.snap = snap
	for _, g := range snap.Guests {
		g.tagCase = pc.tagsCaseSensitive
	}
	p := &Plan{Revision: revision, Stats: snap.Stats, pass: &passState{snap: snap}}
	for _, r := range recs {
		p.Actions = append(p.Actions, r.plan(pc)...)
	}
	checkNodes(p, snap)
	e.holdForPowerTasks(ctx, p)
	planSnapshots(pc, p)
	e.checkPrivileges(ctx, p, d)
	if err := resolveDependencies(p); err != nil {
		return nil, err
	}
	p.finish()
	return p, nil
}

// resolveDependencies drops dependencies on actions that have nothing to
// do, blocks actions whose prerequisites cannot succeed, and refuses cycles.
func resolveDependencies(p *Plan) error {
	byKey := map[string]*Action{}
	for _, a := range p.Actions {
		byKey[a.Key()] = a
	}
	for _, a := range p.Actions {
		var deps []string
		for _, k := range a.DependsOn {
			dep := byKey[k]
			if dep == nil {
				continue
			}
			switch {
			case dep.Conflicted() || dep.failedPlanning():
				if a.Action != vocab.ActionNone && a.BlockedBy == "" {
					a.BlockedBy = k
					a.Reason = joinReasons([]string{a.Reason, fmt.Sprintf("blocked: %s is %s (%s)", k, dep.Status, dep.Reason)})
				}
			case dep.Acts():
				deps = append(deps, k)
			}
		}
		a.DependsOn = deps
	}
	// Cycle check (Kahn): the kinds of today cannot form one, but a clear
	// error beats a pass that hangs if a future kind does.
	indeg := map[string]int{}
	users := map[string][]string{}
	for _, a := range p.Actions {
		indeg[a.Key()] += 0
		for _, d := range a.DependsOn {
			indeg[a.Key()]++
			users[d] = append(users[d], a.Key())
		}
	}
	var queue []string
	for k, n := range indeg {
		if n == 0 {
			queue = append(queue, k)
		}
	}
	seen := 0
	for len(queue) > 0 {
		k := queue[0]
		queue = queue[1:]
		seen++
		for _, u := range users[k] {
			if indeg[u]--; indeg[u] == 0 {
				queue = append(queue, u)
			}
		}
	}
	if seen != len(indeg) {
		var cyc []string
		for k, n := range indeg {
			if n > 0 {
				cyc = append(cyc, k)
			}
		}
		sort.Strings(cyc)
		return fmt.Errorf("dependency cycle between %s", strings.Join(cyc, ", "))
	}
	return nil
}

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
	// Retry says the failure is transient (lock timeout, unknown outcome,
	// unreachable): the next pass is expected to absorb it.
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
				n.res.Retry = pve.IsTransient(err)
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
