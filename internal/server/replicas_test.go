package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/leader"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/testwait"
)

type fakeReplicas struct {
	mu      sync.Mutex
	st      leader.Status
	changed chan struct{}
	asked   int // calls of Changed: a forwarder about to wait
}

func (f *fakeReplicas) Status() leader.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeReplicas) Changed() <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.asked++
	if f.changed == nil {
		f.changed = make(chan struct{})
	}
	return f.changed
}

func (f *fakeReplicas) set(st leader.Status) {
	f.mu.Lock()
	f.st = st
	if f.changed != nil {
		close(f.changed)
		f.changed = nil
	}
	f.mu.Unlock()
}

// follower is a second server on the leader env's database, following it.
func (e *env) follower(t *testing.T, reps *fakeReplicas) *env {
	t.Helper()
	f := &env{t: t, st: e.st, backend: newFakeBackend(), ring: logring.New(100), changed: make(chan *config.Config, 10)}
	srv, err := New(context.Background(), Options{Store: e.st, Backend: f.backend, Logs: f.ring, Logger: slogFor(f.ring),
		PasswordParams: testParams, KeepAlive: 50 * time.Millisecond, Config: config.Defaults(), Replicas: reps, LeaderWait: 300 * time.Millisecond,
		OnSettingsChanged: func(c *config.Config) { f.changed <- c }})
	if err != nil {
		t.Fatal(err)
	}
	f.srv, f.ts = srv, httptest.NewServer(srv.Handler())
	t.Cleanup(func() { srv.Close(); f.ts.Close() })
	return f
}

// A follower answers from the shared database what it holds, forwards
// what needs the controller to the leader as the user's own request, and
// says so plainly while no replica leads.
func TestAFollowerForwardsControllerRoutesToTheLeader(t *testing.T) {
	lead := newEnv(t)
	lead.admin()
	since := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	leaderInfo := &leader.Info{Identity: leader.Identity{Replica: "a", Host: "h1", PID: 7, URL: lead.ts.URL}, Since: since, Term: 3}
	reps := &fakeReplicas{st: leader.Status{Role: api.ReplicaFollower, Self: "b", Leader: leaderInfo}}
	fol := lead.follower(t, reps)
	c := fol.client()
	c.login("admin", adminPassword)

	c.expect(200, "GET", "/api/v1/me", nil)
	c.expect(202, "POST", "/api/v1/sync", nil)
	c.expect(202, "POST", "/api/v1/resources/VirtualMachine/app-01/sync", nil)
	c.expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01/live", nil)
	if got := lead.backend.Calls(); !slices.Equal(got, []string{"SyncAll", "SyncOne VirtualMachine/app-01", "Live VirtualMachine/app-01"}) {
		t.Fatalf("the leader's backend saw %q", got)
	}
	if got := fol.backend.Calls(); len(got) != 0 {
		t.Fatalf("the follower's backend ran %q", got)
	}
	// An answer of the leader's, error included, comes back as is.
	c.expect(409, "DELETE", "/api/v1/resources/VirtualMachine/foreign", nil)

	var doc leader.Status
	if err := json.Unmarshal(c.expect(200, "GET", "/api/v1/replicas", nil), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Role != api.ReplicaFollower || doc.Self != "b" || doc.Leader == nil || doc.Leader.Replica != "a" || !doc.Leader.Since.Equal(since) || doc.Leader.Term != 3 {
		t.Fatalf("replicas: %+v", doc)
	}
	var ready map[string]any
	json.Unmarshal(c.expect(200, "GET", "/readyz", nil), &ready)
	if ready["role"] != "follower" || ready["leader"].(map[string]any)["replica"] != "a" {
		t.Fatalf("readyz: %v", ready)
	}

	// A request another replica forwarded is never forwarded again.
	c.expect(202, "POST", "/api/v1/refresh", nil, forwardedHeader, "a")
	if got := fol.backend.Calls(); !slices.Equal(got, []string{"Refresh"}) {
		t.Fatalf("the follower's backend saw %q", got)
	}

	reps.set(leader.Status{Role: api.ReplicaFollower, Self: "b"})
	resp, body := c.req("POST", "/api/v1/sync", nil)
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("no leader: %d %s", resp.StatusCode, body)
	}
	c.expect(200, "GET", "/api/v1/users", nil)
}

