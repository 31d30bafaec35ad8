package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/controller"
)

// newFakeClock is the server's clock in tests: it moves only when told.
func newFakeClock() *controller.FakeClock {
	return controller.NewFakeClock(time.Unix(1_800_000_000, 0))
}

// postLogin is a login over real HTTP that goroutines may call (no t.Fatal).
func postLogin(url, user, pw string, hdr ...string) (int, string, error) {
	body, _ := json.Marshal(map[string]string{"username": user, "password": pw})
	r, err := http.NewRequest("POST", url+"/api/v1/login", bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	r.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), nil
}

// parallelLogins runs n logins at once and counts the answers by status.
func parallelLogins(t *testing.T, n int, login func(i int) (int, string, error)) map[int]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			code, _, err := login(i)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			counts[code]++
		})
	}
	close(start)
	wg.Wait()
	return counts
}

func TestParallelWrongLoginsAreCountedBeforeTheHash(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now })
	e.admin()
	counts := parallelLogins(t, 60, func(int) (int, string, error) {
		return postLogin(e.ts.URL, "admin", "not the password")
	})
	limit := LoginLimitPerClientAccount.Threshold
	evaluated := strings.Count(e.logText(), "login failed")
	if counts[401] > limit || counts[401] < 1 || counts[401]+counts[429] != 60 || evaluated != counts[401] {
		t.Fatalf("60 parallel wrong logins: %v, %d evaluated; want at most %d evaluated and the rest 429", counts, evaluated, limit)
	}
	if peak := e.srv.hasher.PeakRunning(); peak > passwordChecks {
		t.Fatalf("%d hashes ran at once, the bound is %d", peak, passwordChecks)
	}
	// The right password waits out the documented backoff, then works.
	wait := e.srv.pairLimiter.Backoff(counts[401])
	code, retry, _ := postLogin(e.ts.URL, "admin", adminPassword)
	if counts[401] == limit && (code != 429 || retry != strconv.Itoa(int(wait.Seconds()))) {
		t.Fatalf("right password during the backoff: %d, Retry-After %q, want 429 after %v", code, retry, wait)
	}
	clock.Advance(wait)
	e.client().login("admin", adminPassword)
}

func TestLoginBackoffDoublesToItsCapAndTheRightPasswordWorksAfter(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now })
	e.admin()
	l := LoginLimitPerClientAccount
	for range l.Threshold {
		if code, _, _ := postLogin(e.ts.URL, "admin", "not the password"); code != 401 {
			t.Fatalf("below the threshold: %d", code)
		}
	}
	// Each failure after the wait doubles the next wait, up to the cap.
	want := l.Base
	for i := range 12 {
		code, retry, _ := postLogin(e.ts.URL, "admin", "not the password")
		if code != 429 || retry != strconv.Itoa(int(want.Seconds())) {
			t.Fatalf("step %d: %d Retry-After %q, want 429 and %v", i, code, retry, want)
		}
		clock.Advance(want)
		if code, _, _ := postLogin(e.ts.URL, "admin", "not the password"); code != 401 {
			t.Fatalf("step %d: the probe after the wait got %d", i, code)
		}
		want = min(want*2, l.Cap)
	}
	if want != l.Cap {
		t.Fatalf("never reached the cap: %v", want)
	}
	code, retry, _ := postLogin(e.ts.URL, "admin", adminPassword)
	if code != 429 || retry != strconv.Itoa(int(l.Cap.Seconds())) {
		t.Fatalf("at the cap: %d %q", code, retry)
	}
	clock.Advance(l.Cap)
	e.client().login("admin", adminPassword)
	// The success cleared the account: a typo now costs no wait.
	if code, _, _ := postLogin(e.ts.URL, "admin", "typo password"); code != 401 {
		t.Fatalf("after a success: %d", code)
	}
}

func TestPerClientLimitSurvivesOwnSuccessAndProxiesAreTrustedOnlyWhenSaid(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now; o.TrustProxy = true })
	admin := e.admin()
	admin.expect(201, "POST", "/api/v1/users", map[string]string{"username": "mallory", "password": "mallory password", "role": "viewer"})
	xff := func(ip string) []string { return []string{"X-Forwarded-For", ip} }
	spray := func(ip string, n int) {
		t.Helper()
		for i := range n {
			if code, _, _ := postLogin(e.ts.URL, fmt.Sprintf("user%d", i), "whatever pw", xff(ip)...); code != 401 {
				t.Fatalf("spray %d from %s: %d", i, ip, code)
			}
		}
	}
	spray("192.0.2.1", LoginLimitPerClient.Threshold-1)
	// Logging in to an account it owns does not clear the client's count.
	if code, _, _ := postLogin(e.ts.URL, "mallory", "mallory password", xff("192.0.2.1")...); code != 200 {
		t.Fatalf("own login: %d", code)
	}
	spray("192.0.2.1", 1)
	if code, _, _ := postLogin(e.ts.URL, "zed", "whatever pw", xff("192.0.2.1")...); code != 429 {
		t.Fatalf("past the per-client threshold: %d", code)
	}
	// Behind a trusted proxy another user is another client.
	if code, _, _ := postLogin(e.ts.URL, "admin", adminPassword, xff("192.0.2.2")...); code != 200 {
		t.Fatalf("another client: %d", code)
	}
	// Without trustProxy the header is ignored: everyone is the peer.
	plain := newEnv(t, func(o *Options) { o.Now = clock.Now })
	plain.admin()
	for i := range LoginLimitPerClient.Threshold {
		postLogin(plain.ts.URL, fmt.Sprintf("user%d", i), "whatever pw", xff(fmt.Sprintf("192.0.2.%d", i+10))...)
	}
	if code, _, _ := postLogin(plain.ts.URL, "admin", adminPassword, xff("192.0.2.99")...); code != 429 {
		t.Fatalf("X-Forwarded-For believed without trustProxy: %d", code)
	}
}

