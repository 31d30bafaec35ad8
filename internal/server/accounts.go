package server

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/secrets"
	"github.com/proxmops/proxmops/internal/store"
)

// prepareSetup shows the one-time setup token while no account exists. The
// token belongs to the database (store.EnsureSetupToken): every start and
// every replica shows the same one until it is used. It goes to SetupOutput
// and the 0600 SetupTokenFile (SQLite), never to the log or, in clear, to the
// database.
func (s *Server) prepareSetup(ctx context.Context) error {
	n, err := s.store.CountUsers(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		s.removeSetupTokenFile()
		return nil
	}
	earlier := s.fileSetupToken()
	token, err := s.store.EnsureSetupToken(ctx, func() (string, []byte) {
		if earlier != "" { // written before the database kept its token: still the one the user has
			return earlier, auth.HashToken(earlier)
		}
		return auth.NewToken(auth.PrefixSetup)
	}, auth.HashToken)
	if errors.Is(err, store.ErrSetupDone) { // another replica's setup just finished
		return nil
	}
	if err != nil {
		return err
	}
	also := ""
	if f := s.opt.SetupTokenFile; f != "" {
		if err := secrets.WritePrivateFile(f, token+"\n"); err != nil {
			return fmt.Errorf("write setup token file: %w", err)
		}
		also = "also in " + f + "; "
	}
	fmt.Fprintf(s.opt.SetupOutput, "\nproxmops first-run setup: open the web UI and create the first admin with this one-time token:\n\n    %s\n\n(%sit stops working once used)\n\n", token, also)
	s.log.Info("no account yet: a one-time setup token was printed on standard output", "file", s.opt.SetupTokenFile)
	return nil
}

// fileSetupToken is the token in SetupTokenFile, "" when there is none.
func (s *Server) fileSetupToken() string {
	if s.opt.SetupTokenFile == "" {
		return ""
	}
	b, err := os.ReadFile(s.opt.SetupTokenFile)
	if err != nil {
		return "" // missing or unreadable: the database's token, or a new one
	}
	token := strings.TrimSpace(string(b))
	if !auth.HasPrefix(token, auth.PrefixSetup) {
		return ""
	}
	return token
}

func (s *Server) removeSetupTokenFile() {
	if s.opt.SetupTokenFile == "" {
		return
	}
	if err := os.Remove(s.opt.SetupTokenFile); err != nil && !errors.Is(err, os.ErrNotExist) {
		s.log.Warn("removing the used setup token file failed", "file", s.opt.SetupTokenFile, "err", err)
	}
}

func (s *Server) handleSetupNeeded(w http.ResponseWriter, r *http.Request) {
	n, err := s.store.CountUsers(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.SetupState{Needed: n == 0})
}

type credentials struct {
	Token    string `json:"token,omitempty"`
	Username string `json:"username"`
	Password string `json:"password"`
}

// handleSetup spends the setup token to create the first admin, who is then
// logged in.
func (s *Server) handleSetup(w http.ResponseWriter, r *http.Request) {
	var c credentials
	if !decodeJSON(w, r, &c) {
		return
	}
	attempt, _, wait := auth.Reserve(auth.Limit{Limiter: s.clientLimiter, Key: "setup:" + s.clientIP(r)})
	if attempt == nil {
		tooMany(w, wait, "too many wrong setup tokens from this address")
		return
	}
	defer attempt.Cancel() // unless settled below
	if err := auth.CheckUsername(c.Username); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := auth.CheckPassword(c.Password); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	ctx := r.Context()
	n, err := s.store.CountUsers(ctx)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	if n > 0 {
		writeError(w, http.StatusConflict, "setup is already done: log in instead")
		return
	}
	hash, err := s.hasher.Hash(ctx, c.Password)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	u, err := s.store.CompleteSetup(ctx, auth.HashToken(strings.TrimSpace(c.Token)), c.Username, hash)
	switch {
	case errors.Is(err, store.ErrSetupToken):
		attempt.Fail()
		s.log.Warn("setup refused: wrong or used setup token", "client", s.clientIP(r))
		writeError(w, http.StatusUnauthorized, "the setup token is wrong or was already used")
		return
	case errors.Is(err, store.ErrSetupDone):
		writeError(w, http.StatusConflict, "setup is already done: log in instead")
		return
	case err != nil:
		s.internal(w, r, err)
		return
	}
	attempt.Succeed()
	s.removeSetupTokenFile()
	s.log.Info("first admin created", "user", u.Username)
	s.startSession(w, r, u, http.StatusCreated)
}

