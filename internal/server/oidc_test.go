package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/zitadel/oidc/v3/example/server/exampleop"
	"github.com/zitadel/oidc/v3/example/server/storage"
	zoidc "github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// The single sign-on tests run a real OpenID provider, zitadel/oidc's
// pkg/op with its example storage and login form, on loopback. Only the
// groups claim is ours: the example users have no groups.

// idpUsers are the provider's accounts (password "secret" each) and
// their groups.
var idpUsers = map[string][]string{
	"alice": {"family", "homelab-admins"},
	"bob":   {"homelab-viewers"},
	"carol": {"family"},
}

type idpUserStore struct{ users map[string]*storage.User }

func (s idpUserStore) GetUserByID(id string) *storage.User { return s.users[id] }
func (s idpUserStore) GetUserByUsername(name string) *storage.User {
	for _, u := range s.users {
		if u.Username == name {
			return u
		}
	}
	return nil
}
func (idpUserStore) ExampleClientID() string { return storage.ServiceUserID }

// groupStorage is the example storage with a groups claim in the ID token.
// Its ID token has no name claims (they go to the userinfo endpoint when an
// access token is issued), so the user's name proves proxmops asked there.
type groupStorage struct{ *storage.Storage }

func (g groupStorage) SetUserinfoFromRequest(ctx context.Context, info *zoidc.UserInfo, req op.IDTokenRequest, scopes []string) error {
	if err := g.Storage.SetUserinfoFromRequest(ctx, info, req, scopes); err != nil {
		return err
	}
	info.AppendClaims("groups", idpUsers[strings.TrimPrefix(req.GetSubject(), "sub-")])
	return nil
}

type idp struct {
	issuer  string
	clients map[string]*storage.Client
}

// startIDP starts the provider; register adds proxmops as a client once
// its callback URL is known.
func startIDP(t *testing.T) *idp {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	p := &idp{issuer: "http://" + ts.Listener.Addr().String(), clients: map[string]*storage.Client{}}
	users := map[string]*storage.User{}
	for name := range idpUsers {
		users["sub-"+name] = &storage.User{ID: "sub-" + name, Username: name, Password: "secret", Email: name + "@example.org", EmailVerified: true}
	}
	st := groupStorage{storage.NewStorageWithClients(idpUserStore{users}, p.clients)}
	ts.Config.Handler = exampleop.SetupServer(p.issuer, st, nil, false)
	ts.Start()
	t.Cleanup(ts.Close)
	return p
}

func (p *idp) register(callback string) {
	p.clients["proxmops"] = storage.WebClient("proxmops", "client-secret", callback)
}

func oidcConfig(issuer string) *config.Config {
	c := config.Defaults()
	c.Auth.OIDC = config.OIDC{Issuer: issuer, ClientID: "proxmops", ClientSecret: "client-secret", Name: "Zitadel",
		RoleClaim: "groups", AdminGroups: []string{"homelab-admins"}, ViewerGroups: []string{"homelab-viewers"},
		Scopes: []string{"profile", "email", "groups"}}
	return c
}

// browser follows the sign-in one redirect at a time, so a test can
// tamper with a step as an attacker would.
type browser struct {
	t  *testing.T
	hc *http.Client
}

func newBrowser(t *testing.T) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

func (b *browser) do(method, u string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.hc.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	return resp, string(text)
}

// next is where a redirect leads, or fails the test.
func (b *browser) next(resp *http.Response, body string) string {
	b.t.Helper()
	loc, err := resp.Location()
	if err != nil {
		b.t.Fatalf("%s %s: status %d without a redirect: %s", resp.Request.Method, resp.Request.URL, resp.StatusCode, body)
	}
	return loc.String()
}

