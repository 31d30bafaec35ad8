package server

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
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

// deliveryHeaders name each forge's delivery ID headers. GitLab's event
// UUID is kept across its retries, as is its Idempotency-Key (GitLab 17.4+).
var deliveryHeaders = map[string][]string{
	"github": {"X-GitHub-Delivery"},
	"gitea":  {"X-Gitea-Delivery"},
	"gitlab": {"X-Gitlab-Event-UUID", "Idempotency-Key"},
}

// webhookActor names a delivery as what starts the pass it asks for: the
// forge and its delivery id (the first of deliveryHeaders it sent).
func webhookActor(forge string, h http.Header) api.Actor {
	a := api.Actor{Kind: api.ActorWebhook, Name: forge}
	for _, name := range deliveryHeaders[forge] {
		if v := strings.TrimSpace(h.Get(name)); v != "" && len(v) <= 200 {
			a.Delivery = v
			break
		}
	}
	return a
}

// deliveryIDs are the keys a delivery is remembered by (none when the forge
// sent no ID; an absurdly long one is not remembered either).
func deliveryIDs(forge string, h http.Header) []string {
	var ids []string
	for _, name := range deliveryHeaders[forge] {
		if v := strings.TrimSpace(h.Get(name)); v != "" && len(v) <= 200 {
			ids = append(ids, forge+" "+name+" "+v)
		}
	}
	return ids
}

// handleWebhook verifies a forge's delivery and, when good, pulls Git and
// runs a pass; a pull-request delivery goes to the previews instead when
// they are on. In order: a per-source rate limit (429), the signature (401),
// the delivery ID seen in the last 24 h (200, nothing done), then the
// coalescing window (202 either way). See docs/api.md, "Webhooks".
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	forge := chi.URLParam(r, "forge")
	if forge != "github" && forge != "gitea" && forge != "gitlab" {
		writeError(w, http.StatusNotFound, "unknown forge "+forge+": use github, gitea or gitlab")
		return
	}
	client := s.clientIP(r)
	if ok, wait := s.hookBuckets.take(forge + " " + client); !ok {
		s.metrics.Webhooks.WithLabelValues(forge, "limited").Inc()
		tooMany(w, wait, "too many webhook deliveries from this source")
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		writeError(w, http.StatusRequestEntityTooLarge, "the webhook body is too large")
		return
	}
	if err := verifyWebhook(forge, s.Config().Server.WebhookSecret, r.Header, body); err != nil {
		s.metrics.Webhooks.WithLabelValues(forge, "rejected").Inc()
		s.log.Warn("webhook rejected", "forge", forge, "reason", err.Error(), "client", client)
		writeError(w, http.StatusUnauthorized, "webhook rejected: "+err.Error())
		return
	}
	if forge == "github" && r.Header.Get("X-GitHub-Event") == "ping" {
		s.metrics.Webhooks.WithLabelValues(forge, "accepted").Inc()
		s.log.Info("webhook ping", "forge", forge)
		writeJSON(w, http.StatusOK, api.Accepted{Status: "pong"})
		return
	}
	if ids := deliveryIDs(forge, r.Header); len(ids) > 0 && !s.deliveries.first(ids...) {
		s.metrics.Webhooks.WithLabelValues(forge, "duplicate").Inc()
		s.log.Info("webhook delivery already handled: ignored", "forge", forge, "delivery", ids[0])
		writeJSON(w, http.StatusOK, api.Accepted{Status: "this delivery was already handled"})
		return
	}
	if handled, queued, msg, err := s.previews.Handle(forge, r.Header, body); handled {
		switch {
		case err != nil:
			s.metrics.Webhooks.WithLabelValues(forge, "rejected").Inc()
			writeError(w, http.StatusBadRequest, "pull-request webhook: "+err.Error())
		case queued:
			s.metrics.Webhooks.WithLabelValues(forge, "accepted").Inc()
			s.log.Info("webhook accepted: "+msg, "forge", forge)
			accepted(w, msg)
		default:
			s.metrics.Webhooks.WithLabelValues(forge, "accepted").Inc()
			s.log.Info("webhook "+msg, "forge", forge)
			writeJSON(w, http.StatusOK, api.Accepted{Status: msg})
		}
		return
	}
	s.metrics.Webhooks.WithLabelValues(forge, "accepted").Inc()
	by := webhookActor(forge, r.Header)
	if now, wait := s.coalesce.admit(by); !now {
		s.log.Info("webhook accepted: merged into the next Git pull", "forge", forge, "in", wait.String())
		accepted(w, fmt.Sprintf("merged into the Git pull due in %d seconds", int(math.Ceil(wait.Seconds()))))
		return
	}
	if err := s.backend.Refresh(api.WithActor(r.Context(), by)); err != nil {
		s.coalesce.forget()
		s.fail(w, r, err)
		return
	}
	s.log.Info("webhook accepted: pulling Git", "forge", forge, "by", by.String())
	accepted(w, "Git pull and pass started")
}

// trailingRefresh is the pull at the end of a coalescing window.
func (s *Server) trailingRefresh(by api.Actor) {
	select {
	case <-s.closing:
		return
	default:
	}
	if err := s.backend.Refresh(api.WithActor(context.Background(), by)); err != nil {
		s.log.Warn("the Git pull for webhooks merged in the last window failed to start", "err", err)
		return
	}
	s.log.Info("pulling Git for the webhooks merged in the last window")
}

// handlePreviews lists the open pull requests and their last plans.
func (s *Server) handlePreviews(w http.ResponseWriter, r *http.Request) {
	list, err := s.previews.List(r.Context())
	if err != nil {
		s.fail(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, list)
}
