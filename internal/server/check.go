package server

import (
	"context"
	"net/http"
	"time"

	"github.com/proxmops/proxmops/internal/api"
)

// handleCheck is GET /api/v1/check: `proxmops check` on the saved
// settings (internal/check), for scripts; ?cluster= picks one cluster of a
// clusters list. It answers 200 with the report whatever it says: "ok"
// is false when a line is FAIL.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 60*time.Second)
	defer cancel()
	res, err := s.backend.TestSettings(ctx, s.Config())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if res.Checks == nil {
		res.Checks = []api.Check{}
	}
	writeJSON(w, http.StatusOK, res)
}
