package controller

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Fleet runs one controller per cluster of the configuration and is the
// daemon's backend for all of them. Each cluster has its own loop, plan,
// status, history, ownership and prune, so one cluster that does not
// answer never holds up another; a SharedSource fetches Git once for all.
// The request's cluster (api.WithCluster, the ?cluster= parameter) picks
// one; without it, a resource name found in one cluster only is that
// cluster's, and lists and plans cover every cluster.
// With the single cluster section a Fleet holds one controller that
// behaves exactly as before.
type Fleet struct {
	names  []string
	ctrls  map[string]*Controller
	log    *slog.Logger
	multi  bool
	mu     sync.Mutex
	shared *SharedSource
	source config.Source // the shared source's settings
}

// NewFleet builds a controller per cluster of opts.Config (see New).
func NewFleet(ctx context.Context, opts Options) (*Fleet, error) {
	cfg := opts.Config
	if cfg == nil {
		cfg = config.Defaults()
	}
	f := &Fleet{ctrls: map[string]*Controller{}, multi: cfg.MultiCluster(), log: opts.Logger, source: cfg.Source}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	if !f.multi {
		c, err := New(ctx, opts)
		if err != nil {
			return nil, err
		}
		f.names = []string{c.Name()}
		f.ctrls[c.Name()] = c
		return f, nil
	}
	shared, err := NewSharedSource(cfg.Source, cfg.Reconcile.Interval/2, f.log)
	if err != nil {
		f.log.Warn("the Git source is not usable", "err", err)
	}
	f.shared = shared
	for _, t := range cfg.Targets() {
		o := opts
		o.Config, _ = cfg.ForCluster(t.Name)
		o.Cluster, o.ClusterPath, o.Source = t.Name, t.Path, shared
		c, err := New(ctx, o)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("cluster %s: %w", t.Name, err)
		}
		f.names = append(f.names, t.Name)
		f.ctrls[t.Name] = c
	}
	return f, nil
}

// Names lists the clusters in configuration order.
func (f *Fleet) Names() []string { return slices.Clone(f.names) }

// Controller is one cluster's controller, or nil.
func (f *Fleet) Controller(name string) *Controller { return f.ctrls[name] }

func (f *Fleet) each(fn func(c *Controller)) {
	for _, n := range f.names {
		fn(f.ctrls[n])
	}
}

// Run runs every cluster's loop until ctx ends; each shuts down as
// Controller.Run does.
func (f *Fleet) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.names))
	for i, n := range f.names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.ctrls[n].Run(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close stops actions still running (for callers that never ran Run).
func (f *Fleet) Close() {
	for _, c := range f.ctrls {
		c.Close()
	}
}

// Ready tells whether every cluster finished its first pass (a pass that
// could not reach its cluster counts: it ended and says why).
func (f *Fleet) Ready() bool {
	for _, c := range f.ctrls {
		if !c.Ready() {
			return false
		}
	}
	return true
}

// ApplyConfig takes new settings saved from the UI for every cluster.
func (f *Fleet) ApplyConfig(cfg *config.Config) {
	if !f.multi {
		f.each(func(c *Controller) { c.ApplyConfig(cfg) })
		return
	}
	f.mu.Lock()
	if cfg.Source != f.source {
		shared, err := NewSharedSource(cfg.Source, cfg.Reconcile.Interval/2, f.log)
		if err != nil {
			f.log.Warn("the Git source is not usable", "err", err)
		}
		f.shared, f.source = shared, cfg.Source
		f.each(func(c *Controller) { c.setShared(shared) })
	}
	f.mu.Unlock()
	f.each(func(c *Controller) {
		if cc, ok := cfg.ForCluster(c.opts.Cluster); ok {
			c.ApplyConfig(cc)
		}
	})
}

// pick is the cluster a request names, or every cluster when it names none.
func (f *Fleet) pick(ctx context.Context) ([]*Controller, error) {
	name := api.ClusterFrom(ctx)
	if name == "" {
		var all []*Controller
		f.each(func(c *Controller) { all = append(all, c) })
		return all, nil
	}
	c := f.ctrls[name]
	if c == nil {
		return nil, fmt.Errorf("no cluster %q (clusters: %s): %w", name, strings.Join(f.names, ", "), api.ErrNotFound)
	}
	return []*Controller{c}, nil
}

// find is the controller of one resource: the request's cluster, or the
// one cluster that has kind/name.
func (f *Fleet) find(ctx context.Context, kind, name string) (*Controller, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return nil, err
	}
	if len(cs) == 1 {
		return cs[0], nil
	}
	var found []*Controller
	var names []string
	for _, c := range cs {
		if c.has(vocab.Key(kind, name)) {
			found = append(found, c)
			names = append(names, c.Name())
		}
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("no resource %s/%s in any cluster: %w", kind, name, api.ErrNotFound)
	case 1:
		return found[0], nil
	}
	return nil, fmt.Errorf("%s/%s exists in clusters %s: name one with ?cluster=: %w", kind, name, strings.Join(names, " and "), api.ErrInvalid)
}

