package controller

import (
	"context"
	"errors"
	"log/slog"
	"math/rand"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/metrics"
	"github.com/proxmops/proxmops/internal/notify"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Options configure New. Store is required.
type Options struct {
	// Config is the effective configuration at start: file, environment
	// and flags, with the settings saved from the UI over them
	// (config.WithOverlay). ApplyConfig replaces it later. Nil means the
	// defaults.
	Config *config.Config
	Store  *store.Store
	// Hub receives the SSE events; nil discards them.
	Hub events.Publisher
	// Metrics receive pass, action, Proxmox and Git figures; nil makes a set.
	Metrics *metrics.Metrics
	Logger  *slog.Logger
	// Clock drives the loop (default: the wall clock).
	Clock Clock
	// Jitter spreads passes by up to this fraction of the interval, either
	// way (default 0.1; negative: none).
	Jitter float64
	// Seed seeds the jitter (0: from the time).
	Seed int64
	// QueueLimit bounds the actions queued or running at once; more are
	// deferred to a later pass, with a logged reason (default 256).
	QueueLimit int
	// PerNode and PerStorage bound running actions per Proxmox node and per
	// storage (default 2 each); reconcile.concurrency bounds them overall.
	PerNode, PerStorage int
	// ShutdownGrace is how long Run waits for running actions after its
	// context ends before it records them as interrupted (default 30s).
	ShutdownGrace time.Duration
	// MinPassGap is the least time between a pass and the re-scan that an
	// action finishing asks for (default 2s), so a burst of finished
	// actions costs one observation, not one each.
	MinPassGap time.Duration
	// PVE adjusts the Proxmox client settings (tests shorten task polling).
	PVE func(*pve.Config)
	// Secrets resolves manifests' secret references (default
	// engine.ReadSecret).
	Secrets engine.SecretReader
	// Replicated: several replicas share the store and only the leader
	// runs the loop (Lead). The leader writes its status list after each
	// pass; a follower's Resources is that list.
	Replicated bool
	// Cluster names the cluster of a configuration that lists several
	// (clusters:); "" is the single cluster section, named "default". A
	// named controller keeps its state, history and host-key pins apart
	// from the other clusters' (NewFleet sets it).
	Cluster string
	// Source, with Cluster, is the Git source every cluster shares; the
	// controller reads its ClusterPath sub-directory of it.
	Source      *SharedSource
	ClusterPath string
	// Guard, with Replicated, fences this replica's writes: each Proxmox
	// write request and each state or history write is checked in the
	// database against the term that made it (docs/ha.md#fencing).
	Guard *leader.Guard
	// Notifier is told of each transition (notify.Dispatcher); nil
	// drops them. A fleet's controllers share one.
	Notifier notify.Notifier
}

// Controller is the control loop and the daemon's backend.
type Controller struct {
	opts  Options
	log   *slog.Logger
	clock Clock
	st    ledger
	hub   events.Publisher
	m     *metrics.Metrics
	rng   *rand.Rand

	dispatcher *dispatch.Dispatcher
	workCtx    context.Context // actions run under it; cancelled after the shutdown grace
	workCancel context.CancelFunc
	stopping   atomic.Bool
	// leading: Lead runs; fenced: leadership ended, nothing more is
	// written; abortOnStop: stop without the grace period (Lead).
	leading, fenced, abortOnStop atomic.Bool

	rtMu    sync.Mutex
	shared  *SharedSource // Options.Source, replaced by the fleet on new settings
	rt      *runtime
	pending *config.Config // saved from the UI, applied before the next pass

	mu        sync.Mutex // guards what follows
	desired   *desiredState
	sourceErr string
	// sourceDown: a source-error notification went out and the source
	// has not been read well since.
	sourceDown bool
	loadErr    *api.LoadError // the branch head's load failure; nil once a head loads
	lastPass   *time.Time
	// clusterErr says why the last pass could not observe the cluster;
	// observedAt is when one last did (nil: not since the start).
	clusterErr string
	observedAt *time.Time
	passDur    time.Duration
	resources  map[string]*resource
	records    map[string]record // persisted: last status and history event per resource
	inflight   map[string]inflightAction
	ready      bool
	dirty      bool // records changed since last saved
	// outcomes counts the action ends finish recorded; endedAt holds each
	// resource's number there until a pass that read the cluster after
	// that end has planned it (a pass reading it before must not judge it).
	outcomes uint64
	endedAt  map[string]uint64

	reqMu     sync.Mutex
	req       request
	rescanAt  time.Time // zero: no re-scan asked for
	nextPull  time.Time
	lastPass0 time.Time // when the last pass ended (clock time)
	wake      chan struct{}

	pins   pins         // the pinned revision and the pass results per commit
	probes healthProbes // spec.healthCheck's probers (healthchecks.go), under mu

	running sync.WaitGroup // Run
	planned func()         // tests: runs between a pass's plan and its use
	passes  atomic.Int64   // passes begun, and ended (odd while one runs)
}

// desiredState is the last good load of the repository.
type desiredState struct {
	set     *manifest.Set
	desired *engine.Desired
	commit  string
	message string
	author  string // the commit's author, for what the manifest asks (an adoption)
	byKey   map[string]manifest.Resource
	texts   map[string]string // "Kind/name" -> its YAML document (manifestTexts)
}

// request is what the next pass must do beyond observing.
type request struct {
	pull  bool            // fetch Git first
	force bool            // act even when reconcile.autoSync is off (sync all)
	keys  map[string]bool // act on these now (sync one), policy manual included
	// pruneFor and rebootFor are a sync's options (Sync): the keys ("*":
	// all) whose prune deletion may run, or whose changes apply by reboot.
	pruneFor, rebootFor map[string]bool
	// by names who asked, per key ("*": all); an action without one was
	// started by the pass itself.
	by map[string]api.Actor
}

// actorFor is who started the action on key in this pass.
func (r request) actorFor(key string) api.Actor {
	if a, ok := r.by[key]; ok {
		return a
	}
	if a, ok := r.by[allKeys]; ok {
		return a
	}
	return api.PassActor
}

func (r *request) merge(o request) {
	r.pull = r.pull || o.pull
	r.force = r.force || o.force
	add := func(to *map[string]bool, from map[string]bool) {
		for k := range from {
			if *to == nil {
				*to = map[string]bool{}
			}
			(*to)[k] = true
		}
	}
	for k, a := range o.by { // the latest asker names the action
		if r.by == nil {
			r.by = map[string]api.Actor{}
		}
		r.by[k] = a
	}
	add(&r.keys, o.keys)
	add(&r.pruneFor, o.pruneFor)
	add(&r.rebootFor, o.rebootFor)
}

func (r request) immediate() bool { return r.pull || r.force || len(r.keys) > 0 }

// New builds a controller. It reads the persisted state (last statuses,
// actions left in flight by a previous run) from the store; Run starts the
// loop.
func New(ctx context.Context, opts Options) (*Controller, error) {
	if opts.Store == nil {
		return nil, errors.New("controller: Store is required")
	}
	if opts.Config == nil {
		opts.Config = config.Defaults()
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Cluster != "" {
		opts.Logger = opts.Logger.With("cluster", opts.Cluster)
	}
	if opts.Metrics == nil {
		opts.Metrics = metrics.New()
	}
	if opts.Hub == nil {
		opts.Hub = discardHub{}
	}
	if opts.Notifier == nil {
		opts.Notifier = notify.Discard{}
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	if opts.Jitter == 0 {
		opts.Jitter = 0.1
	}
	if opts.QueueLimit <= 0 {
		opts.QueueLimit = 256
	}
	if opts.PerNode <= 0 {
		opts.PerNode = 2
	}
	if opts.PerStorage <= 0 {
		opts.PerStorage = 2
	}
	if opts.ShutdownGrace <= 0 {
		opts.ShutdownGrace = 30 * time.Second
	}
	if opts.MinPassGap == 0 {
		opts.MinPassGap = 2 * time.Second
	}
	seed := opts.Seed
	if seed == 0 {
		seed = time.Now().UnixNano()
	}
	c := &Controller{
		opts:       opts,
		log:        opts.Logger.With("component", "controller"),
		clock:      opts.Clock,
		st:         newLedger(opts.Store, opts.Guard),
		hub:        opts.Hub,
		m:          opts.Metrics,
		rng:        rand.New(rand.NewSource(seed)),
		dispatcher: dispatch.New(dispatch.Limits{}), // de-duplication only: the engine's limiter bounds the work
		resources:  map[string]*resource{},
		records:    map[string]record{},
		inflight:   map[string]inflightAction{},
		endedAt:    map[string]uint64{},
		wake:       make(chan struct{}, 1),
		shared:     opts.Source,
	}
	c.workCtx, c.workCancel = context.WithCancel(context.WithoutCancel(ctx))
	c.rt = c.buildRuntime(opts.Config)
	if err := c.loadState(ctx); err != nil {
		return nil, err
	}
	if err := c.loadPins(ctx); err != nil {
		return nil, err
	}
	return c, nil
}

type discardHub struct{}

func (discardHub) Publish(string, any) error { return nil }

// Run runs passes until ctx ends, then shuts down gracefully: no new
// action starts, running ones get Options.ShutdownGrace to finish and are
// recorded as interrupted otherwise. It returns after that.
func (c *Controller) Run(ctx context.Context) error {
	c.running.Add(1)
	defer c.running.Done()
	c.recoverInterrupted(ctx)
	for {
		delay := c.nextDelay()
		t := c.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			c.probes.wg.Wait() // the probers end with ctx
			c.shutdown()
			return nil
		case <-t.C():
		case <-c.wake:
			t.Stop()
		}
		req, due := c.takeRequest()
		if !due {
			continue
		}
		c.passes.Add(1)
		c.pass(ctx, req)
		c.passes.Add(1)
	}
}

// nextDelay is the time until the next pass is due: an immediate request,
// a re-scan, or the next interval pull.
func (c *Controller) nextDelay() time.Duration {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	now := c.clock.Now()
	if c.req.immediate() {
		return 0
	}
	at := c.nextPull
	if !c.rescanAt.IsZero() && c.rescanAt.Before(at) {
		at = c.rescanAt
	}
	return max(at.Sub(now), 0)
}

// takeRequest returns what the pass due now must do, or false when nothing
// is due yet (a wake-up that only moved a timer).
func (c *Controller) takeRequest() (request, bool) {
	c.reqMu.Lock()
	defer c.reqMu.Unlock()
	now := c.clock.Now()
	req := c.req
	due := req.immediate()
	if !now.Before(c.nextPull) {
		req.pull, due = true, true
	}
	if !c.rescanAt.IsZero() && !now.Before(c.rescanAt) {
		due = true
	}
	if !due {
		return request{}, false
	}
	c.req = request{}
	c.rescanAt = time.Time{}
	return req, true
}

// ask queues work for the next pass and wakes the loop.
func (c *Controller) ask(r request) {
	c.reqMu.Lock()
	c.req.merge(r)
	c.reqMu.Unlock()
	c.poke()
}

// askRescan asks for a pass without a Git pull, no sooner than MinPassGap
// after the last one ended.
func (c *Controller) askRescan() {
	c.reqMu.Lock()
	at := c.lastPass0.Add(c.opts.MinPassGap)
	if now := c.clock.Now(); at.Before(now) {
		at = now
	}
	if c.rescanAt.IsZero() || at.Before(c.rescanAt) {
		c.rescanAt = at
	}
	c.reqMu.Unlock()
	c.poke()
}

func (c *Controller) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// schedulePull sets the next interval pass from now, with jitter.
func (c *Controller) schedulePull(interval time.Duration) {
	if interval <= 0 {
		interval = config.DefaultInterval
	}
	d := interval
	if j := c.opts.Jitter; j > 0 {
		c.reqMu.Lock()
		spread := (c.rng.Float64()*2 - 1) * j * float64(interval)
		c.reqMu.Unlock()
		d += time.Duration(spread)
	}
	now := c.clock.Now()
	c.reqMu.Lock()
	c.nextPull = now.Add(d)
	c.lastPass0 = now
	c.reqMu.Unlock()
}

func (c *Controller) markPassEnd() {
	c.reqMu.Lock()
	c.lastPass0 = c.clock.Now()
	c.reqMu.Unlock()
}

// runtime returns the runtime for a pass, first applying settings saved
// from the UI since the last one.
func (c *Controller) runtime() *runtime {
	c.rtMu.Lock()
	defer c.rtMu.Unlock()
	if c.pending != nil {
		old := c.rt
		c.rt = c.buildRuntime(c.pending)
		c.pending = nil
		old.close()
		c.log.Info("settings applied", "cluster", c.rt.clusterErr == "", "source", c.rt.sourceErr == "")
	}
	return c.rt
}

// currentRuntime is the runtime in force, without applying pending settings.
func (c *Controller) currentRuntime() *runtime {
	c.rtMu.Lock()
	defer c.rtMu.Unlock()
	return c.rt
}

// ApplyConfig takes the effective configuration after settings were saved
// from the UI: the next pass, started at once, uses a new Proxmox client
// and Git source built from it. It does not block and keeps cfg as is.
func (c *Controller) ApplyConfig(cfg *config.Config) {
	cp := cfg.Clone()
	c.rtMu.Lock()
	c.pending = cp
	c.rtMu.Unlock()
	c.ask(request{pull: true})
}

// Ready tells whether the first pass is done.
func (c *Controller) Ready() bool {
	if c.opts.Replicated && !c.leading.Load() {
		return true // a follower serves; the leader's first pass is the leader's
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ready
}

// shutdown waits for running actions for the grace period, then cancels
// them and records what did not finish as interrupted.
func (c *Controller) shutdown() {
	if c.abortOnStop.Load() {
		// Leadership ended: another replica may act from now on.
		c.fence()
		c.dispatcher.Wait()
		return
	}
	c.stopping.Store(true)
	active := c.dispatcher.Active()
	if len(active) > 0 {
		c.log.Info("waiting for running actions before stopping", "actions", len(active), "grace", c.opts.ShutdownGrace.String())
	}
	done := make(chan struct{})
	go func() {
		c.dispatcher.Wait()
		close(done)
	}()
	t := c.clock.NewTimer(c.opts.ShutdownGrace)
	// The grace period is real time even under a fake clock, so a test's
	// shutdown cannot hang on a clock nobody advances.
	rt := time.NewTimer(c.opts.ShutdownGrace)
	defer rt.Stop()
	select {
	case <-done:
		t.Stop()
	case <-t.C():
	case <-rt.C:
	}
	c.workCancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.log.Warn("actions did not stop after cancellation", "actions", c.dispatcher.Active())
	}
	c.saveState(context.Background())
	c.currentRuntime().close()
}

// Close stops actions still running (for callers that never ran Run).
func (c *Controller) Close() {
	c.stopping.Store(true)
	c.workCancel()
	c.dispatcher.Wait()
	c.currentRuntime().close()
}

// statusCounts counts resources per status as every summary does
// (vocab.Count), every status present (caller holds mu).
func (c *Controller) statusCounts() map[vocab.Status]int {
	rs := make([]*resource, 0, len(c.resources))
	for _, r := range c.resources {
		rs = append(rs, r)
	}
	return vocab.Count(rs, func(r *resource) vocab.Status { return r.sum.Status })
}
