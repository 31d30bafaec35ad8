package engine

import (
	"log/slog"
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
	// Health, when set, gives a resource's health as the daemon's health
	// checks (spec.healthCheck) see it ("Kind/name"; ok false when none
	// checks it): a resource that depends on it (metadata.dependsOn) waits
	// until it is Healthy.
	Health func(key string) (vocab.Health, bool)
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
	// sdnReload says why the last SDN apply may have left a node without
	// its vnets' bridges (its network reload failed, or the apply ended
	// before the reloads were seen): the configuration is committed, so
	// nothing is pending, but a later apply must reload them.
	sdnReload *failedReloads
}

// failedReloads is Engine.sdnReload, shared by the copies Delete makes.
type failedReloads struct {
	mu  sync.Mutex
	why string // "" when the last apply reloaded every node
}

func (f *failedReloads) set(why string) {
	f.mu.Lock()
	f.why = why
	f.mu.Unlock()
}

func (f *failedReloads) get() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.why
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
