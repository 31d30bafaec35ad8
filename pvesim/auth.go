package pvesim

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"math/rand"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// authInfo is who is calling.
type authInfo struct {
	user     string
	isToken  bool
	isUpload bool
}

// ticketKeys signs login tickets and CSRF prevention tokens.
type ticketKeys struct {
	ticketKey []byte
	csrfKey   []byte
}

func newTicketKeys(rng *rand.Rand) *ticketKeys {
	k := &ticketKeys{ticketKey: make([]byte, 32), csrfKey: make([]byte, 32)}
	rng.Read(k.ticketKey)
	rng.Read(k.csrfKey)
	return k
}

// ticketLifetime is how long Proxmox accepts a ticket (two hours).
const ticketLifetime = 2 * time.Hour

func (k *ticketKeys) sign(key []byte, data string) string {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return base64.RawStdEncoding.EncodeToString(m.Sum(nil))
}

// ticket is "PVE:<user>:<hex time>::<signature>", shaped like Proxmox's.
func (k *ticketKeys) ticket(user string, now time.Time) string {
	plain := fmt.Sprintf("PVE:%s:%08X", user, now.Unix())
	return plain + "::" + k.sign(k.ticketKey, plain)
}

func (k *ticketKeys) csrf(user string, now time.Time) string {
	ts := fmt.Sprintf("%08X", now.Unix())
	return ts + ":" + k.sign(k.csrfKey, ts+":"+user)
}

func (k *ticketKeys) verifyTicket(t string, now time.Time) (string, bool) {
	plain, sig, ok := strings.Cut(t, "::")
	if !ok || subtle.ConstantTimeCompare([]byte(k.sign(k.ticketKey, plain)), []byte(sig)) != 1 {
		return "", false
	}
	parts := strings.Split(plain, ":")
	if len(parts) != 3 || parts[0] != "PVE" {
		return "", false
	}
	ts, err := strconv.ParseInt(parts[2], 16, 64)
	if err != nil {
		return "", false
	}
	age := now.Sub(time.Unix(ts, 0))
	if age < -5*time.Minute || age > ticketLifetime {
		return "", false
	}
	return parts[1], true
}

func (k *ticketKeys) verifyCSRF(user, token string, now time.Time) bool {
	ts, sig, ok := strings.Cut(token, ":")
	if !ok || len(ts) != 8 {
		return false
	}
	if subtle.ConstantTimeCompare([]byte(k.sign(k.csrfKey, ts+":"+user)), []byte(sig)) != 1 {
		return false
	}
	t, err := strconv.ParseInt(ts, 16, 64)
	if err != nil {
		return false
	}
	age := now.Sub(time.Unix(t, 0))
	return age > -5*time.Minute && age < ticketLifetime
}

// extractAuthValue is PVE::APIServer::Formatter::extract_auth_value:
// "name=value" in a Cookie or Authorization header, URI-unescaped.
func extractAuthValue(header, name string) string {
	for i := 0; i < len(header); {
		j := strings.Index(header[i:], name+"=")
		if j < 0 {
			return ""
		}
		j += i
		if j == 0 || header[j-1] == ' ' || header[j-1] == '\t' {
			v := header[j+len(name)+1:]
			if k := strings.IndexByte(v, ';'); k >= 0 {
				v = v[:k]
			}
			if u, err := url.PathUnescape(v); err == nil {
				return u
			}
			return v
		}
		i = j + 1
	}
	return ""
}

func unauthenticated(rel, method string) bool {
	return (rel == "/access/domains" && method == "GET") ||
		(rel == "/access/ticket" && (method == "GET" || method == "POST"))
}

// authenticate is pve-manager's auth_handler: a ticket cookie first, then
// an API token; writes with a ticket need the CSRF prevention token.
func (s *Server) authenticate(hr *http.Request, rel string) (authInfo, *route.APIError) {
	if unauthenticated(rel, hr.Method) {
		return authInfo{}, nil
	}
	cookie := hr.Header.Get("Cookie")
	authz := hr.Header.Get("Authorization")
	ticket := extractAuthValue(cookie, "PVEAuthCookie")
	if ticket == "" {
		ticket = extractAuthValue(authz, "PVEAuthCookie")
	}
	now := s.clock.Now()
	var info authInfo
	if ticket == "" {
		token := extractAuthValue(authz, "PVEAPIToken")
		if token == "" {
			return info, &route.APIError{Status: 401, Message: "No ticket", NoBody: true}
		}
		id, secret, ok := strings.Cut(token, "=")
		if !ok || s.opts.TokenID == "" || id != s.opts.TokenID ||
			subtle.ConstantTimeCompare([]byte(secret), []byte(s.opts.TokenSecret)) != 1 {
			return info, &route.APIError{Status: 401, Message: "Authentication failed!", NoBody: true}
		}
		info = authInfo{user: id, isToken: true}
	} else {
		user, ok := s.tickets.verifyTicket(ticket, now)
		if !ok {
			return info, &route.APIError{Status: 401, Message: "Authentication failed!", NoBody: true}
		}
		info = authInfo{user: user}
	}
	if hr.Method == "POST" && strings.HasPrefix(rel, "/nodes/") && strings.HasSuffix(rel, "/upload") {
		info.isUpload = true
	}
	if hr.Method != "GET" && !info.isToken && !info.isUpload {
		if !s.tickets.verifyCSRF(info.user, hr.Header.Get("CSRFPreventionToken"), now) {
			return info, &route.APIError{Status: 401, Message: "Permission denied - invalid csrf token", NoBody: true}
		}
	}
	return info, nil
}

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/access/ticket", Unauthenticated: true,
			Handler: func(*route.Request) (any, error) { return nil, nil }})
		s.Handle(&route.Route{Method: "POST", Path: "/access/ticket", Unauthenticated: true, NoToken: true, Class: "auth",
			Params: route.NewParams(
				route.Str("username").MaxLen(64),
				route.Str("password"),
				route.Str("realm").Opt().MaxLen(32).Fmt("pve-realm"),
				route.Str("otp").Opt(),
				route.Str("path").Opt().MaxLen(64).Requires("privs"),
				route.Str("privs").Opt().MaxLen(64).Fmt("pve-priv-list").Requires("path"),
				route.Bool("new-format").Opt(),
				route.Str("tfa-challenge").Opt(),
			),
			Handler: s.createTicket})
		s.Handle(&route.Route{Method: "GET", Path: "/access/domains", Unauthenticated: true,
			Handler: func(*route.Request) (any, error) {
				return []map[string]any{
					{"realm": "pam", "type": "pam", "comment": "Linux PAM standard authentication"},
					{"realm": "pve", "type": "pve", "comment": "Proxmox VE authentication server"},
				}, nil
			}})
	})
}

func (s *Server) createTicket(r *route.Request) (any, error) {
	user := r.Str("username")
	if realm := r.Str("realm"); realm != "" && !strings.Contains(user, "@") {
		user += "@" + realm
	}
	if s.opts.RootPassword == "" || user != "root@pam" ||
		subtle.ConstantTimeCompare([]byte(r.Str("password")), []byte(s.opts.RootPassword)) != 1 {
		return nil, route.Failf(401, "authentication failure")
	}
	now := s.clock.Now()
	return map[string]any{
		"username":            user,
		"ticket":              s.tickets.ticket(user, now),
		"CSRFPreventionToken": s.tickets.csrf(user, now),
		"clustername":         "pvesim",
		"cap":                 map[string]any{},
	}, nil
}
