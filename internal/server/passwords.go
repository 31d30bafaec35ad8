package server

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/store"
)

type passwordChange struct {
	CurrentPassword string `json:"currentPassword"`
	NewPassword     string `json:"newPassword"`
}

// handleChangeOwnPassword lets a logged-in user replace their password. The
// current one is checked under the same limits as a login, so a stolen
// session cannot be used to guess it; the user's other sessions end and
// this one is replaced by a new session (a new cookie and CSRF token).
func (s *Server) handleChangeOwnPassword(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	if p.sessionHash == nil {
		writeError(w, http.StatusBadRequest, "an API token has no password: log in as a user to change yours")
		return
	}
	if p.via == api.ViaOIDC {
		// Never look up a local account by a provider's user name.
		writeError(w, http.StatusBadRequest, "you logged in with single sign-on: change your password at your identity provider")
		return
	}
	var c passwordChange
	if !decodeJSON(w, r, &c) {
		return
	}
	if err := auth.CheckPassword(c.NewPassword); err != nil {
		writeError(w, http.StatusBadRequest, "new password: "+err.Error())
		return
	}
	account := strings.ToLower(p.username)
	attempt, _, wait := auth.Reserve(
		auth.Limit{Limiter: s.pairLimiter, Key: s.clientIP(r) + " " + account},
		auth.Limit{Limiter: s.accountLimiter, Key: account})
	if attempt == nil {
		tooMany(w, wait, "too many wrong current passwords for this account")
		return
	}
	defer attempt.Cancel() // unless settled below
	ctx := r.Context()
	u, err := s.store.UserByName(ctx, p.username)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	ok, err := s.hasher.Verify(ctx, c.CurrentPassword, u.PasswordHash)
	switch {
	case errors.Is(err, auth.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many password checks at once: try again in a second")
		return
	case err != nil:
		s.internal(w, r, fmt.Errorf("password hash of %s: %w", u.Username, err))
		return
	case !ok:
		attempt.Fail()
		s.log.Warn("password change refused: wrong current password", "user", u.Username, "client", s.clientIP(r))
		writeError(w, http.StatusForbidden, "the current password is wrong")
		return
	}
	attempt.Succeed()
	hash, err := s.hasher.Hash(ctx, c.NewPassword)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if err := s.store.SetPassword(ctx, u.Username, hash); err != nil { // ends every session of u
		s.internal(w, r, err)
		return
	}
	s.log.Info("password changed", "user", u.Username)
	s.startSession(w, r, u, http.StatusOK)
}

type userChange struct {
	Role     *api.Role `json:"role"`
	Password *string   `json:"password"`
}

// handleUpdateUser is an admin's change to an account: its role, a new
// password (which ends the user's sessions), or both. Both are checked
// before either is written.
func (s *Server) handleUpdateUser(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	var c userChange
	if !decodeJSON(w, r, &c) {
		return
	}
	if c.Role == nil && c.Password == nil {
		writeError(w, http.StatusBadRequest, `give "role", "password" or both`)
		return
	}
	if c.Role != nil {
		if err := c.Role.Check(); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	if c.Password != nil {
		if err := auth.CheckPassword(*c.Password); err != nil {
			writeError(w, http.StatusBadRequest, err.Error())
			return
		}
	}
	ctx := r.Context()
	u, err := s.store.UserByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		writeError(w, http.StatusNotFound, "no user named "+name)
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	by := principalFrom(ctx).username
	out := api.User{Username: u.Username, Role: u.Role, CreatedAt: u.CreatedAt}
	if c.Role != nil {
		out, err = s.store.SetRole(ctx, u.Username, *c.Role)
		switch {
		case errors.Is(err, store.ErrLastAdmin):
			writeError(w, http.StatusConflict, u.Username+" is the last admin: make another admin first")
			return
		case err != nil:
			s.internal(w, r, err)
			return
		}
		s.log.Info("user role changed", "user", u.Username, "role", out.Role, "by", by)
	}
	if c.Password != nil {
		hash, err := s.hasher.Hash(ctx, *c.Password)
		if err != nil {
			s.internal(w, r, err)
			return
		}
		if err := s.store.SetPassword(ctx, u.Username, hash); err != nil {
			s.internal(w, r, err)
			return
		}
		s.log.Info("user password reset", "user", u.Username, "by", by)
	}
	writeJSON(w, http.StatusOK, out)
}