// signIn runs the sign-in from proxmops' button to its callback and
// returns the callback's answer. toIDP and toCallback may rewrite the
// two URLs the browser is sent to.
func (b *browser) signIn(proxmops, user string, toIDP, toCallback func(string) string) (*http.Response, string) {
	b.t.Helper()
	authz := b.next(b.do("GET", proxmops+"/api/v1/auth/oidc/login", nil))
	if q, _ := url.Parse(authz); q.Query().Get("code_challenge_method") != "S256" || q.Query().Get("nonce") == "" || q.Query().Get("state") == "" {
		b.t.Fatalf("the authorization request lacks PKCE S256, a nonce or a state: %s", authz)
	}
	if toIDP != nil {
		authz = toIDP(authz)
	}
	loginPage := b.next(b.do("GET", authz, nil))
	lp, _ := url.Parse(loginPage)
	id := lp.Query().Get("authRequestID")
	if id == "" {
		b.t.Fatalf("the provider sent no login page: %s", loginPage)
	}
	form := url.Values{"id": {id}, "username": {user}, "password": {"secret"}}
	done := b.next(b.do("POST", lp.ResolveReference(&url.URL{Path: "/login/username"}).String(), form))
	back := b.next(b.do("GET", lp.ResolveReference(mustURL(b.t, done)).String(), nil))
	if !strings.HasPrefix(back, proxmops+"/api/v1/auth/oidc/callback?") {
		b.t.Fatalf("the provider sent the browser to %s, not proxmops' callback", back)
	}
	if toCallback != nil {
		back = toCallback(back)
	}
	return b.do("GET", back, nil)
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func (b *browser) me(proxmops string) (int, api.Me) {
	resp, body := b.do("GET", proxmops+"/api/v1/me", nil)
	var me api.Me
	json.Unmarshal([]byte(body), &me)
	return resp.StatusCode, me
}

func TestOIDCLoginMapsGroupsToRoles(t *testing.T) {
	p := startIDP(t)
	e := newEnv(t, func(o *Options) { o.Config = oidcConfig(p.issuer) })
	p.register(e.ts.URL + "/api/v1/auth/oidc/callback")

	for _, tc := range []struct {
		user string
		role api.Role
	}{{"alice", api.RoleAdmin}, {"bob", api.RoleViewer}} {
		t.Run(tc.user, func(t *testing.T) {
			b := newBrowser(t)
			resp, body := b.signIn(e.ts.URL, tc.user, nil, nil)
			if resp.StatusCode != http.StatusSeeOther || b.next(resp, body) != e.ts.URL+"/" {
				t.Fatalf("callback: %d %s, want a redirect to the UI", resp.StatusCode, body)
			}
			status, me := b.me(e.ts.URL)
			if status != 200 || me.Username != tc.user || me.Role != tc.role || me.Via != api.ViaOIDC || me.CSRFToken == "" {
				t.Fatalf("GET /me after the sign-in: %d %+v, want %s as %s via oidc", status, me, tc.user, tc.role)
			}
		})
	}
	// The admin may act; the actor of what they start is the user via OIDC.
	b := newBrowser(t)
	b.signIn(e.ts.URL, "alice", nil, nil)
	_, me := b.me(e.ts.URL)
	req, _ := http.NewRequest("POST", e.ts.URL+"/api/v1/sync", nil)
	req.Header.Set(csrfHeader, me.CSRFToken)
	resp, err := b.hc.Do(req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("sync as alice: %v %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if got := e.backend.lastActor(); got != (api.Actor{Kind: api.ActorUser, Name: "alice", Via: api.ViaOIDC}) {
		t.Errorf("the sync reached the backend as %+v, want alice via oidc", got)
	}
	// A provider's user is no local account: alice cannot change a password here.
	req, _ = http.NewRequest("POST", e.ts.URL+"/api/v1/me/password", strings.NewReader(`{"currentPassword":"x","newPassword":"a long new password"}`))
	req.Header.Set(csrfHeader, me.CSRFToken)
	req.Header.Set("Content-Type", "application/json")
	if resp, err := b.hc.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Errorf("password change by a single sign-on user: %v %v, want 400", resp.StatusCode, err)
	}
}

func TestOIDCRefusals(t *testing.T) {
	p := startIDP(t)
	e := newEnv(t, func(o *Options) { o.Config = oidcConfig(p.issuer) })
	p.register(e.ts.URL + "/api/v1/auth/oidc/callback")
	replace := func(param, value string) func(string) string {
		return func(s string) string {
			u := mustURL(t, s)
			q := u.Query()
			q.Set(param, value)
			u.RawQuery = q.Encode()
			return u.String()
		}
	}
	for _, tc := range []struct {
		name, user        string
		toIDP, toCallback func(string) string
		status            int
		reason            []string
	}{
		{name: "in no mapped group", user: "carol", status: http.StatusForbidden,
			reason: []string{"carol is in none of the groups", `&#34;family&#34;`, `&#34;homelab-admins&#34;`, `&#34;homelab-viewers&#34;`}},
		{name: "bad state", user: "alice", toCallback: replace("state", "forged"), status: http.StatusBadRequest,
			reason: []string{"state does not match"}},
		{name: "wrong nonce", user: "alice", toIDP: replace("nonce", "injected"), status: http.StatusUnauthorized,
			reason: []string{"nonce is not this sign-in"}},
		{name: "wrong PKCE challenge", user: "alice", toIDP: replace("code_challenge", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"), status: http.StatusBadGateway,
			reason: []string{"did not exchange the code"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newBrowser(t)
			resp, body := b.signIn(e.ts.URL, tc.user, tc.toIDP, tc.toCallback)
			if resp.StatusCode != tc.status || !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("callback: %d %s, want %d with a page", resp.StatusCode, body, tc.status)
			}
			for _, w := range tc.reason {
				if !strings.Contains(body, w) {
					t.Errorf("the refusal page lacks %q: %s", w, body)
				}
			}
			if status, _ := b.me(e.ts.URL); status != http.StatusUnauthorized {
				t.Errorf("GET /me after a refused sign-in: %d, want 401 (no session)", status)
			}
		})
	}
	// A callback replayed after its sign-in finished finds no cookie.
	b := newBrowser(t)
	var callback string
	b.signIn(e.ts.URL, "alice", nil, func(s string) string { callback = s; return s })
	if resp, body := b.do("GET", callback, nil); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "already used") {
		t.Errorf("replayed callback: %d %s", resp.StatusCode, body)
	}
}

func TestOIDCButtonOnlyWhenConfigured(t *testing.T) {
	for _, tc := range []struct {
		cfg  *config.Config
		want string
	}{
		{config.Defaults(), `{"password":true}`},
		{oidcConfig("https://id.example.org"), `{"password":true,"oidc":{"name":"Zitadel","loginURL":"/api/v1/auth/oidc/login"}}`},
	} {
		e := newEnv(t, func(o *Options) { o.Config = tc.cfg })
		body := strings.TrimSpace(string(e.client().expect(200, "GET", "/api/v1/auth", nil)))
		if body != tc.want {
			t.Errorf("GET /api/v1/auth = %s, want %s", body, tc.want)
		}
	}
}
