package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/proxmops/proxmops/internal/api"
)

// routes builds the router. Every route under /api/v1 except setup, login,
// logout and the webhooks requires a session or an API token; the groups
// below fix the role each route needs.
func (s *Server) routes() chi.Router {
	r := chi.NewRouter()
	r.Use(s.recoverPanics, s.securityHeaders, s.observe)

	r.Get("/healthz", s.handleHealthz)
	r.Get("/readyz", s.handleReadyz)
	r.With(s.metricsAuth).Method(http.MethodGet, "/metrics", promhttp.HandlerFor(s.metrics.Registry, promhttp.HandlerOpts{}))

	r.Route("/api/v1", func(r chi.Router) {
		r.Use(noStore, s.forwardToLeader, s.withCluster)
		// Forges are not browsers: they get a larger body limit and no
		// session handling; the signature is their authentication.
		r.With(limitBody(maxWebhookBody)).Post("/webhooks/{forge}", s.handleWebhook)

		r.Group(func(r chi.Router) {
			r.Use(limitBody(maxBody), s.crossOriginCheck, s.authenticate)

			r.Get("/setup", s.handleSetupNeeded)
			r.Post("/setup", s.handleSetup)
			r.Post("/login", s.handleLogin)
			r.Get("/auth", s.handleAuthMethods)
			r.Get("/auth/oidc/login", s.handleOIDCLogin)
			r.Get("/auth/oidc/callback", s.handleOIDCCallback)
			r.With(s.checkCSRF).Post("/logout", s.handleLogout)

			r.Group(func(r chi.Router) {
				r.Use(s.requireRole(api.RoleViewer), s.checkCSRF)
				r.Get("/me", s.handleMe)
				r.Post("/me/password", s.handleChangeOwnPassword)
				r.Get("/resources", s.handleResources)
				r.Get("/resources/{kind}/{name}", s.handleResource)
				r.Get("/resources/{kind}/{name}/snapshots", s.handleSnapshots)
				r.Get("/resources/{kind}/{name}/manifest", s.handleManifest)
				r.Get("/resources/{kind}/{name}/live", s.handleLive)
				r.Get("/resources/{kind}/{name}/tasklog", s.handleTaskLog)
				r.Get("/plan", s.handlePlan)
				r.Get("/events", s.handleEvents)
				r.Get("/logs", s.handleLogs)
				r.Get("/logs/stream", s.handleLogStream)
				r.Get("/revisions", s.handleRevisions)
				r.Get("/revisions/{commit}/history", s.handleCommitHistory)
				r.Get("/replicas", s.handleReplicas)
				r.Get("/previews", s.handlePreviews)
			})

			r.Group(func(r chi.Router) {
				r.Use(s.requireRole(api.RoleAdmin), s.checkCSRF)
				r.Post("/resources/{kind}/{name}/sync", s.handleSyncOne)
				r.Post("/resources/{kind}/{name}/rollback", s.handleRollback)
				r.Post("/resources/{kind}/{name}/adopt", s.handleAdopt)
				r.Delete("/resources/{kind}/{name}", s.handleDelete)
				r.Delete("/resources/{kind}/{name}/hostkey", s.handleResetHostKey)
				r.Post("/sync", s.handleSyncAll)
				r.Post("/refresh", s.handleRefresh)
				r.Post("/revisions/pin", s.handlePin)
				r.Delete("/revisions/pin", s.handleUnpin)
				r.Get("/settings", s.handleGetSettings)
				r.Get("/notifications", s.handleNotifications)
				r.Put("/settings", s.handlePutSettings)
				r.Post("/settings/test", s.handleTestSettings)
				r.Get("/check", s.handleCheck)
				r.Get("/export", s.handleExport)
				r.Get("/users", s.handleUsers)
				r.Post("/users", s.handleCreateUser)
				r.Patch("/users/{name}", s.handleUpdateUser)
				r.Delete("/users/{name}", s.handleDeleteUser)
				r.Get("/tokens", s.handleTokens)
				r.Post("/tokens", s.handleCreateToken)
				r.Delete("/tokens/{id}", s.handleDeleteToken)
			})
		})
		r.NotFound(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusNotFound, "no such API route: "+r.Method+" "+r.URL.Path)
		})
		r.MethodNotAllowed(func(w http.ResponseWriter, r *http.Request) {
			writeError(w, http.StatusMethodNotAllowed, "method "+r.Method+" is not allowed on "+r.URL.Path)
		})
	})

	r.NotFound(s.handleUI)
	return r
}

// metricsAuth asks for server.metricsToken as a bearer token when one is
// set; without one /metrics is open, as Prometheus scrapers expect.
func (s *Server) metricsAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		want := s.Config().Server.MetricsToken
		if want == "" {
			next.ServeHTTP(w, r)
			return
		}
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		// Compare hashes so the time does not depend on the lengths.
		a, b := sha256.Sum256([]byte(strings.TrimSpace(got))), sha256.Sum256([]byte(want))
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="proxmops metrics"`)
			writeError(w, http.StatusUnauthorized, "metrics need the bearer token of server.metricsToken")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// The probes are open to anyone: they say whether the daemon is up and
// ready, never why in any detail an outsider could use (the log has it).
func (s *Server) handleHealthz(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, api.Accepted{Status: "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	doc := map[string]any{}
	if s.opt.Replicas != nil {
		// Which replica leads, for operators and load balancers.
		st := s.opt.Replicas.Status()
		doc["role"], doc["replica"], doc["leader"] = st.Role, st.Self, st.Leader
	}
	if err := s.store.Ping(r.Context()); err != nil {
		s.log.Warn("readiness: the database does not answer", "err", err)
		doc["status"], doc["reason"] = "not ready", "the database does not answer"
		writeJSON(w, http.StatusServiceUnavailable, doc)
		return
	}
	if !s.backend.Ready() {
		doc["status"], doc["reason"] = "not ready", "the first reconcile pass has not finished"
		writeJSON(w, http.StatusServiceUnavailable, doc)
		return
	}
	doc["status"] = "ready"
	// A cluster that cannot be observed leaves the daemon serving (the UI
	// is how one learns why), so the answer stays 200: degraded, naming the
	// clusters; the error itself (addresses, fingerprints) is for the
	// signed-in API, not this open route.
	if list, err := s.backend.Resources(r.Context()); err == nil && list.ClusterError != "" {
		doc["status"], doc["reason"] = "degraded", "a cluster cannot be observed: its resources are Unknown"
		doc["clusters"], doc["lastObserved"] = unobservedClusters(list), list.LastObserved
	}
	writeJSON(w, http.StatusOK, doc)
}

// unobservedClusters names the clusters the last passes could not observe.
func unobservedClusters(list api.ResourceList) []string {
	names := []string{}
	for _, c := range list.Clusters {
		if c.ClusterError != "" {
			names = append(names, c.Name)
		}
	}
	return names
}
