package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/forge"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/metrics"
	"github.com/proxmops/proxmops/internal/store"
)

// Backend is what the server needs of the controller. Sync,
// Refresh and Delete start work and return without waiting for it; progress
// reaches clients through the event hub. Errors wrapping api.ErrNotFound,
// api.ErrNotOwned, api.ErrConflict, api.ErrNotReady and api.ErrInvalid are
// answered 404, 409, 409, 503 and 400 with the error's words.
type Backend interface {
	// Resources is the status list (GET /api/v1/resources, SSE snapshots).
	Resources(ctx context.Context) (api.ResourceList, error)
	// Resource is one resource; the server adds its history from the store.
	Resource(ctx context.Context, kind, name string) (api.ResourceDetail, error)
	// Manifest is a declared resource's YAML document as in Git.
	Manifest(ctx context.Context, kind, name string) (api.Manifest, error)
	// Live is what Proxmox answers for the resource now (a guest's config),
	// else what the last pass observed.
	Live(ctx context.Context, kind, name string) (api.Live, error)
	// TaskLog is the log of the last Proxmox task of the resource's actions.
	TaskLog(ctx context.Context, kind, name string) (api.TaskLog, error)
	// Sync starts a sync of one resource (kind and name set) or of all
	// ("", "") with this sync's options; with DryRun it changes nothing and
	// returns the plan of that sync (else nil).
	Sync(ctx context.Context, kind, name string, o api.SyncOptions) (*api.Plan, error)
	// Refresh pulls Git now, then runs a pass.
	Refresh(ctx context.Context) error
	// Delete deletes one resource from the cluster once; the backend checks
	// ownership exactly as prune does.
	Delete(ctx context.Context, kind, name string) error
	// Plan is the plan document for a revision ("" = the watched one).
	Plan(ctx context.Context, revision string) (api.Plan, error)
	// Ready tells whether the first pass is done.
	Ready() bool
	// TestSettings checks the cluster connection (version, the privileges
	// proxmops needs and which are missing) and the Git source of c, and
	// reports each problem in words.
	TestSettings(ctx context.Context, c *config.Config) (api.TestResult, error)
}

// Options configure New. Store and Backend are required.
type Options struct {
	Store   *store.Store
	Backend Backend
	// Hub carries the controller's events to SSE clients; New makes one
	// when nil (read it back with Server.Hub).
	Hub *events.Hub
	// Logs is the ring the daemon's slog handler feeds (logring.Ring.Handler);
	// New makes an empty one when nil.
	Logs *logring.Ring
	// Logger is the daemon's logger (normally the one writing into Logs).
	Logger *slog.Logger
	// Metrics are served at /metrics; New makes a set when nil.
	Metrics *metrics.Metrics
	// Config is the configuration from file, environment and flags
	// (config.Load); settings saved from the UI are applied over it with
	// Config.WithOverlay. Default config.Defaults(). Its Server.WebhookSecret
	// verifies webhooks.
	Config *config.Config
	// OnSettingsChanged is called with the new effective configuration after
	// the UI saved settings, so they apply without a restart. It should not
	// block and must not modify it.
	OnSettingsChanged func(*config.Config)
	// UI is the built web UI (web/dist); nil serves a notice instead.
	UI fs.FS
	// SetupOutput receives the one-time setup token on first run (never the
	// log); default os.Stdout. SetupTokenFile defaults to
	// <databasePath>.setup-token (none on PostgreSQL).
	SetupOutput    io.Writer
	SetupTokenFile string
	// TrustedProxies may set X-Forwarded-Proto and X-Forwarded-For;
	// TrustProxy (config server.trustProxy) believes them from any peer.
	TrustedProxies []netip.Prefix
	TrustProxy     bool
	// SessionTTL (default 24h) is a session's absolute lifetime;
	// SessionIdle (default 2h) ends it after that long without a request.
	SessionTTL, SessionIdle time.Duration
	// PasswordParams are the argon2id costs of new hashes (default
	// auth.DefaultParams).
	PasswordParams auth.Params
	// KeepAlive is the SSE keep-alive period (default 15s).
	KeepAlive time.Duration
	// TLSCertFile and TLSKeyFile make Serve speak HTTPS.
	TLSCertFile, TLSKeyFile string
	// Replicas, set on PostgreSQL, is the high-availability view: a
	// follower forwards the API requests that need the controller to the
	// leader (through ForwardTransport, default http.DefaultTransport), and
	// /readyz and GET /api/v1/replicas name the leader.
	Replicas         Replicas
	ForwardTransport http.RoundTripper
	// LeaderWait is how long a follower holds a request that needs the
	// controller while no replica leads (a start, a failover) before it
	// answers 503 (default 5s, the Retry-After it names).
	LeaderWait time.Duration
	// Notifications reports the receivers of notifications for
	// GET /api/v1/notifications (notify.Dispatcher); nil lists none.
	Notifications NotificationStatuser
	// Now is the clock of the login limits and the webhook limits (default
	// time.Now); tests move it instead of sleeping.
	Now func() time.Time
}

