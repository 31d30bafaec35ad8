package server

import (
	"net/http"
	"regexp"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/provision"
)

// clusterParam matches a cluster name (a DNS label).
var clusterParam = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// withCluster reads ?cluster=NAME into the request's context
// (api.WithCluster), so every route can be narrowed to one cluster of
// several; without it a route covers every cluster, or the one that has
// the resource named. The backend answers an unknown cluster with a 404,
// after authentication, so names are never told to a stranger.
func (s *Server) withCluster(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("cluster")
		if name == "" {
			next.ServeHTTP(w, r)
			return
		}
		if !clusterParam.MatchString(name) {
			writeError(w, http.StatusBadRequest, "cluster must be a cluster's name (a lower-case DNS label)")
			return
		}
		next.ServeHTTP(w, r.WithContext(api.WithCluster(r.Context(), name)))
	})
}

// clusterRecords is the state store of the request's cluster: with the
// clusters list a resource's records are kept per cluster, so the request
// must name one.
func (s *Server) clusterRecords(w http.ResponseWriter, r *http.Request) (provision.Store, bool) {
	cfg := s.Config()
	if !cfg.MultiCluster() {
		return s.store, true
	}
	name := api.ClusterFrom(r.Context())
	if name == "" {
		writeError(w, http.StatusBadRequest, "several clusters are configured: name one with ?cluster=")
		return nil, false
	}
	return provision.Prefixed(s.store, api.ClusterStatePrefix(name)), true
}
