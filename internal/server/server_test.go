package server

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/settings"
)

func TestSetupTokenIsSingleUse(t *testing.T) {
	e := newEnv(t)
	if e.setupToken == "" {
		t.Fatalf("no setup token printed: %q", e.setupOut.String())
	}
	fi, err := os.Stat(e.dbPath + ".setup-token")
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("setup token file: %v %v", fi, err)
	}
	if b, _ := os.ReadFile(e.dbPath + ".setup-token"); strings.TrimSpace(string(b)) != e.setupToken {
		t.Fatal("file and stdout disagree")
	}
	if strings.Contains(e.logText(), e.setupToken) {
		t.Fatal("the setup token reached the log")
	}
	c := e.client()
	if b := c.expect(200, "GET", "/api/v1/setup", nil); !strings.Contains(string(b), `"needed":true`) {
		t.Fatalf("setup needed: %s", b)
	}
	c.expect(401, "POST", "/api/v1/setup", map[string]string{"token": e.setupToken + "x", "username": "admin", "password": adminPassword})
	c.expect(400, "POST", "/api/v1/setup", map[string]string{"token": e.setupToken, "username": "admin", "password": "short"})
	a := e.admin()
	if b := a.expect(200, "GET", "/api/v1/me", nil); !strings.Contains(string(b), `"role":"admin"`) {
		t.Fatalf("me after setup: %s", b)
	}
	if _, err := os.Stat(e.dbPath + ".setup-token"); !os.IsNotExist(err) {
		t.Fatalf("setup token file left behind: %v", err)
	}
	// The same token, again: refused, and no second admin appears.
	e.client().expect(409, "POST", "/api/v1/setup", map[string]string{"token": e.setupToken, "username": "mallory", "password": adminPassword})
	if b := c.expect(200, "GET", "/api/v1/setup", nil); !strings.Contains(string(b), `"needed":false`) {
		t.Fatalf("setup still needed: %s", b)
	}
	if b := a.expect(200, "GET", "/api/v1/users", nil); strings.Contains(string(b), "mallory") {
		t.Fatalf("second setup created a user: %s", b)
	}
}

// sampleParams fill route patterns when walking the router.
var sampleParams = strings.NewReplacer("{kind}", "VirtualMachine", "{name}", "app-01", "{id}", "1", "{forge}", "github")

// publicWrites are the only state-changing routes open to anyone; they
// authenticate by other means (setup token, password, signature).
var publicWrites = map[string]bool{
	"POST /api/v1/setup": true, "POST /api/v1/login": true, "POST /api/v1/logout": true,
	"POST /api/v1/webhooks/{forge}": true,
}

// publicReads are the reads open to anyone: what the login page needs, and
// single sign-on's start and callback (the provider authenticates).
var publicReads = map[string]bool{
	"GET /api/v1/setup": true, "GET /api/v1/auth": true,
	"GET /api/v1/auth/oidc/login": true, "GET /api/v1/auth/oidc/callback": true,
}

// ownAccountWrites change only the caller's own account, so a viewer may
// use them (TestUserChangesOwnPasswordGivingTheCurrentOne); they still need
// a login.
var ownAccountWrites = map[string]bool{"POST /api/v1/me/password": true}

type route struct{ method, pattern string }