func (c *Controller) has(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.resources[key] != nil
}

// setShared makes the next runtime read the new shared source.
func (c *Controller) setShared(s *SharedSource) {
	c.rtMu.Lock()
	c.shared = s
	c.rtMu.Unlock()
}

// Resources lists the resources of every cluster (or the request's),
// sorted by cluster, then kind and name, with each cluster's status.
func (f *Fleet) Resources(ctx context.Context) (api.ResourceList, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return api.ResourceList{}, err
	}
	var lists []api.ResourceList
	for _, c := range cs {
		l, err := c.Resources(ctx)
		if err != nil {
			return api.ResourceList{}, err
		}
		lists = append(lists, l)
	}
	out := lists[0]
	out.Clusters = nil
	for i, l := range lists {
		out.Clusters = append(out.Clusters, api.ClusterStatus{Name: cs[i].Name(), PassStatus: l.PassStatus})
	}
	if len(lists) == 1 {
		return out, nil
	}
	out.Counts = map[vocab.Status]int{}
	out.Resources = nil
	var problems, clusterProblems []string
	for _, l := range lists[1:] {
		if l.LastPass == nil || (out.LastPass != nil && l.LastPass.Before(*out.LastPass)) {
			out.LastPass = l.LastPass // the oldest: every cluster passed since
		}
		if l.LastObserved == nil || (out.LastObserved != nil && l.LastObserved.Before(*out.LastObserved)) {
			out.LastObserved = l.LastObserved // the oldest: every cluster was observed since
		}
		out.PassDurationMs = max(out.PassDurationMs, l.PassDurationMs)
		if out.LoadError == nil {
			out.LoadError = l.LoadError
		}
	}
	for i, l := range lists {
		for st, n := range l.Counts {
			out.Counts[st] += n
		}
		out.Resources = append(out.Resources, l.Resources...)
		if l.SourceError != "" {
			problems = append(problems, cs[i].Name()+": "+l.SourceError)
		}
		if l.ClusterError != "" {
			clusterProblems = append(clusterProblems, cs[i].Name()+": "+l.ClusterError)
		}
	}
	out.SourceError = strings.Join(problems, "; ")
	out.ClusterError = strings.Join(clusterProblems, "; ")
	return out, nil
}

