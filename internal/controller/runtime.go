package controller

import (
	"errors"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/metrics"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/source"
	"github.com/proxmops/proxmops/internal/vocab"
)

// runtime is what the settings build: the Proxmox client, the Git syncer
// and the limits shared by every engine of a pass. ApplySettings replaces
// it as a whole, between passes.
type runtime struct {
	cfg *config.Config
	// client is nil when the cluster is not configured or its settings are
	// wrong; clusterErr says why in words.
	client     *pve.Client
	clusterErr string
	// syncer is nil when the source is not configured; sourceErr says why.
	syncer    gitSource
	sourceErr string
	limiter   *dispatch.Limiter
	// records keeps the engine's records of its downloads (the store).
	records engine.Records
	// taskLogs keeps finished tasks' log lines between passes.
	taskLogs *engine.TaskLogCache
	// provisioner applies spec.provision, with the key and pinned host
	// keys kept in the store.
	provisioner *provision.Runner
	// reads keeps guests' configurations between passes and spreads their
	// full reads over the passes, a budget of requests each
	// (reconcile.driftCheckInterval).
	reads *engine.ReadCache
	// health is the health checks' verdict on a resource
	// (Controller.checkedHealth), for metadata.dependsOn's waits.
	health func(key string) (vocab.Health, bool)
}

// engine returns an engine on the runtime's client sharing its limiter.
// engine is an engine on the runtime's cluster; held (with prune false)
// says why a configured prune is held back this pass.
func (rt *runtime) engine(prune bool, held string, log *slog.Logger) *engine.Engine {
	return engine.New(rt.client, engine.Options{
		Prune:       prune,
		PruneHeld:   held,
		Concurrency: rt.cfg.Reconcile.Concurrency,
		Limiter:     rt.limiter,
		Logger:      log,
		Records:     rt.records,
		TaskLogs:    rt.taskLogs,
		Provisioner: rt.provisioner,
		Reads:       rt.reads,
		Health:      rt.health,
	})
}

func (rt *runtime) close() {
	if rt != nil && rt.client != nil {
		rt.client.Close()
	}
}

// buildRuntime makes a runtime from the effective configuration.
func (c *Controller) buildRuntime(cfg *config.Config) *runtime {
	rt := &runtime{cfg: cfg, taskLogs: &engine.TaskLogCache{},
		reads: engine.NewReadCache(cfg.Reconcile.DriftCheckInterval, c.clock.Now), health: c.checkedHealth}
	rt.reads.SetInterval(cfg.Reconcile.Interval)
	if c.st.Store != nil {
		st := c.clusterStore()
		rt.records = st
		rt.provisioner = provision.NewRunner(provision.NewKeys(st, cfg.Provision.SSHKeyFile))
		if c.opts.Guard != nil {
			rt.provisioner.Fence = c.opts.Guard.Do // each SSH step under the term's check
		}
	}
	conc := cfg.Reconcile.Concurrency
	if conc <= 0 {
		conc = config.DefaultConcurrency
	}
	rt.limiter = dispatch.NewLimiter(dispatch.Limits{Total: conc, PerNode: c.opts.PerNode, PerStorage: c.opts.PerStorage})

	client, err := newClient(cfg.Cluster, c.opts.PVE, c.m, c.Name(), c.opts.Guard)
	if err != nil {
		rt.clusterErr = err.Error()
	} else {
		rt.client = client
	}

	if c.shared != nil {
		rt.syncer = clusterSource{shared: c.shared, sub: c.opts.ClusterPath}
		return rt
	}
	syncer, err := c.newSyncer(cfg.Source)
	if err != nil {
		rt.sourceErr = err.Error()
	} else {
		rt.syncer = syncer
	}
	return rt
}

// errNotConfigured prefixes the words shown when settings are missing.
var errNotConfigured = errors.New("not configured")

// newClient builds a Proxmox client from cluster settings, or says in words
// what is missing. With guard, every write request is sent under the
// leader's fence (leader.Guard.Transport).
func newClient(cl config.Cluster, adjust func(*pve.Config), m *metrics.Metrics, cluster string, guard *leader.Guard) (*pve.Client, error) {
	var missing []string
	if cl.Endpoint == "" {
		missing = append(missing, "endpoint")
	}
	if cl.TokenID == "" {
		missing = append(missing, "tokenId")
	}
	if cl.TokenSecret == "" {
		missing = append(missing, "tokenSecret")
	}
	if len(missing) > 0 {
		return nil, &settingsError{what: "the Proxmox VE cluster", section: "cluster", missing: missing}
	}
	endpoint, _, err := config.NormalizeEndpoint(cl.Endpoint)
	if err != nil {
		return nil, err
	}
	pc := pve.Config{
		Endpoint:           endpoint,
		TokenID:            cl.TokenID,
		TokenSecret:        cl.TokenSecret,
		CAFile:             cl.CAFile,
		Fingerprint:        cl.Fingerprint,
		InsecureSkipVerify: cl.InsecureSkipVerify,
	}
	if m != nil {
		pc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			return &countingTransport{next: rt, m: m, cluster: cluster}
		}
	}
	if adjust != nil {
		adjust(&pc)
	}
	if guard != nil {
		inner := pc.WrapTransport
		pc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
			if inner != nil {
				rt = inner(rt)
			}
			return guard.Transport(rt)
		}
	}
	return pve.New(pc)
}

// settingsError says which settings of a section are missing.
type settingsError struct {
	what, section string
	missing       []string
}

func (e *settingsError) Error() string {
	keys := make([]string, len(e.missing))
	for i, k := range e.missing {
		keys[i] = e.section + "." + k
	}
	return e.what + " is " + errNotConfigured.Error() + ": " + strings.Join(keys, ", ") +
		" missing; set them on the Settings page or in the configuration file"
}

func (e *settingsError) Unwrap() error { return errNotConfigured }

func (c *Controller) newSyncer(s config.Source) (*source.Syncer, error) {
	if s.RepoURL == "" {
		return nil, &settingsError{what: "the Git source", section: "source", missing: []string{"repoURL"}}
	}
	opts := source.FromConfig(s)
	opts.Logger = c.log.With("component", "source")
	if opts.CacheDir == "" {
		opts.CacheDir = config.DefaultCacheDir()
	}
	return source.New(opts)
}

// countingTransport feeds the Proxmox request and error metrics.
type countingTransport struct {
	next    http.RoundTripper
	m       *metrics.Metrics
	cluster string
}

func (t *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		t.m.PVERequests.WithLabelValues(r.Method, "error", t.cluster).Inc()
		reason := "connection"
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			reason = "timeout"
		}
		t.m.PVEErrors.WithLabelValues(reason, t.cluster).Inc()
		return nil, err
	}
	t.m.PVERequests.WithLabelValues(r.Method, strconv.Itoa(resp.StatusCode), t.cluster).Inc()
	if resp.StatusCode >= 400 {
		t.m.PVEErrors.WithLabelValues("status", t.cluster).Inc()
	}
	return resp, nil
}

// CloseIdleConnections lets pve.Client.Close reach the real transport.
func (t *countingTransport) CloseIdleConnections() {
	if ci, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		ci.CloseIdleConnections()
	}
}