func walkRoutes(t *testing.T, s *Server) []route {
	var out []route
	err := chi.Walk(s.Router(), func(method, pattern string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		out = append(out, route{method, pattern})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestViewerCannotChangeAnything(t *testing.T) {
	e := newEnv(t)
	admin := e.admin()
	viewer := e.viewer(admin)
	script, _ := e.tokenClient(admin, "ci", "viewer")
	admin.expect(200, "PUT", "/api/v1/settings", map[string]any{"source": map[string]any{"repoURL": "file:///repo"}})

	lastUsed := regexp.MustCompile(`"lastUsedAt":[^,}]*`)
	before := func() string {
		return string(admin.expect(200, "GET", "/api/v1/users", nil)) + lastUsed.ReplaceAllString(string(admin.expect(200, "GET", "/api/v1/tokens", nil)), "") +
			string(admin.expect(200, "GET", "/api/v1/settings", nil))
	}
	state := before()
	var mutating []route
	for _, r := range walkRoutes(t, e.srv) {
		if r.method == "GET" || r.method == "HEAD" || publicWrites[r.method+" "+r.pattern] || ownAccountWrites[r.method+" "+r.pattern] || !strings.HasPrefix(r.pattern, "/api/") {
			continue
		}
		mutating = append(mutating, r)
	}
	if len(mutating) < 10 {
		t.Fatalf("walk found only %d mutating routes: %v", len(mutating), mutating)
	}
	body := map[string]any{"username": "x", "password": "xxxxxxxxxxxxx", "role": "admin", "name": "n", "cluster": map[string]any{}}
	for _, who := range []struct {
		name string
		c    *client
	}{{"viewer session", viewer}, {"viewer API token", script}} {
		for _, r := range mutating {
			path := sampleParams.Replace(r.pattern)
			resp, b := who.c.req(r.method, path, body)
			if resp.StatusCode != http.StatusForbidden {
				t.Errorf("%s: %s %s gave %d, want 403: %s", who.name, r.method, r.pattern, resp.StatusCode, b)
			}
		}
		// Reading secrets' surroundings and accounts is for admins too.
		for _, p := range []string{"/api/v1/settings", "/api/v1/users", "/api/v1/tokens"} {
			who.c.expect(403, "GET", p, nil)
		}
		who.c.expect(200, "GET", "/api/v1/resources", nil)
	}
	if calls := e.backend.Calls(); len(calls) != 0 {
		t.Fatalf("viewer reached the backend: %v", calls)
	}
	if after := before(); after != state {
		t.Fatalf("state changed:\n%s\n%s", state, after)
	}
	// Anonymous: every route but the public ones needs a login.
	anon := e.client()
	for _, r := range walkRoutes(t, e.srv) {
		key := r.method + " " + r.pattern
		if !strings.HasPrefix(r.pattern, "/api/") || publicWrites[key] || publicReads[key] {
			continue
		}
		if resp, b := anon.req(r.method, sampleParams.Replace(r.pattern), body); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous %s gave %d: %s", key, resp.StatusCode, b)
		}
	}
	// The admin can do what the viewer could not.
	admin.expect(202, "POST", "/api/v1/sync", nil)
	admin.expect(202, "DELETE", "/api/v1/resources/VirtualMachine/app-01", nil)
	admin.expect(409, "DELETE", "/api/v1/resources/VirtualMachine/foreign", nil)
	admin.expect(404, "POST", "/api/v1/resources/VirtualMachine/nope/sync", nil)
}

func TestCSRFIsRequiredForSessionWrites(t *testing.T) {
	e := newEnv(t)
	admin := e.admin()
	csrf := admin.csrf
	admin.csrf = ""
	admin.expect(403, "POST", "/api/v1/sync", nil)
	admin.expect(403, "POST", "/api/v1/sync", nil, csrfHeader, csrf+"x")
	admin.expect(403, "POST", "/api/v1/logout", nil)
	admin.expect(202, "POST", "/api/v1/sync", nil, csrfHeader, csrf)
	if c := e.backend.Calls(); len(c) != 1 {
		t.Fatalf("backend calls: %v", c)
	}
	// Cross-site browser requests are refused even for login.
	e.client().expect(403, "POST", "/api/v1/login", map[string]string{"username": "admin", "password": adminPassword}, "Sec-Fetch-Site", "cross-site")
	// Form posts cannot pass for JSON.
	admin.expect(415, "POST", "/api/v1/users", "username=x", "Content-Type", "application/x-www-form-urlencoded", csrfHeader, csrf)
	// API tokens need no CSRF token.
	admin.csrf = csrf
	script, nt := e.tokenClient(admin, "deploy", "admin")
	script.expect(202, "POST", "/api/v1/refresh", nil)
	if b := script.expect(200, "GET", "/api/v1/me", nil); !strings.Contains(string(b), `"token:deploy"`) {
		t.Fatalf("me via token: %s", b)
	}
	// The token is listed without its secret, and revoking it works.
	if b := admin.expect(200, "GET", "/api/v1/tokens", nil); strings.Contains(string(b), nt.Token) || !strings.Contains(string(b), `"deploy"`) {
		t.Fatalf("token list: %s", b)
	}
	admin.expect(204, "DELETE", "/api/v1/tokens/"+nt.ID, nil)
	script.expect(401, "POST", "/api/v1/refresh", nil)
	admin.expect(404, "DELETE", "/api/v1/tokens/"+nt.ID, nil)
}

func sessionCookie(c *client, e *env) string {
	u, _ := http.NewRequest("GET", e.ts.URL, nil)
	for _, ck := range c.hc.Jar.Cookies(u.URL) {
		if ck.Name == cookieName {
			return ck.Value
		}
	}
	return ""
}

func setSession(c *client, e *env, v string) {
	u, _ := http.NewRequest("GET", e.ts.URL, nil)
	c.hc.Jar.SetCookies(u.URL, []*http.Cookie{{Name: cookieName, Value: v, Path: "/"}})
}

func TestSessionFixationIsImpossible(t *testing.T) {
	e := newEnv(t)
	e.admin()
	// A cookie chosen by an attacker is never adopted.
	victim := e.client()
	planted := "pms_attacker-chosen-value-000000000000000000000"
	setSession(victim, e, planted)
	victim.expect(401, "GET", "/api/v1/me", nil)
	victim.login("admin", adminPassword)
	if got := sessionCookie(victim, e); got == planted || got == "" {
		t.Fatalf("session token after login: %q", got)
	}
	// An attacker's own valid session planted in the victim's browser is
	// replaced at login and stops working.
	attacker := e.client()
	attacker.login("admin", adminPassword)
	stolen := sessionCookie(attacker, e)
	victim2 := e.client()
	setSession(victim2, e, stolen)
	victim2.login("admin", adminPassword)
	if sessionCookie(victim2, e) == stolen {
		t.Fatal("login kept the planted session token")
	}
	attacker.expect(401, "GET", "/api/v1/me", nil)
	// Logout revokes the session on the server, not just the cookie.
	tok := sessionCookie(victim2, e)
	victim2.expect(204, "POST", "/api/v1/logout", nil)
	replay := e.client()
	setSession(replay, e, tok)
	replay.expect(401, "GET", "/api/v1/me", nil)
}

func TestSessionIdleTimeoutAndCookieFlags(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.SessionIdle = 1500 * time.Millisecond })
	a := e.admin()
	resp, _ := a.req("GET", "/api/v1/me", nil)
	if resp.StatusCode != 200 {
		t.Fatal(resp.Status)
	}
	// Over plain HTTP from an untrusted peer: HttpOnly, Lax, not Secure.
	c := e.client()
	resp, _ = c.req("POST", "/api/v1/login", map[string]string{"username": "admin", "password": adminPassword}, "X-Forwarded-Proto", "https")
	ck := resp.Cookies()[0]
	if !ck.HttpOnly || ck.SameSite != http.SameSiteLaxMode || ck.Secure {
		t.Fatalf("cookie flags: %+v", ck)
	}
	// The session ends after the idle timeout.
	time.Sleep(1600 * time.Millisecond)
	a.expect(401, "GET", "/api/v1/me", nil)
}

