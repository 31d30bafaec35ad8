package server

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/leader"
)

// Replicas is the high-availability view of a daemon on PostgreSQL: this
// replica's role and the leader's identity (leader.Elector). Changed's
// channel is closed at the next change of Status.
type Replicas interface {
	Status() leader.Status
	Changed() <-chan struct{}
}

// forwardedHeader marks a request a follower forwarded; it is never
// forwarded again, so two replicas that each take the other for the
// leader cannot bounce a request between them.
const forwardedHeader = "X-Proxmops-Forwarded-By"

// localRoutes are served by every replica from the shared database or its
// own streams; every other API route needs the controller, which runs on
// the leader only, and a follower forwards it there. A new route is
// forwarded unless listed here, which is the safe default.
var localRoutes = []string{
	"/api/v1/setup", "/api/v1/login", "/api/v1/logout", "/api/v1/me",
	"/api/v1/events", "/api/v1/logs", "/api/v1/users", "/api/v1/tokens",
	"/api/v1/replicas", "/api/v1/auth",
}

func isLocalRoute(r *http.Request) bool {
	if r.URL.Path == "/api/v1/settings" && r.Method == http.MethodGet {
		return true
	}
	for _, p := range localRoutes {
		if r.URL.Path == p || strings.HasPrefix(r.URL.Path, p+"/") {
			return true
		}
	}
	return false
}

// forwardToLeader sends a follower's controller-bound API requests to the
// leader, as they came (cookies, CSRF header and Host included: the
// leader authenticates them against the same database).
func (s *Server) forwardToLeader(next http.Handler) http.Handler {
	if s.opt.Replicas == nil {
		return next
	}
	transport := s.opt.ForwardTransport
	if transport == nil {
		transport = http.DefaultTransport
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isLocalRoute(r) || r.Header.Get(forwardedHeader) != "" {
			next.ServeHTTP(w, r)
			return
		}
		st := s.awaitLeader(r.Context())
		if st.Role != api.ReplicaFollower {
			next.ServeHTTP(w, r)
			return
		}
		if st.Leader == nil || st.Leader.URL == "" {
			w.Header().Set("Retry-After", strconv.Itoa(max(1, int(s.opt.LeaderWait.Seconds()))))
			writeError(w, http.StatusServiceUnavailable,
				"no replica leads right now (a failover is under way); retry in a few seconds")
			return
		}
		target, err := url.Parse(st.Leader.URL)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		p := &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.SetURL(target)
				pr.Out.Host = pr.In.Host // the leader checks origins against it
				pr.Out.Header.Set(forwardedHeader, st.Self)
			},
			Transport: transport,
			ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
				s.log.Warn("forwarding to the leader failed", "leader", st.Leader.Replica, "url", st.Leader.URL, "path", r.URL.Path, "err", err)
				status := http.StatusBadGateway
				if errors.Is(err, r.Context().Err()) {
					return
				}
				writeError(w, status, "the leader ("+st.Leader.Replica+") did not answer; retry in a few seconds")
			},
		}
		p.ServeHTTP(w, r)
	})
}

// awaitLeader is the replicas' status once some replica leads, or after
// LeaderWait (or the request's end) when none does: a replica that just
// started, or a failover under way, holds the request for those seconds
// instead of refusing it at once.
func (s *Server) awaitLeader(ctx context.Context) leader.Status {
	// The usual case, a leader known, costs no timer.
	var timeout <-chan time.Time
	for {
		changed := s.opt.Replicas.Changed()
		st := s.opt.Replicas.Status()
		if st.Role != api.ReplicaFollower || (st.Leader != nil && st.Leader.URL != "") {
			return st
		}
		if timeout == nil {
			timer := time.NewTimer(s.opt.LeaderWait)
			defer timer.Stop()
			timeout = timer.C
		}
		select {
		case <-changed:
		case <-timeout:
			return st
		case <-ctx.Done():
			return st
		}
	}
}

// replicasDoc is GET /api/v1/replicas and part of /readyz.
func (s *Server) replicasDoc() api.ReplicaStatus {
	if s.opt.Replicas == nil {
		return api.ReplicaStatus{Role: api.ReplicaSingle}
	}
	return s.opt.Replicas.Status().Document()
}

func (s *Server) handleReplicas(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.replicasDoc())
}

// ReloadSettings reads the settings saved from the UI again, as another
// replica may have saved them while this one followed, and returns the
// effective configuration (the daemon calls it when this replica starts
// leading).
func (s *Server) ReloadSettings(ctx context.Context) (*config.Config, error) {
	s.settingsMu.Lock()
	defer s.settingsMu.Unlock()
	stored, err := s.store.Overlay(ctx)
	if err != nil {
		return s.effective.Load(), err
	}
	eff, _, err := s.opt.Config.WithOverlay(stored)
	if err != nil {
		return s.effective.Load(), fmt.Errorf("the settings saved from the UI are not valid; keeping the ones in force: %w", err)
	}
	s.effective.Store(eff)
	return eff, nil
}