// A request that needs the controller while no replica leads yet (a
// replica that just started, a failover) is held until one leads, not
// refused at once.
func TestAFollowerHoldsARequestUntilAReplicaLeads(t *testing.T) {
	lead := newEnv(t)
	lead.admin()
	reps := &fakeReplicas{st: leader.Status{Role: api.ReplicaFollower, Self: "b"}}
	fol := lead.follower(t, reps)
	fol.srv.opt.LeaderWait = time.Minute
	c := fol.client()
	c.login("admin", adminPassword)
	type answer struct {
		code int
		body string
	}
	got := make(chan answer, 1)
	go func() {
		resp, body := c.req("POST", "/api/v1/sync", nil)
		got <- answer{resp.StatusCode, string(body)}
	}()
	// The request is waiting once the forwarder asked for the next
	// change; then this replica starts leading.
	testwait.For(t, "the forwarder to wait for a leader", 10*time.Second, func() bool {
		reps.mu.Lock()
		defer reps.mu.Unlock()
		return reps.asked > 0
	})
	reps.set(leader.Status{Role: api.ReplicaLeader, Self: "b", Leader: &leader.Info{Identity: leader.Identity{Replica: "b"}, Term: 4}})
	a := <-got
	if a.code != 202 {
		t.Fatalf("held request: %d %s, want 202 once this replica leads", a.code, a.body)
	}
	if calls := fol.backend.Calls(); !slices.Equal(calls, []string{"SyncAll"}) {
		t.Fatalf("the replica's backend saw %q", calls)
	}
}

// Without replicas (SQLite) the documents say so and nothing is forwarded.
func TestASingleDaemonSaysItIsSingle(t *testing.T) {
	e := newEnv(t)
	c := e.admin()
	var doc leader.Status
	json.Unmarshal(c.expect(200, "GET", "/api/v1/replicas", nil), &doc)
	if doc.Role != api.ReplicaSingle || doc.Leader != nil {
		t.Fatalf("replicas: %+v", doc)
	}
}

// GET /api/v1/replicas answers api.ReplicaStatus with the bytes it had as
// the elector's own status: same fields, same order, the leader left out
// while none leads.
func TestTheReplicasDocumentIsTheElectorsStatusOnTheWire(t *testing.T) {
	lead := newEnv(t)
	lead.admin()
	since := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	reps := &fakeReplicas{}
	fol := lead.follower(t, reps)
	c := fol.client()
	c.login("admin", adminPassword)
	for _, st := range []leader.Status{
		{Role: api.ReplicaFollower, Self: "b", Leader: &leader.Info{Identity: leader.Identity{Replica: "a", Host: "h1", PID: 7, URL: "http://a:8080"}, Since: since, Term: 3}},
		{Role: api.ReplicaLeader, Self: "a", Leader: &leader.Info{Identity: leader.Identity{Replica: "a", Host: "h1", PID: 7}, Since: since, Term: 4}},
		{Role: api.ReplicaFollower, Self: "b"},
	} {
		reps.set(st)
		want := `{"role":"` + string(st.Role) + `","replica":"` + st.Self + `"`
		if l := st.Leader; l != nil {
			url := ""
			if l.URL != "" {
				url = `,"url":"` + l.URL + `"`
			}
			want += fmt.Sprintf(`,"leader":{"replica":%q,"host":%q,"pid":%d%s,"since":"2026-12-02T03:00:00Z","term":%d}`, l.Replica, l.Host, l.PID, url, l.Term)
		}
		want += "}"
		if got := strings.TrimSpace(string(c.expect(200, "GET", "/api/v1/replicas", nil))); got != want {
			t.Errorf("replicas:\n got %s\nwant %s", got, want)
		}
	}
}
