package server

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// SnapshotBackend is what a Backend offers for guest snapshots (the
// controller implements it): the list, and a rollback that waits for
// Proxmox's task.
type SnapshotBackend interface {
	Snapshots(ctx context.Context, kind, name string) (api.SnapshotList, error)
	Rollback(ctx context.Context, kind, name, snapshot string) (api.RollbackResult, error)
}

// rollbackWait bounds how long POST .../rollback waits for Proxmox: a
// rollback stops the guest, rolls every volume back and starts it again.
const rollbackWait = 10 * time.Minute

func (s *Server) snapshotBackend(w http.ResponseWriter) (SnapshotBackend, bool) {
	return optional[SnapshotBackend](s, w, "this server has no snapshot support")
}

// handleSnapshots is GET /api/v1/resources/{kind}/{name}/snapshots.
func (s *Server) handleSnapshots(w http.ResponseWriter, r *http.Request) {
	kind, name, ok := resourceRef(w, r)
	if !ok {
		return
	}
	sb, ok := s.snapshotBackend(w)
	if !ok {
		return
	}
	l, err := sb.Snapshots(r.Context(), kind, name)
	answerList(s, w, r, &l, &l.Snapshots, err)
}

// handleRollback is POST /api/v1/resources/{kind}/{name}/rollback with an
// optional {"snapshot": NAME}; it answers when the rollback is done.
func (s *Server) handleRollback(w http.ResponseWriter, r *http.Request) {
	kind, name, req, ok := resourceRequest[api.RollbackRequest](w, r)
	if !ok {
		return
	}
	if len(req.Snapshot) > 40 {
		s.fail(w, r, fmt.Errorf("snapshot names have at most 40 characters: %w", api.ErrInvalid))
		return
	}
	sb, ok := s.snapshotBackend(w)
	if !ok {
		return
	}
	// The server's write timeout is shorter than a rollback may take.
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(rollbackWait + time.Minute))
	ctx, cancel := context.WithTimeout(r.Context(), rollbackWait)
	defer cancel()
	s.log.Info("rollback requested", "resource", vocab.Key(kind, name), "snapshot", req.Snapshot, "by", api.ActorFrom(r.Context()).String())
	res, err := sb.Rollback(ctx, kind, name, req.Snapshot)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
