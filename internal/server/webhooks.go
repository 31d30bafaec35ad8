package server

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"
)

// verifyWebhook checks a forge's proof that it sent body:
//   - github: X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the body>
//   - gitea:  X-Gitea-Signature: <hex HMAC-SHA256 of the body>
//   - gitlab: X-Gitlab-Token: <the secret itself>
func verifyWebhook(forge, secret string, h http.Header, body []byte) error {
	if secret == "" {
		return errors.New("no webhook secret is configured (server.webhookSecret or PROXMOPS_SERVER_WEBHOOKSECRET)")
	}
	mac := func() []byte {
		m := hmac.New(sha256.New, []byte(secret))
		m.Write(body)
		return m.Sum(nil)
	}
	switch forge {
	case "github":
		sig, ok := strings.CutPrefix(h.Get("X-Hub-Signature-256"), "sha256=")
		got, err := hex.DecodeString(sig)
		if !ok || err != nil || !hmac.Equal(got, mac()) {
			return errors.New("missing or wrong X-Hub-Signature-256")
		}
	case "gitea":
		got, err := hex.DecodeString(h.Get("X-Gitea-Signature"))
		if err != nil || !hmac.Equal(got, mac()) {
			return errors.New("missing or wrong X-Gitea-Signature")
		}
	case "gitlab":
		tok := h.Get("X-Gitlab-Token")
		// Compare hashes so the comparison takes the same time whatever the lengths.
		a, b := sha256.Sum256([]byte(tok)), sha256.Sum256([]byte(secret))
		if tok == "" || subtle.ConstantTimeCompare(a[:], b[:]) != 1 {
			return errors.New("missing or wrong X-Gitlab-Token")
		}
	default:
		return errors.New("unknown forge")
	}
	return nil
}

// handleWebhook verifies a forge's delivery and, when good, pulls Git and
// runs a pass. A bad signature is answered 401 and logged.
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	forge := chi.URLParam(r, "forge")
	if forge != "github" && forge != "gitea" && forge != "gitlab" {
		writeError(w, http.StatusNotFound, "unknown forge "+forge+": use github, gitea or gitlab")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the webhook body is too large")
		return
	}
	if err := verifyWebhook(forge, s.Config().Server.WebhookSecret, r.Header, body); err != nil {
		s.metrics.Webhooks.WithLabelValues(forge, "rejected").Inc()
		s.log.Warn("webhook rejected", "forge", forge, "reason", err.Error(), "client", s.clientIP(r))
		writeError(w, http.StatusUnauthorized, "webhook rejected: "+err.Error())
		return
	}
	s.metrics.Webhooks.WithLabelValues(forge, "accepted").Inc()
	if forge == "github" && r.Header.Get("X-GitHub-Event") == "ping" {
		s.log.Info("webhook ping", "forge", forge)
		writeJSON(w, http.StatusOK, map[string]string{"status": "pong"})
		return
	}
	if err := s.backend.Refresh(r.Context()); err != nil {
		s.fail(w, r, err)
		return
	}
	s.log.Info("webhook accepted: pulling Git", "forge", forge)
	accepted(w, "Git pull and pass started")
}