// handleLogin checks a password. Unknown accounts cost the same as known
// ones (a dummy hash is verified). An attempt is reserved under the three
// login limits (docs/configuration.md, "Login limits") before the hash, so
// concurrent guesses count as much as sequential ones; a refusal is a 429
// that says how long to wait.
func (s *Server) handleLogin(w http.ResponseWriter, r *http.Request) {
	var c credentials
	if !decodeJSON(w, r, &c) {
		return
	}
	ip := s.clientIP(r)
	account := strings.ToLower(c.Username)
	if len(account) > 64 { // no such account (auth.CheckUsername); bound the key
		account = account[:64]
	}
	attempt, which, wait := auth.Reserve(
		auth.Limit{Limiter: s.clientLimiter, Key: "login:" + ip, KeepOnSuccess: true},
		auth.Limit{Limiter: s.pairLimiter, Key: ip + " " + account},
		auth.Limit{Limiter: s.accountLimiter, Key: account})
	if attempt == nil {
		s.metrics.LoginFailures.Inc()
		why := [...]string{"too many failed logins from this address",
			"too many failed logins for this account from this address", "too many failed logins for this account"}[which]
		tooMany(w, wait, why)
		return
	}
	defer attempt.Cancel() // unless settled below
	ctx := r.Context()
	u, err := s.store.UserByName(ctx, c.Username)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		s.internal(w, r, err)
		return
	}
	ok, verr := s.hasher.Verify(ctx, c.Password, u.PasswordHash) // "" hash: dummy check
	switch {
	case errors.Is(verr, auth.ErrBusy):
		w.Header().Set("Retry-After", "1")
		writeError(w, http.StatusServiceUnavailable, "too many logins at once: try again in a second")
		return
	case verr != nil && ctx.Err() != nil:
		return // the client went away while waiting for its turn
	case verr != nil && err == nil:
		s.internal(w, r, fmt.Errorf("password hash of %s: %w", u.Username, verr))
		return
	}
	if !ok {
		attempt.Fail()
		s.metrics.LoginFailures.Inc()
		s.log.Warn("login failed", "user", c.Username, "client", ip)
		writeError(w, http.StatusUnauthorized, "wrong username or password")
		return
	}
	attempt.Succeed()
	// A session the request already carried is ended: login always issues
	// a new token, so a planted cookie is never promoted.
	if p := principalFrom(ctx); p != nil && p.sessionHash != nil {
		if err := s.store.DeleteSession(ctx, p.sessionHash); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	s.log.Info("login", "user", u.Username, "client", ip)
	s.startSession(w, r, u, http.StatusOK)
}

func tooMany(w http.ResponseWriter, wait time.Duration, why string) {
	secs := int(math.Ceil(wait.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeError(w, http.StatusTooManyRequests, fmt.Sprintf("%s: try again in %d seconds", why, secs))
}

func (s *Server) startSession(w http.ResponseWriter, r *http.Request, u store.User, status int) {
	token, hash := auth.NewToken(auth.PrefixSession)
	now := time.Now()
	if err := s.store.CreateSession(r.Context(), hash, u.ID, now, now.Add(s.opt.SessionTTL)); err != nil {
		s.internal(w, r, err)
		return
	}
	s.setSessionCookie(w, r, token)
	writeJSON(w, status, api.Me{Username: u.Username, Role: u.Role, CSRFToken: auth.CSRFToken(token)})
}

func (s *Server) setSessionCookie(w http.ResponseWriter, r *http.Request, token string) {
	http.SetCookie(w, &http.Cookie{
		Name: cookieName, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteLaxMode,
		Secure: s.isHTTPS(r), MaxAge: int(s.opt.SessionTTL.Seconds()),
	})
}

func (s *Server) clearCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: "/", HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.isHTTPS(r), MaxAge: -1})
}

