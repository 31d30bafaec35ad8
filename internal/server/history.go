package server

import (
	"net/http"
	"regexp"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
)

// commitHistoryLimit bounds GET /api/v1/revisions/{commit}/history.
const commitHistoryLimit = 500

// fullCommit is a whole SHA-1 or SHA-256 commit hash: history records the
// full hash, and an abbreviation could name two commits.
var fullCommit = regexp.MustCompile(`^(?:[0-9a-f]{40}|[0-9a-f]{64})$`)

// handleCommitHistory lists what the history recorded at one commit, for
// every resource, so the Revisions page can link each entry to its
// resource.
func (s *Server) handleCommitHistory(w http.ResponseWriter, r *http.Request) {
	commit := strings.ToLower(chi.URLParam(r, "commit"))
	if !fullCommit.MatchString(commit) {
		writeError(w, http.StatusBadRequest, "commit must be a full hash (40 or 64 hexadecimal digits)")
		return
	}
	h, err := s.store.HistoryAt(r.Context(), commit, commitHistoryLimit)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	// A clusters list stores a resource's history as "cluster/name": say
	// the cluster apart, so an entry links to the resource it is about.
	for i := range h {
		h[i].Cluster, h[i].Name = api.SplitHistoryName(h[i].Name)
	}
	writeJSON(w, http.StatusOK, api.CommitHistory{Commit: commit, Entries: h})
}
