package server

import (
	"context"
	"net/http"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// AdoptBackend is what a Backend offers for explicit adoption (the
// controller implements it): the same adoption as `proxmops adopt`,
// recorded in the history with the user.
type AdoptBackend interface {
	// Adopt records the actor ctx carries (api.ActorFrom).
	Adopt(ctx context.Context, kind, name string, dryRun bool) (api.AdoptResult, error)
}

// adoptWait bounds how long POST .../adopt waits: a plan of the cluster
// and one config write, queued behind the resource's running action.
const adoptWait = 5 * time.Minute

// handleAdopt is POST /api/v1/resources/{kind}/{name}/adopt with an
// optional {"dryRun": true}; it answers when the guest carries the
// ownership tag (or, dry, with what adopting would do). A refusal, or a
// resource that is not a Conflict, is a 409 with the reason.
func (s *Server) handleAdopt(w http.ResponseWriter, r *http.Request) {
	kind, name, req, ok := resourceRequest[api.AdoptRequest](w, r)
	if !ok {
		return
	}
	ab, ok := optional[AdoptBackend](s, w, "this server has no adoption support")
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), adoptWait)
	defer cancel()
	if !req.DryRun {
		s.log.Info("adoption requested", "resource", vocab.Key(kind, name), "by", api.ActorFrom(ctx).String())
	}
	res, err := ab.Adopt(ctx, kind, name, req.DryRun)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, res)
}