func TestManyClientsGuessingOneAccountHitTheAccountLimit(t *testing.T) {
	clock := newFakeClock()
	e := newEnv(t, func(o *Options) { o.Now = clock.Now; o.TrustProxy = true })
	e.admin()
	counts := parallelLogins(t, 100, func(i int) (int, string, error) {
		return postLogin(e.ts.URL, "admin", "not the password", "X-Forwarded-For", fmt.Sprintf("198.51.100.%d", i))
	})
	// 100 clients, one guess each: at most the per-account threshold are
	// checked; the hashes ran at most passwordChecks at a time; a full
	// queue answers 503, never 500.
	if counts[401] > LoginLimitPerAccount.Threshold || counts[401]+counts[429]+counts[503] != 100 {
		t.Fatalf("100 clients: %v", counts)
	}
	if peak := e.srv.hasher.PeakRunning(); peak > passwordChecks {
		t.Fatalf("%d hashes at once", peak)
	}
}

// An attacker retrying the instant each wait ends gets at most this many
// guesses per hour at one account, whatever the number of addresses:
// OWASP ASVS 4.0 V2.2.1 asks for no more than 100.
func TestAccountLimitAllowsFewerThan100FailuresPerHour(t *testing.T) {
	clock := newFakeClock()
	l := newLoginLimiter(LoginLimitPerAccount, clock.Now)
	end := clock.Now().Add(time.Hour)
	failures := 0
	for clock.Now().Before(end) {
		if ok, wait := tryFail(l, "admin"); ok {
			failures++
		} else {
			clock.Advance(wait)
		}
	}
	if failures >= 100 {
		t.Fatalf("%d failures in an hour", failures)
	}
	t.Logf("at most %d failed logins per hour per account", failures)
}

func tryFail(l *auth.Limiter, key string) (bool, time.Duration) {
	a, _, wait := auth.Reserve(auth.Limit{Limiter: l, Key: key})
	if a == nil {
		return false, wait
	}
	a.Fail()
	return true, 0
}

func TestMetricsNeedTheTokenWhenOneIsSetAndProbesSayLittle(t *testing.T) {
	open := newEnv(t)
	open.client().expect(200, "GET", "/metrics", nil)
	e := newEnv(t, func(o *Options) {
		o.Config = config.Defaults()
		o.Config.Server.MetricsToken = "scrape-token-1"
	})
	c := e.client()
	cases := []struct {
		name string
		hdr  []string
		want int
	}{
		{"no token", nil, 401},
		{"wrong token", []string{"Authorization", "Bearer scrape-token-2"}, 401},
		{"prefix of the token", []string{"Authorization", "Bearer scrape-token-"}, 401},
		{"wrong scheme", []string{"Authorization", "Basic scrape-token-1"}, 401},
		{"right token", []string{"Authorization", "Bearer scrape-token-1"}, 200},
		{"scheme in any case", []string{"Authorization", "bearer scrape-token-1"}, 200},
	}
	for _, tc := range cases {
		resp, b := c.req("GET", "/metrics", nil, tc.hdr...)
		if resp.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
		if tc.want == 401 && (strings.Contains(string(b), "proxmops_") || resp.Header.Get("WWW-Authenticate") == "") {
			t.Errorf("%s: refused badly: %v %s", tc.name, resp.Header, b)
		}
	}
	// The probes stay open and answer only a status word.
	if b := c.expect(200, "GET", "/healthz", nil); strings.TrimSpace(string(b)) != `{"status":"ok"}` {
		t.Fatalf("healthz: %s", b)
	}
	e.st.Close() // a broken database: readyz says so without details
	b := c.expect(503, "GET", "/readyz", nil)
	if strings.Contains(string(b), e.dbPath) || strings.Contains(string(b), "sql") || !strings.Contains(string(b), "database") {
		t.Fatalf("readyz: %s", b)
	}
}