// onResource is what ask answers of the controller of the resource's
// cluster: the request's, or the one cluster that has it.
func onResource[T any](ctx context.Context, f *Fleet, kind, name string, ask func(*Controller, context.Context, string, string) (T, error)) (T, error) {
	c, err := f.find(ctx, kind, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return ask(c, ctx, kind, name)
}

// Resource is one resource of the request's cluster or the one cluster
// that has it.
func (f *Fleet) Resource(ctx context.Context, kind, name string) (api.ResourceDetail, error) {
	return onResource(ctx, f, kind, name, (*Controller).Resource)
}

// Manifest is a declared resource's YAML document.
func (f *Fleet) Manifest(ctx context.Context, kind, name string) (api.Manifest, error) {
	return onResource(ctx, f, kind, name, (*Controller).Manifest)
}

// Live is what the resource's cluster answers for it now.
func (f *Fleet) Live(ctx context.Context, kind, name string) (api.Live, error) {
	return onResource(ctx, f, kind, name, (*Controller).Live)
}

// TaskLog is the log of the resource's last Proxmox task.
func (f *Fleet) TaskLog(ctx context.Context, kind, name string) (api.TaskLog, error) {
	return onResource(ctx, f, kind, name, (*Controller).TaskLog)
}

// Snapshots lists a guest's snapshots.
func (f *Fleet) Snapshots(ctx context.Context, kind, name string) (api.SnapshotList, error) {
	return onResource(ctx, f, kind, name, (*Controller).Snapshots)
}

// Rollback rolls a guest back to a snapshot.
func (f *Fleet) Rollback(ctx context.Context, kind, name, snapshot string) (api.RollbackResult, error) {
	c, err := f.find(ctx, kind, name)
	if err != nil {
		return api.RollbackResult{}, err
	}
	return c.Rollback(ctx, kind, name, snapshot)
}

// Delete deletes one resource of its cluster once.
func (f *Fleet) Delete(ctx context.Context, kind, name string) error {
	c, err := f.find(ctx, kind, name)
	if err != nil {
		return err
	}
	return c.Delete(ctx, kind, name)
}

// Sync syncs one resource, or every resource of the request's cluster or
// of all clusters; a dry run answers the plan of that sync.
func (f *Fleet) Sync(ctx context.Context, kind, name string, o api.SyncOptions) (*api.Plan, error) {
	if kind != "" || name != "" {
		c, err := f.find(ctx, kind, name)
		if err != nil {
			return nil, err
		}
		return tagPlan(c.Sync(ctx, kind, name, o))(c.Name(), f.multi)
	}
	cs, err := f.pick(ctx)
	if err != nil {
		return nil, err
	}
	// A sync pulls Git first, of one cluster as of all: a fetch another
	// cluster's pass made a moment ago must not stand in for it.
	if !o.DryRun {
		f.invalidate()
	}
	var plans []api.Plan
	for _, c := range cs {
		p, err := c.Sync(ctx, "", "", o)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name(), err)
		}
		if p != nil {
			plans = append(plans, withCluster(*p, c.Name(), f.multi))
		}
	}
	if len(plans) == 0 {
		return nil, nil
	}
	merged := api.MergePlans(plans)
	return &merged, nil
}

func tagPlan(p *api.Plan, err error) func(string, bool) (*api.Plan, error) {
	return func(name string, multi bool) (*api.Plan, error) {
		if p == nil || err != nil {
			return p, err
		}
		q := withCluster(*p, name, multi)
		return &q, nil
	}
}

// withCluster names the cluster of a plan and of its actions; the single
// cluster section's plans stay as they were.
func withCluster(p api.Plan, name string, multi bool) api.Plan {
	if !multi {
		return p
	}
	p.Cluster = name
	p.Actions = slices.Clone(p.Actions)
	for i := range p.Actions {
		p.Actions[i].Cluster = name
	}
	return p
}

func (f *Fleet) invalidate() {
	f.mu.Lock()
	s := f.shared
	f.mu.Unlock()
	if s != nil {
		s.Invalidate()
	}
}

// Refresh pulls Git now (one fetch for every cluster), then each runs a
// pass.
func (f *Fleet) Refresh(ctx context.Context) error {
	cs, err := f.pick(ctx)
	if err != nil {
		return err
	}
	f.invalidate()
	var errs []error
	for _, c := range cs {
		if err := c.Refresh(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(cs) {
		return errs[0]
	}
	return nil
}

// Plan is the plan document of the request's cluster, or one of every
// cluster with each action naming its cluster. A cluster that cannot be
// planned fails the whole plan: a partial one would read as complete.
func (f *Fleet) Plan(ctx context.Context, revision string) (api.Plan, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return api.Plan{}, err
	}
	plans := make([]api.Plan, len(cs))
	errs := make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := c.Plan(ctx, revision)
			if err != nil && f.multi {
				err = fmt.Errorf("cluster %s: %w", c.Name(), err)
			}
			plans[i], errs[i] = withCluster(p, c.Name(), f.multi), err
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return api.Plan{}, err
	}
	return api.MergePlans(plans), nil
}

