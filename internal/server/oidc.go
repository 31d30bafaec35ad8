package server

import (
	"context"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	"golang.org/x/oauth2"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
)

// Single sign-on with OpenID Connect: the authorization code flow with
// PKCE (S256), state and nonce. What the callback must check travels in a
// cookie sealed with the database's key, so any replica can finish a login
// another began and nothing is kept per login on the server.
const (
	oidcCookie    = "proxmops_oidc"
	oidcCookieFor = "oidc-login"
	oidcPath      = "/api/v1/auth/oidc"
	oidcFlowTTL   = 10 * time.Minute
	oidcTimeout   = 30 * time.Second
)

// oidcFlow is one login under way.
type oidcFlow struct {
	State    string `json:"s"`
	Nonce    string `json:"n"`
	Verifier string `json:"v"`
	Redirect string `json:"r"` // the redirect_uri sent, sent again at the exchange
	Expires  int64  `json:"e"` // Unix seconds
}

// oidcProviders caches the provider's discovery document per issuer; a
// failed discovery is tried again at the next login.
type oidcProviders struct {
	mu   sync.Mutex
	byIs map[string]*oidc.Provider
}

func (p *oidcProviders) get(ctx context.Context, issuer string) (*oidc.Provider, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.byIs[issuer]; ok {
		return pr, nil
	}
	pr, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, err
	}
	if p.byIs == nil {
		p.byIs = map[string]*oidc.Provider{}
	}
	p.byIs[issuer] = pr
	return pr, nil
}

// oidcConfig is auth.oidc with its defaults (Load fills them; a
// configuration built otherwise may not have).
func (s *Server) oidcConfig() config.OIDC {
	o := s.Config().Auth.OIDC
	if o.RoleClaim == "" {
		o.RoleClaim = config.DefaultOIDCRoleClaim
	}
	if o.Name == "" {
		o.Name = "SSO"
	}
	if len(o.Scopes) == 0 {
		o.Scopes = []string{"profile", "email", "groups"}
	}
	return o
}

// handleAuthMethods tells the login page how one may log in (no login
// needed): always a password, and single sign-on when configured.
func (s *Server) handleAuthMethods(w http.ResponseWriter, _ *http.Request) {
	doc := api.AuthMethods{Password: true}
	if o := s.oidcConfig(); o.Enabled() {
		doc.OIDC = &api.OIDCMethod{Name: o.Name, LoginURL: oidcPath + "/login"}
	}
	writeJSON(w, http.StatusOK, doc)
}

// oauthConfig is the OAuth 2.0 client of a login answered at r.
func (s *Server) oauthConfig(r *http.Request, o config.OIDC, pr *oidc.Provider) *oauth2.Config {
	redirect := o.RedirectURL
	if redirect == "" {
		scheme := "http"
		if s.isHTTPS(r) {
			scheme = "https"
		}
		redirect = scheme + "://" + r.Host + oidcPath + "/callback"
	}
	scopes := []string{oidc.ScopeOpenID}
	for _, sc := range o.Scopes {
		if sc != oidc.ScopeOpenID {
			scopes = append(scopes, sc)
		}
	}
	return &oauth2.Config{ClientID: o.ClientID, ClientSecret: o.ClientSecret, Endpoint: pr.Endpoint(), RedirectURL: redirect, Scopes: scopes}
}

// handleOIDCLogin starts a login: it seals state, nonce and the PKCE
// verifier into a cookie and sends the browser to the provider.
func (s *Server) handleOIDCLogin(w http.ResponseWriter, r *http.Request) {
	o := s.oidcConfig()
	if !o.Enabled() {
		s.refuseLogin(w, http.StatusNotFound, "Single sign-on is not configured on this proxmops (auth.oidc.issuer).")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), oidcTimeout)
	defer cancel()
	pr, err := s.oidc.get(ctx, o.Issuer)
	if err != nil {
		s.log.Warn("single sign-on: the provider's discovery failed", "issuer", o.Issuer, "err", err)
		s.refuseLogin(w, http.StatusBadGateway, "The identity provider at "+o.Issuer+" does not answer: "+err.Error())
		return
	}
	oc := s.oauthConfig(r, o, pr)
	state, _ := auth.NewToken("st")
	nonce, _ := auth.NewToken("nc")
	flow := oidcFlow{State: state, Nonce: nonce, Verifier: oauth2.GenerateVerifier(), Redirect: oc.RedirectURL,
		Expires: s.opt.Now().Add(oidcFlowTTL).Unix()}
	b, _ := json.Marshal(flow)
	sealed, err := s.store.SealValue(oidcCookieFor, b)
	if err != nil {
		s.internal(w, r, err)
		return
	}
	// Lax: the provider's redirect back is a top-level GET, which carries it.
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: base64.RawURLEncoding.EncodeToString(sealed), Path: oidcPath,
		HttpOnly: true, SameSite: http.SameSiteLaxMode, Secure: s.isHTTPS(r), MaxAge: int(oidcFlowTTL.Seconds())})
	http.Redirect(w, r, oc.AuthCodeURL(flow.State, oidc.Nonce(flow.Nonce), oauth2.S256ChallengeOption(flow.Verifier)), http.StatusFound)
}

