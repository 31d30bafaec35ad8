package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/store"
)

// contentSecurityPolicy fits a Vite-built React app: scripts and styles
// come from the daemon's own origin as files (no inline script); inline
// style attributes are allowed because UI libraries set them; nothing may
// frame the UI.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; " +
	"img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

func (s *Server) securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Permissions-Policy", "camera=(), microphone=(), geolocation=(), payment=(), usb=()")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if s.isHTTPS(r) {
			h.Set("Strict-Transport-Security", "max-age=31536000")
		}
		next.ServeHTTP(w, r)
	})
}

func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

func limitBody(n int64) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.ContentLength > n {
				writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", n))
				return
			}
			r.Body = http.MaxBytesReader(w, r.Body, n)
			next.ServeHTTP(w, r)
		})
	}
}

func (s *Server) recoverPanics(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("panic in HTTP handler", "method", r.Method, "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				writeError(w, http.StatusInternalServerError, "internal error; see the daemon's log")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// observe records metrics and a debug line per request.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		ww := middleware.NewWrapResponseWriter(w, r.ProtoMajor)
		next.ServeHTTP(ww, r)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "other"
		}
		code := ww.Status()
		if code == 0 {
			code = http.StatusOK
		}
		s.metrics.HTTPRequests.WithLabelValues(route, r.Method, strconv.Itoa(code)).Inc()
		if !strings.HasSuffix(route, "/events") && !strings.HasSuffix(route, "/stream") {
			s.metrics.HTTPDuration.WithLabelValues(route).Observe(time.Since(start).Seconds())
		}
		s.log.Debug("http request", "method", r.Method, "route", route, "status", code, "duration", time.Since(start))
	})
}

// crossOriginCheck refuses state-changing requests a browser marks as
// cross-origin (Sec-Fetch-Site, Origin), login and setup included: a second
// line behind the CSRF token.
func (s *Server) crossOriginCheck(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := s.crossOrigin.Check(r); err != nil {
			writeError(w, http.StatusForbidden, "cross-origin request refused")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// cliUserHeader is where the proxmops CLI names its OS user; cliUserRE
// keeps what is shown to a plain user name.
const cliUserHeader = "X-Proxmops-Cli-User"

var cliUserRE = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// principal is who makes a request.
type principal struct {
	userID       int64
	username     string
	role         api.Role
	sessionToken string // set when authenticated by the session cookie
	sessionHash  []byte
	apiTokenID   int64
	tokenName    string // set for an API token
	cliUser      string // the OS user the proxmops CLI named beside its token
	via          string // api.ViaOIDC for a single sign-on session
}

// actor is the principal as what starts the work it asks for.
func (p *principal) actor() api.Actor {
	if p.apiTokenID != 0 && p.cliUser != "" {
		return api.Actor{Kind: api.ActorCLI, Name: p.cliUser, Token: p.tokenName}
	}
	if p.apiTokenID != 0 {
		return api.Actor{Kind: api.ActorToken, Name: p.tokenName}
	}
	return api.Actor{Kind: api.ActorUser, Name: p.username, Via: p.via}
}

type ctxKey struct{}

func principalFrom(ctx context.Context) *principal {
	p, _ := ctx.Value(ctxKey{}).(*principal)
	return p
}

// authenticate identifies the caller by API token (Authorization: Bearer)
// or session cookie. A bad bearer token is refused outright; a stale or
// unknown cookie is just ignored (and cleared), never adopted.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		if h := r.Header.Get("Authorization"); h != "" {
			scheme, tok, _ := strings.Cut(h, " ")
			if !strings.EqualFold(scheme, "Bearer") || tok == "" {
				writeError(w, http.StatusUnauthorized, "the Authorization header must be: Bearer <API token>")
				return
			}
			t, err := s.store.APITokenByHash(ctx, auth.HashToken(strings.TrimSpace(tok)))
			if errors.Is(err, store.ErrNotFound) {
				writeError(w, http.StatusUnauthorized, "unknown or revoked API token")
				return
			}
			if err != nil {
				s.internal(w, r, err)
				return
			}
			now := time.Now()
			if t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) > time.Minute {
				if err := s.store.TouchAPIToken(ctx, t.ID, now); err != nil {
					s.log.Warn("recording API token use failed", "err", err)
				}
			}
			name := "token:" + t.Name
			p := &principal{username: name, role: t.Role, apiTokenID: t.ID, tokenName: t.Name}
			if u := r.Header.Get(cliUserHeader); cliUserRE.MatchString(u) {
				// The proxmops CLI names the person running it: the
				// history then shows who acted through which token.
				p.username += " (cli, " + u + ")"
				p.cliUser = u
			}
			ctx = api.WithActor(context.WithValue(ctx, ctxKey{}, p), p.actor())
			next.ServeHTTP(w, r.WithContext(ctx))
			return
		}
		if c, err := r.Cookie(cookieName); err == nil && c.Value != "" {
			p, err := s.sessionPrincipal(ctx, c.Value)
			if err != nil {
				s.internal(w, r, err)
				return
			}
			if p == nil {
				s.clearCookie(w, r)
			} else {
				ctx = api.WithActor(context.WithValue(ctx, ctxKey{}, p), p.actor())
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// sessionPrincipal returns the session's principal, or nil when the token
// is unknown, expired or idle too long (then the session is removed).
func (s *Server) sessionPrincipal(ctx context.Context, token string) (*principal, error) {
	if !auth.HasPrefix(token, auth.PrefixSession) || len(token) > 200 {
		return nil, nil
	}
	hash := auth.HashToken(token)
	ss, err := s.store.SessionByHash(ctx, hash)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	now := time.Now()
	if !now.Before(ss.ExpiresAt) || now.Sub(ss.LastSeenAt) >= s.opt.SessionIdle {
		if err := s.store.DeleteSession(ctx, hash); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if now.Sub(ss.LastSeenAt) > time.Minute {
		if err := s.store.TouchSession(ctx, hash, now); err != nil {
			return nil, err
		}
	}
	return &principal{userID: ss.UserID, username: ss.Username, role: ss.Role, sessionToken: token, sessionHash: hash, via: ss.Via}, nil
}

// requireRole lets through callers with role or more (admin > viewer).
func (s *Server) requireRole(role api.Role) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p := principalFrom(r.Context())
			switch {
			case p == nil:
				writeError(w, http.StatusUnauthorized, "log in first")
			case role == api.RoleAdmin && p.role != api.RoleAdmin:
				writeError(w, http.StatusForbidden, "this needs the admin role; "+p.username+" is a "+string(p.role))
			default:
				next.ServeHTTP(w, r)
			}
		})
	}
}

