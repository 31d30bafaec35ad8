package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/controller"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/metrics"
	"github.com/proxmops/proxmops/internal/notify"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/store"
)

// EnvEncryptionKey names the environment variable that can hold the
// settings encryption key instead of the key file.
const EnvEncryptionKey = "PROXMOPS_ENCRYPTION_KEY"

// notifyShutdownGrace is how long a stopping daemon waits for the
// notifications it still holds to be delivered.
const notifyShutdownGrace = 15 * time.Second

// Options configure Run. Config and Logger are required.
type Options struct {
	Config *config.Config
	Logger *slog.Logger
	// Logs is the ring the logger feeds (see NewLogger); nil makes one.
	Logs *logring.Ring
	// SetupOutput receives the first-run setup token (default os.Stdout).
	SetupOutput io.Writer
	// UI is the built web UI; nil serves the server's notice.
	UI fs.FS
	// Listener, when set, is served instead of listening on
	// Config.Server.Addr.
	Listener net.Listener
	// EncryptionKey overrides $PROXMOPS_ENCRYPTION_KEY.
	EncryptionKey string
	// Prepare runs once the store is open, before the server starts (the
	// demo creates its admin account there).
	Prepare func(ctx context.Context, st *store.Store) error
	// Controller adjusts the controller's options (the demo and tests
	// shorten delays).
	Controller func(*controller.Options)
	// Started is called with the address served, once listening.
	Started func(addr net.Addr)
}

// NewLogger builds the daemon's logger: text or JSON on w, every line at
// or above the level also kept in the returned ring for the UI.
func NewLogger(c config.Log, w io.Writer) (*slog.Logger, *logring.Ring, error) {
	var level slog.Level
	if c.Level != "" {
		if err := level.UnmarshalText([]byte(c.Level)); err != nil {
			return nil, nil, fmt.Errorf("log.level %q: want debug, info, warn or error", c.Level)
		}
	}
	hopts := &slog.HandlerOptions{Level: level, ReplaceAttr: logring.Redact}
	var h slog.Handler
	switch strings.ToLower(c.Format) {
	case "", "text":
		h = slog.NewTextHandler(w, hopts)
	case "json":
		h = slog.NewJSONHandler(w, hopts)
	default:
		return nil, nil, fmt.Errorf("log.format %q: want text or json", c.Format)
	}
	ring := logring.New(2000)
	return slog.New(ring.Handler(h, level)), ring, nil
}

// Run opens the store, starts the controller and serves HTTP until ctx
// ends, then stops both gracefully (running actions get the controller's
// grace period) and closes the store.
func Run(ctx context.Context, o Options) error {
	if o.Config == nil || o.Logger == nil {
		return errors.New("daemon: Config and Logger are required")
	}
	cfg, log := o.Config, o.Logger
	if o.Logs == nil {
		o.Logs = logring.New(2000)
	}
	key := o.EncryptionKey
	if key == "" {
		key = os.Getenv(EnvEncryptionKey)
	}
	addr := cfg.Server.Addr
	if o.Listener != nil {
		addr = o.Listener.Addr().String()
	}
	lock, err := lockWriter(cfg, addr)
	if err != nil {
		return err
	}
	if lock != nil {
		defer lock.Release()
	}
	st, closeStore, err := openStore(ctx, cfg, key, log)
	if err != nil {
		return err
	}
	defer closeStore()
	if o.Prepare != nil {
		if err := o.Prepare(ctx, st); err != nil {
			return err
		}
	}
	effective, err := effectiveConfig(ctx, st, cfg, log)
	if err != nil {
		return err
	}

	ln := o.Listener
	if ln == nil {
		ln, err = net.Listen("tcp", cfg.Server.Addr)
		if err != nil {
			return fmt.Errorf("listen on %s: %w", cfg.Server.Addr, err)
		}
	}
	hub := events.NewHub(1024)
	m := metrics.New()
	notifier := notify.New(effective.Notifications, notify.Options{PublicURL: effective.Server.PublicURL, Logger: log, State: st})
	defer func() {
		// Messages still in their coalescing window or being retried get a
		// little time to go out.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), notifyShutdownGrace)
		defer cancel()
		notifier.Shutdown(ctx)
	}()
	copts := controller.Options{Config: effective, Store: st, Hub: hub, Metrics: m, Logger: log, Notifier: notifier}
	sopts := server.Options{
		Store: st, Hub: hub, Logs: o.Logs, Logger: log, Metrics: m, Notifications: notifier,
		Config: cfg, UI: o.UI, SetupOutput: o.SetupOutput,
		TLSCertFile: cfg.Server.TLSCertFile, TLSKeyFile: cfg.Server.TLSKeyFile,
		TrustProxy: cfg.Server.TrustProxy,
	}
	reps, err := wireReplicas(cfg, ln.Addr(), hub, o.Logs, log, m, &copts, &sopts)
	if err != nil {
		ln.Close()
		return err
	}
	if reps != nil {
		defer reps.guard.Close()
	}
	if o.Controller != nil {
		o.Controller(&copts)
	}
	ctrl, err := controller.NewFleet(ctx, copts)
	if err != nil {
		ln.Close()
		return err
	}
	sopts.Backend, sopts.OnSettingsChanged = ctrl, ctrl.ApplyConfig
	srv, err := server.New(ctx, sopts)
	if err != nil {
		ctrl.Close()
		ln.Close()
		return err
	}
	if list, _ := ctrl.Resources(ctx); reps == nil && (list.SourceError != "" || list.ClusterError != "") {
		log.Warn("not fully configured yet: open the UI's Settings page", "source", list.SourceError, "cluster", list.ClusterError)
	}
	if lock != nil {
		if err := lock.SetAddr(ln.Addr().String()); err != nil {
			log.Warn("recording the listen address in the lock file failed", "err", err)
		}
	}
	if o.Started != nil {
		o.Started(ln.Addr())
	}
	return serve(ctx, ln, ctrl, srv, reps, log)
}

