package server

import (
	"context"
	"net/http"
	"time"

	"github.com/proxmops/proxmops/internal/config"
)

// handleCheck is GET /api/v1/check: `proxmops check` on the saved
// settings (internal/check), for scripts; ?cluster= picks one cluster of a
// clusters list. It answers 200 with the report whatever it says: "ok"
// is false when a line is FAIL.
func (s *Server) handleCheck(w http.ResponseWriter, r *http.Request) {
	s.testSettings(w, r, 60*time.Second, s.Config())
}

// testSettings answers with the checks of cfg, run within timeout (an
// empty list, never null, when there are none).
func (s *Server) testSettings(w http.ResponseWriter, r *http.Request, timeout time.Duration, cfg *config.Config) {
	ctx, cancel := context.WithTimeout(r.Context(), timeout)
	defer cancel()
	res, err := s.backend.TestSettings(ctx, cfg)
	answerList(s, w, r, &res, &res.Checks, err)
}