func TestSecureCookieBehindTrustedProxy(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.TrustedProxies = mustPrefixes("127.0.0.0/8") })
	e.admin()
	c := e.client()
	resp, _ := c.req("POST", "/api/v1/login", map[string]string{"username": "admin", "password": adminPassword}, "X-Forwarded-Proto", "https")
	if ck := resp.Cookies()[0]; !ck.Secure {
		t.Fatalf("cookie not Secure behind a trusted HTTPS proxy: %+v", ck)
	}
	if resp.Header.Get("Strict-Transport-Security") == "" {
		t.Fatal("no HSTS over HTTPS")
	}
}

func TestNoSecretInTheDatabaseFile(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	secrets := map[string]string{
		"cluster token secret": "c1u5ter-t0ken-5ecret-9f8e7d",
		"git token":            "glpat-g1t-t0ken-5ecret-abcd",
		"ssh key":              "-----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjEAAAA",
	}
	b := a.expect(200, "PUT", "/api/v1/settings", map[string]any{
		"cluster": map[string]any{"endpoint": "https://pve.example.com:8006/api2/json", "tokenId": "proxmops@pve!gitops", "tokenSecret": secrets["cluster token secret"]},
		"source":  map[string]any{"repoURL": "https://git.example.com/r.git", "token": secrets["git token"], "sshKey": secrets["ssh key"]},
	})
	var doc api.SettingsDocument
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Cluster.TokenSecret != "set" || doc.Source.Token != "set" || doc.Source.SSHKey != "set" || doc.Cluster.Endpoint == "" {
		t.Fatalf("settings document: %s", b)
	}
	applied := <-e.changed
	if applied.Source.Token != secrets["git token"] || applied.Reconcile.Interval != time.Minute {
		t.Fatalf("settings change not applied: %+v", applied)
	}
	// Other credentials that must not be stored in clear.
	b = a.expect(201, "POST", "/api/v1/tokens", map[string]string{"name": "ci", "role": "viewer"})
	var nt api.NewToken
	json.Unmarshal(b, &nt)
	secrets["API token"] = nt.Token
	secrets["session token"] = sessionCookie(a, e)
	secrets["admin password"] = adminPassword
	secrets["setup token"] = e.setupToken
	secrets["CSRF token"] = a.csrf

	get := a.expect(200, "GET", "/api/v1/settings", nil)
	db := readDBFiles(t, e.dbPath)
	if !bytes.Contains(db, []byte("proxmops@pve")) && !bytes.Contains(db, []byte("schema_migrations")) {
		t.Fatal("database files read empty")
	}
	logs := e.logText()
	for what, v := range secrets {
		if v == "" {
			t.Fatalf("%s empty", what)
		}
		if bytes.Contains(db, []byte(v)) {
			t.Errorf("%s found in clear in the database files", what)
		}
		if strings.Contains(logs, v) {
			t.Errorf("%s found in the log", what)
		}
		if strings.Contains(string(get), v) {
			t.Errorf("%s returned by GET /api/v1/settings", what)
		}
	}
	// "set" keeps a secret; "" clears it.
	a.expect(200, "PUT", "/api/v1/settings", map[string]any{"cluster": map[string]any{"tokenSecret": "set"}, "source": map[string]any{"token": ""}})
	v := <-e.changed
	if v.Cluster.TokenSecret != secrets["cluster token secret"] || v.Source.Token != "" {
		t.Fatalf("secret markers: %+v", v)
	}
	a.expect(400, "PUT", "/api/v1/settings", map[string]any{"reconcile": map[string]any{"interval": "soon"}})
	a.expect(400, "PUT", "/api/v1/settings", map[string]any{"clusterr": map[string]any{}})
	a.expect(400, "PUT", "/api/v1/settings", map[string]any{"cluster": map[string]any{"tokenId": "no-bang"}})
	if b := a.expect(200, "GET", "/api/v1/settings", nil); strings.Contains(string(b), "no-bang") {
		t.Fatal("an invalid setting was saved")
	}
}