// TestSettings checks each cluster's connection and the source.
func (f *Fleet) TestSettings(ctx context.Context, cfg *config.Config) (api.TestResult, error) {
	if !f.multi {
		return f.ctrls[f.names[0]].TestSettings(ctx, cfg)
	}
	res := api.TestResult{OK: true}
	only := api.ClusterFrom(ctx) // ?cluster= of GET /api/v1/check
	if only != "" && !slices.Contains(f.names, only) {
		return api.TestResult{}, fmt.Errorf("no cluster %q: %w", only, api.ErrNotFound)
	}
	for _, n := range f.names {
		cc, ok := cfg.ForCluster(n)
		if !ok || only != "" && n != only {
			continue
		}
		r, err := f.ctrls[n].TestSettings(ctx, cc)
		if err != nil {
			return api.TestResult{}, err
		}
		for _, ch := range r.Checks {
			ch.Name = n + ": " + ch.Name
			res.Checks = append(res.Checks, ch)
		}
		res.OK = res.OK && r.OK
	}
	return res, nil
}

// Revisions lists the watched branch's commits with every cluster's pass
// results added up.
func (f *Fleet) Revisions(ctx context.Context) (api.RevisionList, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return api.RevisionList{}, err
	}
	out, err := cs[0].Revisions(ctx)
	if err != nil || len(cs) == 1 {
		return out, err
	}
	for _, c := range cs[1:] {
		l, err := c.Revisions(ctx)
		if err != nil {
			return out, err
		}
		byHash := map[string]api.Revision{}
		for _, r := range l.Revisions {
			byHash[r.Hash] = r
		}
		for i, r := range out.Revisions {
			o, ok := byHash[r.Hash]
			if ok {
				out.Revisions[i].LoadErrors = append(out.Revisions[i].LoadErrors, o.LoadErrors...)
			}
			if !ok || o.Result == nil {
				continue
			}
			out.Revisions[i].Current = r.Current && o.Current
			if r.Result == nil {
				res := *o.Result
				out.Revisions[i].Result = &res
				continue
			}
			sum := *r.Result
			sum.Counts = addCounts(sum.Counts, o.Result.Counts)
			if o.Result.LastPass.After(sum.LastPass) {
				sum.LastPass = o.Result.LastPass
			}
			out.Revisions[i].Result = &sum
		}
	}
	return out, nil
}

func addCounts(a, b map[vocab.Status]int) map[vocab.Status]int {
	out := map[vocab.Status]int{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

// Pin pins a revision on every cluster (or the request's).
func (f *Fleet) Pin(ctx context.Context, revision, by string) (api.Pin, error) {
	cs, err := f.pick(ctx)
	if err != nil {
		return api.Pin{}, err
	}
	var p api.Pin
	for _, c := range cs {
		if p, err = c.Pin(ctx, revision, by); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Unpin follows the branch head again on every cluster (or the request's).
func (f *Fleet) Unpin(ctx context.Context, by string) error {
	cs, err := f.pick(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, c := range cs {
		if err := c.Unpin(ctx, by); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) == len(cs) {
		return errs[0]
	}
	return nil
}

// Adopt takes ownership of the unowned guest at a manifest's VMID in the
// resource's cluster.
func (f *Fleet) Adopt(ctx context.Context, kind, name string, dryRun bool) (api.AdoptResult, error) {
	c, err := f.find(ctx, kind, name)
	if err != nil {
		return api.AdoptResult{}, err
	}
	return c.Adopt(ctx, kind, name, dryRun)
}

// Lead runs every cluster's loop as the leader among replicas until ctx
// ends (Controller.Lead), each with its cluster's part of cfg.
func (f *Fleet) Lead(ctx context.Context, cfg *config.Config) error {
	var wg sync.WaitGroup
	errs := make([]error, len(f.names))
	for i, n := range f.names {
		cc := cfg
		if f.multi && cfg != nil {
			cc, _ = cfg.ForCluster(n)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.ctrls[n].Lead(ctx, cc)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Leading tells whether this replica's loops run as the leader.
func (f *Fleet) Leading() bool {
	for _, c := range f.ctrls {
		if !c.Leading() {
			return false
		}
	}
	return len(f.ctrls) > 0
}