// readFlow opens the login's cookie and clears it: a callback is used once.
func (s *Server) readFlow(w http.ResponseWriter, r *http.Request) (oidcFlow, bool) {
	http.SetCookie(w, &http.Cookie{Name: oidcCookie, Value: "", Path: oidcPath, HttpOnly: true,
		SameSite: http.SameSiteLaxMode, Secure: s.isHTTPS(r), MaxAge: -1})
	c, err := r.Cookie(oidcCookie)
	if err != nil || len(c.Value) > 4096 {
		return oidcFlow{}, false
	}
	sealed, err := base64.RawURLEncoding.DecodeString(c.Value)
	if err != nil {
		return oidcFlow{}, false
	}
	b, err := s.store.OpenValue(oidcCookieFor, sealed)
	if err != nil {
		return oidcFlow{}, false
	}
	var f oidcFlow
	if json.Unmarshal(b, &f) != nil || s.opt.Now().Unix() > f.Expires {
		return oidcFlow{}, false
	}
	return f, true
}

// handleOIDCCallback finishes a login: the state against the cookie's, the
// code exchanged with the PKCE verifier, the ID token verified (signature,
// issuer, audience, expiry) and its nonce against the cookie's; then the
// groups decide the role and a session starts as a password login's does.
func (s *Server) handleOIDCCallback(w http.ResponseWriter, r *http.Request) {
	o := s.oidcConfig()
	if !o.Enabled() {
		s.refuseLogin(w, http.StatusNotFound, "Single sign-on is not configured on this proxmops (auth.oidc.issuer).")
		return
	}
	flow, ok := s.readFlow(w, r)
	q := r.URL.Query()
	switch {
	case !ok:
		s.refuseLogin(w, http.StatusBadRequest, "This sign-in was not started here, was started more than 10 minutes ago or was already used. Start again.")
		return
	case q.Get("error") != "":
		s.refuseLogin(w, http.StatusUnauthorized, "The identity provider refused the sign-in: "+q.Get("error")+" "+q.Get("error_description"))
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(flow.State)) != 1:
		s.log.Warn("single sign-on refused: the state does not match", "client", s.clientIP(r))
		s.refuseLogin(w, http.StatusBadRequest, "The sign-in's state does not match the one this browser started (a forged or mixed-up callback). Start again.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), oidcTimeout)
	defer cancel()
	id, status, err := s.oidcIdentity(ctx, r, o, flow, q.Get("code"))
	if err != nil {
		s.log.Warn("single sign-on refused", "reason", err.Error(), "client", s.clientIP(r))
		s.refuseLogin(w, status, err.Error())
		return
	}
	role := groupRole(id.groups, o)
	if role == "" {
		s.log.Warn("single sign-on refused: no mapped group", "user", id.name, "groups", strings.Join(id.groups, ","), "client", s.clientIP(r))
		s.refuseLogin(w, http.StatusForbidden, noGroupMessage(id, o))
		return
	}
	if p := principalFrom(r.Context()); p != nil && p.sessionHash != nil {
		if err := s.store.DeleteSession(r.Context(), p.sessionHash); err != nil {
			s.internal(w, r, err)
			return
		}
	}
	token, hash := auth.NewToken(auth.PrefixSession)
	now := time.Now()
	if err := s.store.CreateOIDCSession(r.Context(), hash, id.subject, id.name, role, now, now.Add(s.opt.SessionTTL)); err != nil {
		s.internal(w, r, err)
		return
	}
	s.setSessionCookie(w, r, token)
	s.log.Info("login", "user", id.name, "via", api.ViaOIDC, "role", role, "client", s.clientIP(r))
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// oidcUser is who the provider says logged in.
type oidcUser struct {
	subject, name string
	groups        []string
	claim         bool // the role claim was there at all
}

// oidcIdentity exchanges the code and verifies the ID token; the user's
// name and groups come from it, else from the userinfo endpoint (Authelia
// and others keep the ID token small). The status goes with the error.
func (s *Server) oidcIdentity(ctx context.Context, r *http.Request, o config.OIDC, flow oidcFlow, code string) (oidcUser, int, error) {
	pr, err := s.oidc.get(ctx, o.Issuer)
	if err != nil {
		return oidcUser{}, http.StatusBadGateway, fmt.Errorf("the identity provider at %s does not answer: %w", o.Issuer, err)
	}
	oc := s.oauthConfig(r, o, pr)
	oc.RedirectURL = flow.Redirect
	tok, err := oc.Exchange(ctx, code, oauth2.VerifierOption(flow.Verifier))
	if err != nil {
		return oidcUser{}, http.StatusBadGateway, fmt.Errorf("the identity provider did not exchange the code: %w", err)
	}
	raw, _ := tok.Extra("id_token").(string)
	if raw == "" {
		return oidcUser{}, http.StatusBadGateway, errors.New("the identity provider sent no ID token (is the openid scope allowed for this client?)")
	}
	idt, err := pr.Verifier(&oidc.Config{ClientID: o.ClientID, Now: s.opt.Now}).Verify(ctx, raw)
	if err != nil {
		return oidcUser{}, http.StatusUnauthorized, fmt.Errorf("the ID token is not valid: %w", err)
	}
	if subtle.ConstantTimeCompare([]byte(idt.Nonce), []byte(flow.Nonce)) != 1 {
		return oidcUser{}, http.StatusUnauthorized, errors.New("the ID token's nonce is not this sign-in's (a replayed or injected token). Start again")
	}
	claims := map[string]any{}
	if err := idt.Claims(&claims); err != nil {
		return oidcUser{}, http.StatusBadGateway, fmt.Errorf("the ID token's claims: %w", err)
	}
	_, hasRole := claimAt(claims, o.RoleClaim)
	if !hasRole || userName(claims) == "" {
		if info, err := pr.UserInfo(ctx, oauth2.StaticTokenSource(tok)); err == nil && info.Subject == idt.Subject {
			more := map[string]any{}
			if info.Claims(&more) == nil {
				for k, v := range more {
					if _, ok := claims[k]; !ok {
						claims[k] = v
					}
				}
			}
		}
	}
	u := oidcUser{subject: idt.Subject, name: userName(claims)}
	if u.name == "" {
		u.name = idt.Subject
	}
	v, ok := claimAt(claims, o.RoleClaim)
	u.groups, u.claim = claimList(v), ok
	return u, 0, nil
}

// userName is the name a person knows themselves by.
func userName(claims map[string]any) string {
	for _, k := range []string{"preferred_username", "email", "name"} {
		if v, ok := claims[k].(string); ok && v != "" {
			return v
		}
	}
	return ""
}

// claimAt finds a claim by name, or by a dotted path into nested objects
// (Keycloak's realm_access.roles) when no claim has the whole name.
func claimAt(claims map[string]any, name string) (any, bool) {
	if v, ok := claims[name]; ok {
		return v, true
	}
	var cur any = claims
	for part := range strings.SplitSeq(name, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return cur, true
}

// claimList reads a groups claim: a list of names, or one name.
func claimList(v any) []string {
	switch t := v.(type) {
	case string:
		return []string{t}
	case []any:
		var out []string
		for _, x := range t {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// groupRole maps groups to a role: admin wins over viewer; "" for none.
func groupRole(groups []string, o config.OIDC) api.Role {
	in := func(list []string) bool {
		return slices.ContainsFunc(groups, func(g string) bool { return slices.Contains(list, g) })
	}
	switch {
	case in(o.AdminGroups):
		return api.RoleAdmin
	case in(o.ViewerGroups):
		return api.RoleViewer
	}
	return ""
}

// noGroupMessage tells a refused user why, and what would let them in.
func noGroupMessage(u oidcUser, o config.OIDC) string {
	had := "no claim " + o.RoleClaim
	if u.claim {
		had = "the groups " + quoteList(u.groups)
		if len(u.groups) == 0 {
			had = "no groups"
		}
	}
	return fmt.Sprintf("%s is in none of the groups proxmops gives a role to: the identity provider sent %s; "+
		"admin needs one of %s, viewer one of %s (auth.oidc.adminGroups, auth.oidc.viewerGroups). "+
		"Ask an administrator to add you to one of them.", u.name, had, quoteList(o.AdminGroups), quoteList(o.ViewerGroups))
}

func quoteList(l []string) string {
	if len(l) == 0 {
		return "(none)"
	}
	q := make([]string, len(l))
	for i, s := range l {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

var refusalPage = template.Must(template.New("refusal").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Sign-in refused · proxmops</title>
<style>body{font-family:system-ui,sans-serif;max-width:40rem;margin:4rem auto;padding:0 1rem;color:#1f2937}
h1{font-size:1.4rem}p.reason{background:#fef2f2;border:1px solid #fecaca;padding:1rem;border-radius:.5rem}</style></head>
<body><h1>Sign-in refused</h1><p class="reason" id="reason">{{.}}</p>
<p><a href="/">Back to the login page</a></p></body></html>
`))

// refuseLogin answers a browser's failed single sign-on with a page that
// says why (never a bare JSON error on a page a person sees).
func (s *Server) refuseLogin(w http.ResponseWriter, status int, reason string) {
	if status != http.StatusNotFound {
		s.metrics.LoginFailures.Inc()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_ = refusalPage.Execute(w, reason)
}
