package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/vocab"
)

// fakeBackend is the controller as the server sees it: it records every
// call so tests can tell whether an action reached it.
type fakeBackend struct {
	mu     sync.Mutex
	calls  []string
	ready  bool
	list   api.ResourceList
	tested []*config.Config
	owned  map[string]bool // kind/name -> owned
	// refreshErr is what Refresh answers (after recording the call).
	refreshErr error
	pin        *api.Pin    // see revisions_test.go
	actors     []api.Actor // who asked, per Sync, Refresh and Delete
}

func (b *fakeBackend) asked(ctx context.Context) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.actors = append(b.actors, api.ActorFrom(ctx))
}

// lastActor is who asked for the last Sync, Refresh or Delete.
func (b *fakeBackend) lastActor() api.Actor {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.actors) == 0 {
		return api.Actor{}
	}
	return b.actors[len(b.actors)-1]
}

func newFakeBackend() *fakeBackend {
	return &fakeBackend{ready: true, owned: map[string]bool{"VirtualMachine/app-01": true, "VirtualMachine/foreign": false},
		list: api.ResourceList{PassStatus: api.PassStatus{Revision: "abc123", Counts: map[vocab.Status]int{vocab.StatusSynced: 1}},
			Resources: []api.ResourceSummary{{Kind: "VirtualMachine", Name: "app-01", Status: vocab.StatusSynced,
				Health: vocab.HealthHealthy, Action: vocab.ActionNone, Owned: true, SyncPolicy: vocab.SyncAuto}}}}
}

func (b *fakeBackend) record(call string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = append(b.calls, call)
}

func (b *fakeBackend) Calls() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...)
}

func (b *fakeBackend) known(kind, name string) (owned, ok bool) {
	owned, ok = b.owned[kind+"/"+name]
	return owned, ok
}

func (b *fakeBackend) Resources(context.Context) (api.ResourceList, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.list, nil
}

func (b *fakeBackend) Resource(_ context.Context, kind, name string) (api.ResourceDetail, error) {
	if _, ok := b.known(kind, name); !ok {
		return api.ResourceDetail{}, fmt.Errorf("%s %s is not declared nor on the cluster: %w", kind, name, api.ErrNotFound)
	}
	return api.ResourceDetail{ResourceSummary: api.ResourceSummary{Kind: kind, Name: name}, Desired: map[string]any{"kind": kind}}, nil
}

func (b *fakeBackend) Manifest(_ context.Context, kind, name string) (api.Manifest, error) {
	if owned, ok := b.known(kind, name); !ok || !owned {
		return api.Manifest{}, fmt.Errorf("%s %s has no manifest: %w", kind, name, api.ErrNotFound)
	}
	return api.Manifest{Kind: kind, Name: name, File: "vms/" + name + ".yaml", Line: 2, Revision: "abc123", Text: "kind: " + kind + "\nmetadata:\n  name: " + name + "\n"}, nil
}

func (b *fakeBackend) TaskLog(_ context.Context, kind, name string) (api.TaskLog, error) {
	if _, ok := b.known(kind, name); !ok {
		return api.TaskLog{}, fmt.Errorf("%s %s: %w", kind, name, api.ErrNotFound)
	}
	return api.TaskLog{Task: "UPID:pve1:1:2:3:qmclone:120:root@pam:", Running: true, Lines: []string{"transferred 1.0 GiB of 2.0 GiB (50.00%)"}}, nil
}

func (b *fakeBackend) Live(_ context.Context, kind, name string) (api.Live, error) {
	b.record("Live " + kind + "/" + name)
	if _, ok := b.known(kind, name); !ok {
		return api.Live{}, fmt.Errorf("%s %s: %w", kind, name, api.ErrNotFound)
	}
	return api.Live{Kind: kind, Name: name, Source: "proxmox", Path: "/nodes/pve1/qemu/120/config", Data: map[string]any{"cores": 2}}, nil
}

func (b *fakeBackend) Refresh(ctx context.Context) error {
	b.asked(ctx)
	b.record("Refresh")
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.refreshErr
}

func (b *fakeBackend) Sync(ctx context.Context, kind, name string, o api.SyncOptions) (*api.Plan, error) {
	b.asked(ctx)
	call := "SyncAll"
	if kind != "" {
		call = "SyncOne " + kind + "/" + name
	}
	if o != (api.SyncOptions{}) {
		call += fmt.Sprintf(" %+v", o)
	}
	b.record(call)
	if _, ok := b.known(kind, name); kind != "" && !ok {
		return nil, fmt.Errorf("%s %s: %w", kind, name, api.ErrNotFound)
	}
	if o.DryRun {
		return &api.Plan{Revision: "abc123", Summary: api.PlanSummary{Delete: 1}, Actions: []api.PlanAction{{Kind: "VirtualMachine", Name: "old", Action: vocab.ActionDelete}}}, nil
	}
	return nil, nil
}

func (b *fakeBackend) Delete(ctx context.Context, kind, name string) error {
	b.asked(ctx)
	b.record("Delete " + kind + "/" + name)
	owned, ok := b.known(kind, name)
	switch {
	case !ok:
		return fmt.Errorf("%s %s: %w", kind, name, api.ErrNotFound)
	case !owned:
		return fmt.Errorf("%s %s lacks the tag managed-by-proxmops: %w", kind, name, api.ErrNotOwned)
	}
	return nil
}