// checkCSRF requires the X-CSRF-Token header on state-changing requests
// authenticated by the session cookie. API tokens need none: a browser
// never sends them by itself.
func (s *Server) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
			next.ServeHTTP(w, r)
			return
		}
		p := principalFrom(r.Context())
		if p != nil && p.sessionToken != "" && !auth.CheckCSRF(p.sessionToken, r.Header.Get(csrfHeader)) {
			writeError(w, http.StatusForbidden, "missing or wrong CSRF token: send the header "+csrfHeader+" with the csrfToken from GET /api/v1/me")
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isHTTPS tells whether the client reached us over HTTPS, directly or
// through a trusted proxy that says so.
func (s *Server) isHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	return s.fromTrustedProxy(r) && strings.EqualFold(strings.TrimSpace(strings.Split(r.Header.Get("X-Forwarded-Proto"), ",")[0]), "https")
}

func remoteAddr(r *http.Request) (netip.Addr, bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	return a.Unmap(), err == nil
}

func (s *Server) trustedAddr(a netip.Addr) bool {
	for _, p := range s.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

func (s *Server) fromTrustedProxy(r *http.Request) bool {
	a, ok := remoteAddr(r)
	return ok && s.trustedAddr(a)
}

// clientIP is the address rate limits apply to: the peer, or behind trusted
// proxies the right-most X-Forwarded-For address that is not one of them.
func (s *Server) clientIP(r *http.Request) string {
	a, ok := remoteAddr(r)
	if !ok {
		return r.RemoteAddr
	}
	if !s.trustedAddr(a) {
		return a.String()
	}
	hops := strings.Split(r.Header.Get("X-Forwarded-For"), ",")
	if s.opt.TrustProxy { // every peer is a proxy: the hop it appended
		if h, err := netip.ParseAddr(strings.TrimSpace(hops[len(hops)-1])); err == nil {
			return h.Unmap().String()
		}
		return a.String()
	}
	for i := len(hops) - 1; i >= 0; i-- {
		h, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
		if err != nil {
			break
		}
		if h = h.Unmap(); !s.trustedAddr(h) {
			return h.String()
		}
	}
	return a.String()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// answerList answers err, or v (200) with its list empty, never null.
func answerList[T, E any](s *Server, w http.ResponseWriter, r *http.Request, v *T, list *[]E, err error) {
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if *list == nil {
		*list = []E{}
	}
	writeJSON(w, http.StatusOK, v)
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, api.Error{Error: msg})
}

// internal answers 500 without detail and logs the cause.
func (s *Server) internal(w http.ResponseWriter, r *http.Request, err error) {
	s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	writeError(w, http.StatusInternalServerError, "internal error; see the daemon's log")
}

// fail answers a backend error with the status its kind calls for and its
// words (a backend's errors are written for people).
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := http.StatusInternalServerError
	switch {
	case errors.Is(err, api.ErrNotFound):
		status = http.StatusNotFound
	case errors.Is(err, api.ErrNotOwned), errors.Is(err, api.ErrConflict):
		status = http.StatusConflict
	case errors.Is(err, api.ErrNotReady):
		status = http.StatusServiceUnavailable
	case errors.Is(err, api.ErrInvalid):
		status = http.StatusBadRequest
	case errors.Is(err, context.DeadlineExceeded):
		status = http.StatusGatewayTimeout
	case errors.Is(err, context.Canceled):
		return // the client went away
	}
	if status == http.StatusInternalServerError {
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
	}
	writeError(w, status, err.Error())
}

// decodeJSON reads a JSON object body into v, strictly: application/json,
// no unknown fields, nothing after the object.
func decodeJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
			writeError(w, http.StatusUnsupportedMediaType, "send the body as Content-Type: application/json")
			return false
		}
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid JSON body: "+err.Error())
		return false
	}
	// Only space may follow the object: not another value, nor a stray
	// bracket (which dec.More alone lets through).
	if _, err := dec.Token(); err != io.EOF {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("the request body is larger than %d bytes", tooBig.Limit))
			return false
		}
		writeError(w, http.StatusBadRequest, "invalid JSON body: more than one value")
		return false
	}
	return true
}
