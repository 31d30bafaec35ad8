package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Summary is the plan document's summary (Summarize).
type Summary = api.PlanSummary

// Plan is the outcome of one observation and diff.
type Plan struct {
	Revision string
	Summary  Summary
	Actions  []*Action

	// Stats counts the API requests that observing took.
	Stats ObserveStats

	pass *passState
}

// HasChanges reports whether the cluster differs from the repository, or
// may: any resource not Synced (statuses counted by Summarize), except one
// whose sync is disabled by its annotation, which is Unknown by choice.
func (p *Plan) HasChanges() bool {
	for _, a := range p.Actions {
		if !a.Settled() {
			return true
		}
	}
	return false
}

// Find returns the action for kind/name, or nil.
func (p *Plan) Find(kind, name string) *Action {
	for _, a := range p.Actions {
		if a.Kind == kind && a.Name == name {
			return a
		}
	}
	return nil
}

// Document is the plan document of docs/api.md: the one document that
// `proxmops plan --output json` prints and GET /api/v1/plan answers.
func (p *Plan) Document() api.Plan {
	doc := api.Plan{Revision: p.Revision, Summary: p.Summary, Actions: make([]api.PlanAction, 0, len(p.Actions))}
	for _, a := range p.Actions {
		changes := a.Changes
		if changes == nil {
			changes = []vocab.Change{}
		}
		doc.Actions = append(doc.Actions, api.PlanAction{Kind: a.Kind, Name: a.Name, Node: a.Node, VMID: a.VMID,
			Action: a.Action, Reason: a.Reason, Changes: changes, NeedsReboot: a.NeedsReboot,
			BlockedBy: a.BlockedBy, Waiting: a.Waiting.Document(), HA: a.HA, ManifestNode: a.ManifestNode, Status: a.Status})
	}
	return doc
}

// JSON renders the plan document, indented for people.
func (p *Plan) JSON() ([]byte, error) {
	return json.MarshalIndent(p.Document(), "", "  ")
}

func (p *Plan) finish() {
	order := kindOrders()
	rank := func(kind string) int {
		if o, ok := order[kind]; ok {
			return o
		}
		return len(order) // kinds the registry does not hold come last
	}
	sort.SliceStable(p.Actions, func(i, j int) bool {
		a, b := p.Actions[i], p.Actions[j]
		oa, ob := rank(a.Kind), rank(b.Kind)
		if oa != ob {
			return oa < ob
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	for _, a := range p.Actions {
		a.Status = StatusOf(a)
		a.Health = HealthOf(a)
		if note := MovedNote(a.Node, a.ManifestNode, a.Observed["status"] == "running"); note != "" && !a.Conflicted() && !strings.Contains(a.Reason, note) {
			a.Reason = joinReasons([]string{a.Reason, note})
		}
		if a.Changes == nil {
			a.Changes = []vocab.Change{}
		}
		for i := range a.Changes {
			if a.Changes[i].Path == "" {
				a.Changes[i].Path = a.paths.Path(a.Changes[i].Field)
			}
		}
	}
	p.Summary = Summarize(p.Actions)
}

// joinReasons makes one sentence out of several reasons.
func joinReasons(rs []string) string {
	out := make([]string, 0, len(rs))
	seen := map[string]bool{}
	for _, r := range rs {
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// fieldNames joins the changes' fields with sep, for reasons.
func fieldNames(changes []vocab.Change, sep string) string {
	fields := make([]string, 0, len(changes))
	for _, c := range changes {
		fields = append(fields, c.Field)
	}
	return strings.Join(fields, sep)
}

// guestChange makes a guest's action an update for why, or adds why to
// the change it already is; it occupies the guest's node unless it
// already claims one.
func (a *Action) guestChange(why, node string) {
	if a.Action == vocab.ActionNone {
		a.Action, a.Status, a.Reason = vocab.ActionUpdate, vocab.StatusOutOfSync, why
	} else {
		a.Reason = joinReasons([]string{a.Reason, why})
	}
	if len(a.claim.nodes) == 0 {
		a.claim.nodes = []string{node}
	}
}

// passState is shared by the actions of one plan while they run: volumes
// being fetched once for all, and the observation they were planned from.
type passState struct {
	snap    *Observation
	mu      sync.Mutex
	volumes map[string]*volumeOnce
}

type volumeOnce struct {
	once sync.Once
	err  error
}

// ensureOnce runs f once per key for the whole pass; later callers wait for
// the first and get its result.
func (ps *passState) ensureOnce(key string, f func() error) error {
	ps.mu.Lock()
	if ps.volumes == nil {
		ps.volumes = map[string]*volumeOnce{}
	}
	v, ok := ps.volumes[key]
	if !ok {
		v = &volumeOnce{}
		ps.volumes[key] = v
	}
	ps.mu.Unlock()
	v.once.Do(func() { v.err = f() })
	return v.err
}

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
	snap     *Observation
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
	// haRes are the HA resources by sid, read when a plan first needs them.
	haOnce sync.Once
	haRes  map[string]collItem
	haErr  error
	// haJoining are the HA resource ids this plan adds (spec.ha).
	haJoining map[string]bool
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
			e.log.Debug("plan: power states differ from /cluster/resources", "guests", slices.Sorted(maps.Keys(changed)), "round", round)
		}
		if len(stale) == 0 && len(lagging) == 0 {
			return p, nil
		}
		if round >= maxPlanRounds {
			return nil, fmt.Errorf("planning: guests %v were served from the read cache or guests %v planned from a lagging power state after %d rounds",
				slices.Sorted(maps.Keys(stale)), slices.Sorted(maps.Keys(lagging)), round)
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
			a.Action == vocab.ActionNone && !a.drifted() {
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
func (e *Engine) confirmPower(ctx context.Context, snap *Observation, ids map[int]bool) (map[int]bool, int64) {
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
	snap, err := e.observe(ctx, cr, func(snap *Observation) *scope {
		pc.snap = snap
		markPendingStorages(pc)
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
	dependOnStorages(p, d)
	checkNodes(p, snap)
	e.holdForPowerTasks(ctx, p)
	planSnapshots(pc, p)
	e.checkPrivileges(ctx, p, d)
	holdForDependencies(p, d, e.opts.Health)
	holdBehindHeldDependencies(p)
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