func TestTamperedCiphertextIsRefused(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	a.expect(200, "PUT", "/api/v1/settings", map[string]any{"cluster": map[string]any{"tokenSecret": "pve-secret-value"}})
	var v []byte
	if err := e.st.DB().QueryRow(`SELECT value FROM encrypted WHERE name = 'settings/cluster'`).Scan(&v); err != nil {
		t.Fatal(err)
	}
	v[len(v)-1] ^= 0x40
	if _, err := e.st.DB().Exec(`UPDATE encrypted SET value = ? WHERE name = 'settings/cluster'`, v); err != nil {
		t.Fatal(err)
	}
	if b := a.expect(500, "GET", "/api/v1/settings", nil); strings.Contains(string(b), "pve-secret") {
		t.Fatalf("answer: %s", b)
	}
	if !strings.Contains(e.logText(), "altered") {
		t.Fatal("the refusal is not logged")
	}
	// A daemon starting on this database refuses to run on bad settings.
	if _, err := New(t.Context(), Options{Store: e.st, Backend: e.backend, SetupOutput: &bytes.Buffer{}, PasswordParams: testParams}); err == nil {
		t.Fatal("New accepted tampered settings")
	}
}

func TestRotationKeepsEverythingReadable(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	a.expect(200, "PUT", "/api/v1/settings", map[string]any{
		"cluster": map[string]any{"tokenSecret": "pve-secret-value"},
		"source":  map[string]any{"sshKey": "ssh-key-value", "repoURL": "file:///r"}})
	old := e.st.KeyID()
	if _, err := e.st.RotateKey(t.Context(), ""); err != nil {
		t.Fatal(err)
	}
	if e.st.KeyID() == old {
		t.Fatal("key unchanged")
	}
	if b := a.expect(200, "GET", "/api/v1/settings", nil); !strings.Contains(string(b), `"tokenSecret":"set"`) || !strings.Contains(string(b), `"file:///r"`) {
		t.Fatalf("after rotation: %s", b)
	}
	// The secrets themselves still reach the backend intact.
	if b := a.expect(200, "POST", "/api/v1/settings/test", nil); !strings.Contains(string(b), `"ok":true`) {
		t.Fatalf("test: %s", b)
	}
	e.backend.mu.Lock()
	got := e.backend.tested[len(e.backend.tested)-1]
	e.backend.mu.Unlock()
	if got.Cluster.TokenSecret != "pve-secret-value" || got.Source.SSHKey != "ssh-key-value" {
		t.Fatalf("after rotation the backend got %+v", got)
	}
	// Testing other settings does not save them.
	a.expect(200, "POST", "/api/v1/settings/test", map[string]any{"cluster": map[string]any{"tokenSecret": ""}})
	if b := a.expect(200, "GET", "/api/v1/settings", nil); !strings.Contains(string(b), `"tokenSecret":"set"`) {
		t.Fatalf("test saved settings: %s", b)
	}
}

