package server

import (
	"context"
	"fmt"
	"net/http"

	"github.com/proxmops/proxmops/internal/api"
)

// RevisionBackend is the part of the controller behind the revision list
// and the pin (GET /api/v1/revisions, POST and DELETE /revisions/pin). A
// Backend without it answers 501.
type RevisionBackend interface {
	// Revisions lists recent commits of the watched branch with the
	// result of the passes at each, newest first.
	Revisions(ctx context.Context) (api.RevisionList, error)
	// Pin makes the controller apply revision instead of the branch head
	// until Unpin, and starts a sync to it.
	Pin(ctx context.Context, revision, by string) (api.Pin, error)
	// Unpin makes the controller follow the branch head again.
	Unpin(ctx context.Context, by string) error
}

func (s *Server) revisionBackend(w http.ResponseWriter) (RevisionBackend, bool) {
	return optional[RevisionBackend](s, w, "this backend has no revisions")
}

// optional is the backend as B, a part of the API a backend may leave
// out; without it the answer is a 501 saying missing.
func optional[B any](s *Server, w http.ResponseWriter, missing string) (B, bool) {
	b, ok := s.backend.(B)
	if !ok {
		writeError(w, http.StatusNotImplemented, missing)
	}
	return b, ok
}

func (s *Server) handleRevisions(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.revisionBackend(w)
	if !ok {
		return
	}
	list, err := rb.Revisions(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}

func (s *Server) handlePin(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.revisionBackend(w)
	if !ok {
		return
	}
	var req api.PinRequest
	if !decodeJSON(w, r, &req) {
		return
	}
	by := principalFrom(r.Context()).username
	p, err := rb.Pin(r.Context(), req.Revision, by)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Warn("revision pinned", "commit", p.Revision, "by", api.ActorFrom(r.Context()).String())
	writeJSON(w, http.StatusAccepted, api.PinAccepted{
		Status: fmt.Sprintf("pinned to %s: syncing to it; the branch head is not followed until unpinned", shortHash(p.Revision)),
		Pinned: p,
	})
}

func (s *Server) handleUnpin(w http.ResponseWriter, r *http.Request) {
	rb, ok := s.revisionBackend(w)
	if !ok {
		return
	}
	by := principalFrom(r.Context()).username
	if err := rb.Unpin(r.Context(), by); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("revision unpinned", "by", api.ActorFrom(r.Context()).String())
	accepted(w, "unpinned: following the branch head again")
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}