func (b *fakeBackend) Plan(_ context.Context, rev string) (api.Plan, error) {
	return api.Plan{Revision: rev, Actions: []api.PlanAction{}}, nil
}

func (b *fakeBackend) Ready() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.ready
}

func (b *fakeBackend) TestSettings(_ context.Context, v *config.Config) (api.TestResult, error) {
	b.mu.Lock()
	b.tested = append(b.tested, v)
	b.mu.Unlock()
	ok := v.Cluster.TokenSecret != ""
	return api.TestResult{OK: ok, Checks: []api.Check{{Name: "cluster: token", OK: ok, Message: "token secret given"}}}, nil
}

type env struct {
	t          *testing.T
	srv        *Server
	ts         *httptest.Server
	st         *store.Store
	backend    *fakeBackend
	ring       *logring.Ring
	setupOut   *bytes.Buffer
	dbPath     string
	setupToken string
	changed    chan *config.Config
}

var testParams = auth.Params{Memory: 1024, Time: 1, Threads: 1}

func newEnv(t *testing.T, mod ...func(*Options)) *env {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	e := &env{t: t, dbPath: filepath.Join(dir, "proxmops.db"), backend: newFakeBackend(), ring: logring.New(500),
		setupOut: &bytes.Buffer{}, changed: make(chan *config.Config, 10)}
	logger := slogFor(e.ring)
	st, err := store.Open(ctx, store.Options{Path: e.dbPath, Logger: logger, HistoryPerResource: 3})
	if err != nil {
		t.Fatal(err)
	}
	e.st = st
	opt := Options{Store: st, Backend: e.backend, Logs: e.ring, Logger: logger, SetupOutput: e.setupOut,
		PasswordParams: testParams, KeepAlive: 50 * time.Millisecond,
		Config:            config.Defaults(),
		OnSettingsChanged: func(c *config.Config) { e.changed <- c }}
	for _, m := range mod {
		m(&opt)
	}
	srv, err := New(ctx, opt)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	e.ts = httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		srv.Close()
		e.ts.Close()
		st.Close()
	})
	if m := regexp.MustCompile(`pmsetup_[A-Za-z0-9_-]+`).FindString(e.setupOut.String()); m != "" {
		e.setupToken = m
	}
	return e
}

// client is a browser-like client: a cookie jar, and the CSRF token once
// logged in. With bearer set it is a script using an API token instead.
type client struct {
	e      *env
	hc     *http.Client
	csrf   string
	bearer string
}

func (e *env) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{e: e, hc: &http.Client{Jar: jar, Timeout: 10 * time.Second}}
}

func (c *client) req(method, path string, body any, hdr ...string) (*http.Response, []byte) {
	c.e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		j, _ := json.Marshal(b)
		rd = bytes.NewReader(j)
	}
	r, err := http.NewRequest(method, c.e.ts.URL+path, rd)
	if err != nil {
		c.e.t.Fatal(err)
	}
	if rd != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		r.Header.Set(csrfHeader, c.csrf)
	}
	if c.bearer != "" {
		r.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.hc.Do(r)
	if err != nil {
		c.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func (c *client) expect(want int, method, path string, body any, hdr ...string) []byte {
	c.e.t.Helper()
	resp, b := c.req(method, path, body, hdr...)
	if resp.StatusCode != want {
		c.e.t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, b)
	}
	return b
}

func (c *client) login(user, pw string) {
	c.e.t.Helper()
	b := c.expect(200, "POST", "/api/v1/login", map[string]string{"username": user, "password": pw})
	var me api.Me
	json.Unmarshal(b, &me)
	c.csrf = me.CSRFToken
}

const adminPassword = "admin password 1"

// admin runs first-run setup and returns the logged-in admin.
func (e *env) admin() *client {
	e.t.Helper()
	c := e.client()
	b := c.expect(201, "POST", "/api/v1/setup", map[string]string{"token": e.setupToken, "username": "admin", "password": adminPassword})
	var me api.Me
	json.Unmarshal(b, &me)
	c.csrf = me.CSRFToken
	return c
}

// tokenClient has admin create an API token name with role, and returns a
// client that authenticates with it, and the token.
func (e *env) tokenClient(admin *client, name, role string) (*client, api.NewToken) {
	e.t.Helper()
	var nt api.NewToken
	if err := json.Unmarshal(admin.expect(201, "POST", "/api/v1/tokens", map[string]string{"name": name, "role": role}), &nt); err != nil {
		e.t.Fatal(err)
	}
	c := e.client()
	c.bearer = nt.Token
	return c, nt
}

// viewer creates a viewer account and returns it logged in.
func (e *env) viewer(admin *client) *client {
	e.t.Helper()
	admin.expect(201, "POST", "/api/v1/users", map[string]string{"username": "vera", "password": "viewer password", "role": "viewer"})
	v := e.client()
	v.login("vera", "viewer password")
	return v
}

func (e *env) logText() string {
	var b strings.Builder
	for _, l := range e.ring.Lines(0) {
		j, _ := json.Marshal(l)
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.String()
}

func readDBFiles(t *testing.T, path string) []byte {
	t.Helper()
	var all []byte
	for _, p := range []string{path, path + "-wal", path + "-shm", path + "-journal"} {
		b, err := os.ReadFile(p)
		if err == nil {
			all = append(all, b...)
		}
	}
	return all
}