func TestHistoryInResourceDetailIsCapped(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	for i := range 5 {
		if _, err := e.st.AddHistory(t.Context(), "VirtualMachine", "app-01", api.HistoryEntry{Event: api.EventApplied, Commit: "c", Message: string(rune('a' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	var d api.ResourceDetail
	json.Unmarshal(a.expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01", nil), &d)
	if len(d.History) != 3 || d.History[0].Message != "e" || d.Desired == nil || d.Observed != nil {
		t.Fatalf("detail: %+v", d)
	}
	a.expect(404, "GET", "/api/v1/resources/VirtualMachine/missing", nil)
}

func TestUsersAreManagedByAdmins(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	a.expect(201, "POST", "/api/v1/users", map[string]string{"username": "bob", "password": "bob password", "role": "admin"})
	a.expect(409, "POST", "/api/v1/users", map[string]string{"username": "BOB", "password": "bob password", "role": "viewer"})
	a.expect(400, "POST", "/api/v1/users", map[string]string{"username": "eve", "password": "eve password", "role": "root"})
	bob := e.client()
	bob.login("bob", "bob password")
	bob.expect(204, "DELETE", "/api/v1/users/admin", nil)
	a.expect(401, "GET", "/api/v1/me", nil) // sessions go with the account
	bob.expect(409, "DELETE", "/api/v1/users/bob", nil)
	bob.expect(404, "DELETE", "/api/v1/users/ghost", nil)
	var list struct{ Users []api.User }
	json.Unmarshal(bob.expect(200, "GET", "/api/v1/users", nil), &list)
	if len(list.Users) != 1 || list.Users[0].Username != "bob" {
		t.Fatalf("users: %+v", list)
	}
}

func TestSecurityHeadersLimitsAndProbes(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	resp, _ := c.req("GET", "/", nil)
	h := resp.Header
	if !strings.Contains(h.Get("Content-Security-Policy"), "frame-ancestors 'none'") || h.Get("X-Content-Type-Options") != "nosniff" ||
		h.Get("Referrer-Policy") != "no-referrer" || h.Get("X-Frame-Options") != "DENY" {
		t.Fatalf("headers: %v", h)
	}
	c.expect(200, "GET", "/healthz", nil)
	c.expect(200, "GET", "/readyz", nil)
	e.backend.mu.Lock()
	e.backend.ready = false
	e.backend.mu.Unlock()
	if b := c.expect(503, "GET", "/readyz", nil); !strings.Contains(string(b), "first reconcile pass") {
		t.Fatalf("readyz: %s", b)
	}
	big := `{"username":"` + strings.Repeat("x", 2<<20) + `"}`
	c.expect(413, "POST", "/api/v1/login", big)
	c.expect(404, "GET", "/api/v1/nope", nil)
	if b := c.expect(200, "GET", "/metrics", nil); !strings.Contains(string(b), "proxmops_http_requests_total") {
		t.Fatal("metrics missing")
	}
}

func TestSettingsDocumentShapeMatchesDocs(t *testing.T) {
	// docs/api.md lists these keys; the UI relies on them.
	doc := settings.Document(config.Defaults(), nil)
	b, _ := json.Marshal(doc)
	var m map[string]map[string]any
	json.Unmarshal(b, &m)
	want := map[string][]string{
		"cluster":   {"endpoint", "tokenId", "tokenSecret", "insecureSkipVerify", "fingerprint", "caFile"},
		"source":    {"repoURL", "path", "revision", "username", "token", "sshKey", "submodules", "knownHostsFile", "insecureIgnoreHostKey"},
		"reconcile": {"interval", "autoSync", "prune", "concurrency", "dryRun", "historyPerResource", "historyTotal"},
	}
	for sec, keys := range want {
		for _, k := range keys {
			if _, ok := m[sec][k]; !ok {
				t.Errorf("%s.%s missing", sec, k)
			}
		}
	}
	if !slices.Contains([]string{"not set"}, m["cluster"]["tokenSecret"].(string)) {
		t.Errorf("empty secret shows %v", m["cluster"]["tokenSecret"])
	}
}

// An admin forgets a guest's pinned provisioning host key; a viewer cannot;
// a kind that has no host key is not found.
func TestResetHostKey(t *testing.T) {
	e := newEnv(t)
	keys := provision.NewKeys(e.st, "")
	ctx := context.Background()
	if err := keys.PinHostKey(ctx, "Container/web", provision.Pin{VMID: 300, Key: "ssh-ed25519 AAAA", Fingerprint: "SHA256:abc"}); err != nil {
		t.Fatal(err)
	}
	admin := e.admin()
	e.viewer(admin).expect(403, "DELETE", "/api/v1/resources/Container/web/hostkey", nil)
	admin.expect(404, "DELETE", "/api/v1/resources/Network/vmbr0/hostkey", nil)
	if b := admin.expect(200, "DELETE", "/api/v1/resources/Container/web/hostkey", nil); !strings.Contains(string(b), "SHA256:abc of Container/web forgotten") {
		t.Fatalf("answer %s", b)
	}
	if _, ok, err := keys.HostKey(ctx, "Container/web"); ok || err != nil {
		t.Fatalf("pin still there: %v %v", ok, err)
	}
	if b := admin.expect(200, "DELETE", "/api/v1/resources/Container/web/hostkey", nil); !strings.Contains(string(b), "no host key is pinned") {
		t.Fatalf("second reset: %s", b)
	}
}

// GET /api/v1/revisions/{commit}/history lists one commit's events across
// resources, each naming its resource, to viewers too; only a full hash is
// accepted.
func TestCommitHistoryNamesEachResource(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	c1, c2 := strings.Repeat("d", 40), strings.Repeat("e", 40)
	add := func(kind, name, commit, msg string) {
		if _, err := e.st.AddHistory(t.Context(), kind, name, api.HistoryEntry{Event: api.EventApplied, Commit: commit, Message: msg}); err != nil {
			t.Fatal(err)
		}
	}
	add("VirtualMachine", "app-01", c1, "update done")
	add("Container", "dns-01", c1, "update done")
	add("VirtualMachine", "app-01", c2, "later")
	// In a clusters list the controller keeps lab-2's web under "lab-2/web".
	add("VirtualMachine", api.HistoryName("lab-2", "web"), c2, "created")
	v := e.viewer(a)
	var doc api.CommitHistory
	if err := json.Unmarshal(v.expect(200, "GET", "/api/v1/revisions/"+strings.ToUpper(c1)+"/history", nil), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Commit != c1 || len(doc.Entries) != 2 ||
		doc.Entries[0].Kind+"/"+doc.Entries[0].Name != "Container/dns-01" || doc.Entries[1].Kind+"/"+doc.Entries[1].Name != "VirtualMachine/app-01" {
		t.Fatalf("history at %s: %+v", c1, doc)
	}
	var two api.CommitHistory
	json.Unmarshal(v.expect(200, "GET", "/api/v1/revisions/"+c2+"/history", nil), &two)
	if len(two.Entries) != 2 || two.Entries[0].Cluster != "lab-2" || two.Entries[0].Name != "web" ||
		two.Entries[1].Cluster != "" || two.Entries[1].Name != "app-01" {
		t.Fatalf("history at %s names each resource's cluster: %+v", c2, two)
	}
	var empty map[string]any
	json.Unmarshal(v.expect(200, "GET", "/api/v1/revisions/"+strings.Repeat("f", 64)+"/history", nil), &empty)
	if entries, ok := empty["entries"].([]any); !ok || len(entries) != 0 {
		t.Fatalf("a commit without history: %v, want an empty list", empty)
	}
	for _, bad := range []string{"dddddddd", "HEAD", strings.Repeat("g", 40)} {
		v.expect(400, "GET", "/api/v1/revisions/"+bad+"/history", nil)
	}
}

// The proxmops CLI names its OS user beside the API token: the principal
// (and with it the log and the history) shows both; a header that is no
// plain user name is ignored, and a session never takes it.
func TestTheCLIUserIsShownBesideItsToken(t *testing.T) {
	e := newEnv(t)
	admin := e.admin()
	cli, _ := e.tokenClient(admin, "laptop", "admin")
	for _, tc := range []struct{ header, want string }{
		{"alice", `"token:laptop (cli, alice)"`},
		{"", `"token:laptop"`},
		{"alice) (admin", `"token:laptop"`},
		{strings.Repeat("a", 65), `"token:laptop"`},
	} {
		var hdr []string
		if tc.header != "" {
			hdr = []string{cliUserHeader, tc.header}
		}
		if b := cli.expect(200, "GET", "/api/v1/me", nil, hdr...); !strings.Contains(string(b), tc.want) {
			t.Errorf("header %q: me %s, want %s", tc.header, b, tc.want)
		}
	}
	cli.expect(202, "POST", "/api/v1/refresh", nil, cliUserHeader, "alice")
	if !strings.Contains(e.logText(), `"by":"cli alice (token laptop)"`) {
		t.Errorf("the log does not name the CLI's user:\n%s", e.logText())
	}
	if got := e.backend.lastActor(); got != (api.Actor{Kind: api.ActorCLI, Name: "alice", Token: "laptop"}) {
		t.Errorf("the refresh reached the backend asked by %+v, want the CLI's alice through the token laptop", got)
	}
	if b := admin.expect(200, "GET", "/api/v1/me", nil, cliUserHeader, "mallory"); strings.Contains(string(b), "mallory") {
		t.Errorf("a session took the header: %s", b)
	}
}
