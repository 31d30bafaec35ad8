package daemon

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/fanout"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/server"
)

// replicas is the daemon's part among several replicas on one PostgreSQL
// database (docs/ha.md): the leader election, and the fan-out that carries
// events and log lines to the others.
type replicas struct {
	elector *leader.Elector
	// guard fences the controllers' writes with the term this replica
	// leads (docs/ha.md#fencing).
	guard *leader.Guard
	fan   *fanout.Fanout
	log   *slog.Logger
	// ctrl gives the leader's status list to the replicas that ask.
	ctrl atomic.Pointer[leads]
}

func newReplicas(cfg *config.Config, dbURL string, addr net.Addr, hub *events.Hub, ring *logring.Ring, log *slog.Logger) (*replicas, error) {
	url := cfg.HA.AdvertiseURL
	if url == "" {
		url = advertiseURL(cfg, addr)
	}
	id := leader.DefaultIdentity(cfg.HA.Replica, url)
	el, err := leader.New(leader.Options{URL: dbURL, Identity: id, Timeout: cfg.HA.FailoverTimeout, Logger: log})
	if err != nil {
		return nil, err
	}
	r := &replicas{elector: el, log: log}
	fan, err := fanout.New(fanout.Options{URL: dbURL, Replica: id.Replica, Hub: hub, Logs: ring, Logger: log, Snapshot: r.snapshot})
	if err != nil {
		return nil, err
	}
	r.fan = fan
	log.Info("replica of a group on PostgreSQL: one leader reconciles, every replica serves",
		"replica", id.Replica, "url", url, "failoverTimeout", el.Timeout().String())
	return r, nil
}

// snapshot is the status list a replica that reconnected to the fan-out
// asks for: the leader's, current.
func (r *replicas) snapshot(ctx context.Context) (any, bool) {
	ctrl := r.ctrl.Load()
	if ctrl == nil || r.elector.Status().Role != api.ReplicaLeader {
		return nil, false
	}
	list, err := (*ctrl).Resources(ctx)
	if err != nil {
		r.log.Warn("reading the status list for a replica that reconnected failed", "err", err)
		return nil, false
	}
	return list, true
}

// advertiseURL is where the others reach this replica by default: the
// host name and the port it listens on.
func advertiseURL(cfg *config.Config, addr net.Addr) string {
	scheme := "http"
	if cfg.Server.TLSCertFile != "" {
		scheme = "https"
	}
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return scheme + "://" + addr.String()
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil {
			host = h
		}
	}
	return scheme + "://" + net.JoinHostPort(host, port)
}

// forwardTransport reaches the leader: the system's roots, plus this
// replica's own certificate, so replicas sharing one certificate (or one
// private CA that signed it) trust each other without more settings.
func forwardTransport(cfg *config.Config) (http.RoundTripper, error) {
	t := http.DefaultTransport.(*http.Transport).Clone()
	if cfg.Server.TLSCertFile == "" {
		return t, nil
	}
	pool, err := x509.SystemCertPool()
	if err != nil || pool == nil {
		pool = x509.NewCertPool()
	}
	pem, err := os.ReadFile(cfg.Server.TLSCertFile)
	if err != nil {
		return nil, fmt.Errorf("server.tlsCertFile: %w", err)
	}
	pool.AppendCertsFromPEM(pem)
	t.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return t, nil
}

// leads is what runs while this replica leads (controller.Fleet: every
// cluster's loop).
type leads interface {
	Lead(ctx context.Context, cfg *config.Config) error
	Resources(ctx context.Context) (api.ResourceList, error)
}

// run campaigns until ctx ends; while this replica leads, the controllers
// run a term with the settings read afresh from the database.
func (r *replicas) run(ctx context.Context, ctrl leads, srv *server.Server) error {
	r.ctrl.Store(&ctrl)
	fanDone := make(chan error, 1)
	go func() { fanDone <- r.fan.Run(ctx) }()
	err := r.elector.Run(ctx, func(lctx context.Context, self leader.Info) {
		// What this term writes is checked against this term, even after
		// this replica leads again under a later one.
		r.guard.Begin(self.Term)
		defer r.guard.End(self.Term)
		lctx = leader.WithTerm(lctx, self.Term)
		eff, err := srv.ReloadSettings(lctx)
		if err != nil {
			r.log.Warn("reading the settings at the start of a term", "err", err)
		}
		r.log.Info("this replica leads: reading the cluster and planning afresh", "term", self.Term)
		if err := ctrl.Lead(lctx, eff); err != nil {
			r.log.Error("leading failed", "err", err)
		}
	})
	if ferr := <-fanDone; ferr != nil && err == nil {
		err = ferr
	}
	return err
}

// databaseURL is the PostgreSQL database of a group of replicas, "" for
// SQLite.
func databaseURL(cfg *config.Config) string { return cfg.Server.Database }