func (s *Server) handleLogout(w http.ResponseWriter, r *http.Request) {
	if p := principalFrom(r.Context()); p != nil && p.sessionHash != nil {
		if err := s.store.DeleteSession(r.Context(), p.sessionHash); err != nil {
			s.internal(w, r, err)
			return
		}
		s.log.Info("logout", "user", p.username)
	}
	s.clearCookie(w, r)
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	p := principalFrom(r.Context())
	me := api.Me{Username: p.username, Role: p.role, Via: p.via}
	if p.sessionToken != "" {
		me.CSRFToken = auth.CSRFToken(p.sessionToken)
	}
	writeJSON(w, http.StatusOK, me)
}

func (s *Server) handleUsers(w http.ResponseWriter, r *http.Request) {
	users, err := s.store.Users(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.UserList{Users: users})
}

type newUser struct {
	Username string   `json:"username"`
	Password string   `json:"password"`
	Role     api.Role `json:"role"`
}

func (s *Server) handleCreateUser(w http.ResponseWriter, r *http.Request) {
	var nu newUser
	if !decodeJSON(w, r, &nu) {
		return
	}
	if err := auth.CheckUsername(nu.Username); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := auth.CheckPassword(nu.Password); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := nu.Role.Check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	hash, err := s.hasher.Hash(r.Context(), nu.Password)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	u, err := s.store.CreateUser(r.Context(), nu.Username, hash, nu.Role)
	if errors.Is(err, store.ErrExists) {
		writeError(w, http.StatusConflict, "a user named "+nu.Username+" already exists")
		return
	}
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.log.Info("user created", "user", u.Username, "role", u.Role, "by", principalFrom(r.Context()).username)
	writeJSON(w, http.StatusCreated, api.User{Username: u.Username, Role: u.Role, CreatedAt: u.CreatedAt})
}

func (s *Server) handleDeleteUser(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	err := s.store.DeleteUser(r.Context(), name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no user named "+name)
	case errors.Is(err, store.ErrLastAdmin):
		writeError(w, http.StatusConflict, "the last admin cannot be removed: make another admin first")
	case err != nil:
		s.internal(w, r, err)
	default:
		s.log.Info("user deleted", "user", name, "by", principalFrom(r.Context()).username)
		w.WriteHeader(http.StatusNoContent)
	}
}

func (s *Server) handleTokens(w http.ResponseWriter, r *http.Request) {
	tokens, err := s.store.APITokens(r.Context())
	if err != nil {
		s.internal(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, api.TokenList{Tokens: tokens})
}

type newToken struct {
	Name string   `json:"name"`
	Role api.Role `json:"role"`
}

func (s *Server) handleCreateToken(w http.ResponseWriter, r *http.Request) {
	var nt newToken
	if !decodeJSON(w, r, &nt) {
		return
	}
	nt.Name = strings.TrimSpace(nt.Name)
	if nt.Name == "" || len(nt.Name) > 100 {
		writeError(w, http.StatusBadRequest, "a token needs a name of 1 to 100 characters")
		return
	}
	if err := nt.Role.Check(); err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	p := principalFrom(r.Context())
	token, hash := auth.NewToken(auth.PrefixAPI)
	t, err := s.store.CreateAPIToken(r.Context(), nt.Name, nt.Role, hash, p.userID)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	s.log.Info("API token created", "name", t.Name, "role", t.Role, "by", p.username)
	writeJSON(w, http.StatusCreated, api.NewToken{ID: strconv.FormatInt(t.ID, 10), Name: t.Name, Role: t.Role, Token: token})
}

func (s *Server) handleDeleteToken(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(chi.URLParam(r, "id"), 10, 64)
	if err != nil {
		writeError(w, http.StatusNotFound, "no API token with id "+chi.URLParam(r, "id"))
		return
	}
	err = s.store.DeleteAPIToken(r.Context(), id)
	switch {
	case errors.Is(err, store.ErrNotFound):
		writeError(w, http.StatusNotFound, "no API token with id "+chi.URLParam(r, "id"))
	case err != nil:
		s.internal(w, r, err)
	default:
		s.log.Info("API token revoked", "id", id, "by", principalFrom(r.Context()).username)
		w.WriteHeader(http.StatusNoContent)
	}
}