// Server is the daemon's HTTP layer.
type Server struct {
	opt            Options
	store          *store.Store
	backend        Backend
	hub            *events.Hub
	logs           *logring.Ring
	log            *slog.Logger
	metrics        *metrics.Metrics
	router         chi.Router
	hasher         *auth.Hasher
	clientLimiter  *auth.Limiter // per client address
	pairLimiter    *auth.Limiter // per client address and account
	accountLimiter *auth.Limiter // per account, from any address
	crossOrigin    *http.CrossOriginProtection
	trusted        []netip.Prefix
	hookBuckets    *buckets
	deliveries     *deliveries
	coalesce       *coalescer
	previews       *forge.Previews
	oidc           oidcProviders

	settingsMu sync.Mutex // serialises settings writes
	effective  atomic.Pointer[config.Config]

	closing   chan struct{}
	closeOnce sync.Once
}

const (
	cookieName      = "proxmops_session"
	csrfHeader      = "X-CSRF-Token"
	maxBody         = 1 << 20
	maxWebhookBody  = 10 << 20
	sseWriteTimeout = 30 * time.Second
)

// New builds the server: it loads the saved settings (refusing ones that do
// not decrypt) and, when no account exists, creates the one-time setup token,
// prints it to SetupOutput and writes it to SetupTokenFile (0600).
func New(ctx context.Context, opt Options) (*Server, error) {
	if opt.Store == nil || opt.Backend == nil {
		return nil, errors.New("server: Store and Backend are required")
	}
	if opt.Config == nil {
		opt.Config = config.Defaults()
	}
	if opt.Hub == nil {
		opt.Hub = events.NewHub(1024)
	}
	if opt.Logs == nil {
		opt.Logs = logring.New(1000)
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.Metrics == nil {
		opt.Metrics = metrics.New()
	}
	if opt.SetupOutput == nil {
		opt.SetupOutput = os.Stdout
	}
	if opt.SetupTokenFile == "" && opt.Store.Path() != "" { // none on PostgreSQL: the database shows it
		opt.SetupTokenFile = opt.Store.Path() + ".setup-token"
	}
	if opt.SessionTTL <= 0 {
		opt.SessionTTL = 24 * time.Hour
	}
	if opt.SessionIdle <= 0 {
		opt.SessionIdle = 2 * time.Hour
	}
	if opt.PasswordParams == (auth.Params{}) {
		opt.PasswordParams = auth.DefaultParams
	}
	if opt.KeepAlive <= 0 {
		opt.KeepAlive = 15 * time.Second
	}
	if opt.LeaderWait <= 0 {
		opt.LeaderWait = 5 * time.Second
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	hasher, err := auth.NewHasher(opt.PasswordParams, passwordChecks)
	if err != nil {
		return nil, err
	}
	s := &Server{
		opt: opt, store: opt.Store, backend: opt.Backend, hub: opt.Hub, logs: opt.Logs,
		log: opt.Logger, metrics: opt.Metrics, hasher: hasher, trusted: opt.TrustedProxies,
		clientLimiter:  newLoginLimiter(LoginLimitPerClient, opt.Now),
		pairLimiter:    newLoginLimiter(LoginLimitPerClientAccount, opt.Now),
		accountLimiter: newLoginLimiter(LoginLimitPerAccount, opt.Now),
		crossOrigin:    http.NewCrossOriginProtection(),
		closing:        make(chan struct{}),
	}
	s.hookBuckets, s.deliveries = newBuckets(opt.Now), newDeliveries(opt.Now)
	s.coalesce = &coalescer{now: opt.Now, after: realAfter, refresh: s.trailingRefresh}
	s.previews = forge.New(forge.Options{Store: opt.Store, Plan: opt.Backend.Plan, Logger: opt.Logger,
		Config: func() config.Forge { return s.Config().Forge }, PublicURL: func() string { return s.Config().Server.PublicURL }})
	if opt.TrustProxy {
		s.trusted = append(s.trusted, netip.MustParsePrefix("0.0.0.0/0"), netip.MustParsePrefix("::/0"))
	}
	stored, err := s.store.Overlay(ctx)
	if err != nil {
		return nil, err
	}
	eff, warnings, err := opt.Config.WithOverlay(stored)
	if err != nil {
		// Start anyway, so an admin can fix them from the UI.
		s.log.Error("the settings saved from the UI are not valid; using the configuration file's until they are fixed", "err", err)
		eff = opt.Config
	}
	for _, w := range warnings {
		s.log.Warn("settings: " + w)
	}
	s.effective.Store(eff)
	if err := s.prepareSetup(ctx); err != nil {
		return nil, err
	}
	s.router = s.routes()
	return s, nil
}

// Handler is the whole HTTP handler (API, probes, metrics, UI).
func (s *Server) Handler() http.Handler { return s.router }

// Router is the chi router, for tests that walk the routes.
func (s *Server) Router() chi.Routes { return s.router }

// Hub is the event hub the controller publishes to.
func (s *Server) Hub() *events.Hub { return s.hub }

// Logs is the log ring.
func (s *Server) Logs() *logring.Ring { return s.logs }

// Metrics are the collectors served at /metrics.
func (s *Server) Metrics() *metrics.Metrics { return s.metrics }

// Config is the effective configuration: the file's, environment's and
// flags', overridden by the settings saved from the UI. Do not modify it.
func (s *Server) Config() *config.Config { return s.effective.Load() }

// Close ends the live streams (SSE); Serve calls it on shutdown.
func (s *Server) Close() {
	s.closeOnce.Do(func() {
		close(s.closing)
		s.coalesce.close()
		s.previews.Close()
	})
}

// ListenAndServe listens on addr and serves until ctx ends.
func (s *Server) ListenAndServe(ctx context.Context, addr string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", addr, err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln (HTTPS when TLSCertFile and TLSKeyFile are set) until
// ctx ends, then shuts down gracefully: streams end, requests in flight get
// up to 10 seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	srv := &http.Server{
		Handler:           s.router,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		WriteTimeout:      60 * time.Second, // SSE handlers lift it per stream
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:       func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if s.opt.TLSCertFile != "" || s.opt.TLSKeyFile != "" {
		cert, err := tls.LoadX509KeyPair(s.opt.TLSCertFile, s.opt.TLSKeyFile)
		if err != nil {
			ln.Close()
			return fmt.Errorf("TLS certificate: %w", err)
		}
		srv.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}}
	}
	go s.sweepSessions(ctx)
	// Read before serving: http.Server.Serve sets TLSConfig for HTTP/2.
	useTLS := srv.TLSConfig != nil
	errc := make(chan error, 1)
	go func() {
		if useTLS {
			errc <- srv.ServeTLS(ln, "", "")
			return
		}
		errc <- srv.Serve(ln)
	}()
	s.log.Info("HTTP server listening", "addr", ln.Addr().String(), "tls", useTLS)
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	s.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	<-errc
	return err
}

func (s *Server) sweepSessions(ctx context.Context) {
	t := time.NewTicker(10 * time.Minute)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if n, err := s.store.DeleteStaleSessions(ctx, time.Now(), s.opt.SessionIdle); err != nil {
				s.log.Warn("removing expired sessions failed", "err", err)
			} else if n > 0 {
				s.log.Debug("removed expired sessions", "count", n)
			}
		}
	}
}