// lockWriter takes the single writer's lock of a SQLite database: a second
// daemon (or rotate-key) is refused with the first one's PID and address
// instead of reconciling beside it. On PostgreSQL several replicas share
// the database by design, so there is no lock (nil).
func lockWriter(cfg *config.Config, addr string) (*store.WriterLock, error) {
	if cfg.Server.Database != "" {
		return nil, nil
	}
	return store.LockWriter(cfg.Server.DatabasePath, "serve", addr)
}

// openStore opens the store and marks it in use (on PostgreSQL rotate-key
// refuses while any replica runs); closeStore undoes both.
func openStore(ctx context.Context, cfg *config.Config, key string, log *slog.Logger) (st *store.Store, closeStore func(), err error) {
	sopt := store.ServerOptions(cfg.Server, key)
	sopt.HistoryPerResource, sopt.HistoryTotal, sopt.Logger = cfg.Reconcile.HistoryPerResource, cfg.Reconcile.HistoryTotal, log
	st, err = store.Open(ctx, sopt)
	if err != nil {
		return nil, nil, err
	}
	inUse, err := st.MarkInUse(ctx)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return st, func() {
		inUse()
		st.Close()
	}, nil
}

// effectiveConfig is the configuration with the settings saved from the UI
// laid over it; their warnings are logged.
func effectiveConfig(ctx context.Context, st *store.Store, cfg *config.Config, log *slog.Logger) (*config.Config, error) {
	overlay, err := st.Overlay(ctx)
	if err != nil {
		return nil, err
	}
	effective, warnings, err := cfg.WithOverlay(overlay)
	if err != nil {
		return nil, fmt.Errorf("settings saved from the UI: %w", err)
	}
	for _, w := range warnings {
		log.Warn(w)
	}
	return effective, nil
}

// wireReplicas joins the replicas sharing a PostgreSQL database: the
// leader election, the fencing guard (the caller closes it) and request
// forwarding, set into the controller's and the server's options. Without
// a shared database it returns nil and the metrics report a single replica.
func wireReplicas(cfg *config.Config, addr net.Addr, hub *events.Hub, ring *logring.Ring, log *slog.Logger,
	m *metrics.Metrics, copts *controller.Options, sopts *server.Options) (*replicas, error) {
	dbURL := databaseURL(cfg)
	if dbURL == "" {
		self := leader.DefaultIdentity(cfg.HA.Replica, "")
		m.WatchLeader(func() leader.Status { return leader.Status{Role: api.ReplicaSingle, Self: self.Replica} })
		return nil, nil
	}
	reps, err := newReplicas(cfg, dbURL, addr, hub, ring, log)
	if err != nil {
		return nil, err
	}
	if reps.guard, err = leader.OpenGuard(dbURL, reps.elector.Timeout(), log); err != nil {
		return nil, err
	}
	copts.Hub, copts.Replicated, copts.Guard = reps.fan, true, reps.guard
	sopts.Replicas = reps.elector
	if sopts.ForwardTransport, err = forwardTransport(cfg); err != nil {
		reps.guard.Close()
		return nil, err
	}
	m.WatchLeader(reps.elector.Status)
	return reps, nil
}

// serve runs the controller (as a replica with reps) and the HTTP server
// until ctx ends or the server fails on its own, then stops both.
func serve(ctx context.Context, ln net.Listener, ctrl *controller.Fleet, srv *server.Server, reps *replicas, log *slog.Logger) error {
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	ctrlDone := make(chan error, 1)
	go func() {
		if reps != nil {
			ctrlDone <- reps.run(runCtx, ctrl, srv)
			return
		}
		ctrlDone <- ctrl.Run(runCtx)
	}()
	serveErr := srv.Serve(runCtx, ln)
	if serveErr != nil && ctx.Err() == nil {
		// The server failed on its own: stop the controller too.
		log.Error("HTTP server stopped", "err", serveErr)
	}
	cancel()
	ctrlErr := <-ctrlDone
	log.Info("proxmops stopped")
	return errors.Join(serveErr, ctrlErr)
}
