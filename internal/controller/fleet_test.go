package controller

import (
	"context"
	"errors"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

var (
	_ server.Backend         = (*Fleet)(nil)
	_ server.RevisionBackend = (*Fleet)(nil)
	_ server.SnapshotBackend = (*Fleet)(nil)
	_ server.RevisionBackend = (*Controller)(nil)
	_ server.SnapshotBackend = (*Controller)(nil)
)

// gatedSim serves a simulator on loopback through a gate that can make
// it hang (a cluster that accepts connections and never answers) or stop
// listening altogether (connection refused), then come back on the same
// address.
type gatedSim struct {
	t    *testing.T
	sim  *pvesim.Server
	addr string

	mu     sync.Mutex
	srv    *http.Server
	hangCh chan struct{} // non-nil: requests wait until it is closed
}

func startGatedSim(t *testing.T) *gatedSim {
	t.Helper()
	// A live /cluster/resources (no pvestatd lag): the test is about the
	// outage, not about a status report taken before a start.
	g := &gatedSim{t: t, sim: pvesim.New(pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, Seed: 2, StatusInterval: -1})}
	g.listen("127.0.0.1:0")
	t.Cleanup(func() { g.hang(false); g.stop() })
	return g
}

func (g *gatedSim) URL() string { return "http://" + g.addr + "/api2/json" }

func (g *gatedSim) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	ch := g.hangCh
	g.mu.Unlock()
	if ch != nil {
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
	g.sim.ServeHTTP(w, r)
}

func (g *gatedSim) listen(addr string) {
	g.t.Helper()
	var ln net.Listener
	var err error
	for range 50 { // the port of a stopped server may take a moment to free
		if ln, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		g.t.Fatal(err)
	}
	g.addr = ln.Addr().String()
	srv := &http.Server{Handler: g}
	g.mu.Lock()
	g.srv = srv
	g.mu.Unlock()
	go srv.Serve(ln)
}

func (g *gatedSim) stop() {
	g.mu.Lock()
	srv := g.srv
	g.srv = nil
	g.mu.Unlock()
	if srv != nil {
		srv.Close()
	}
}

func (g *gatedSim) restart() { g.listen(g.addr) }

func (g *gatedSim) hang(on bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case on && g.hangCh == nil:
		g.hangCh = make(chan struct{})
	case !on && g.hangCh != nil:
		close(g.hangCh)
		g.hangCh = nil
	}
}

// fleetEnv is a Fleet of two clusters on two simulators following one
// repository.
type fleetEnv struct {
	t      testing.TB
	f      *Fleet
	st     *store.Store
	repo   *gittest.Repo
	clock  *FakeClock
	opts   Options
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
	// timeout bounds waitCluster (default 60s).
	timeout time.Duration
}

func newFleetEnv(t testing.TB, repo *gittest.Repo, urls map[string]string, mods ...func(*config.Config, *Options)) *fleetEnv {
	t.Helper()
	dir := t.TempDir()
	cfg := config.Defaults()
	cfg.Source.RepoURL, cfg.Source.Revision, cfg.Source.Path = repo.URL(), "main", "proxmox"
	cfg.Source.CacheDir = filepath.Join(dir, "git-cache")
	cfg.Reconcile.Interval, cfg.Reconcile.Prune = time.Minute, true
	for _, name := range []string{"alpha", "beta"} {
		cfg.Clusters = append(cfg.Clusters, config.ClusterEntry{Name: name, Path: "clusters/" + name,
			Cluster: config.Cluster{Endpoint: urls[name], TokenID: simTokenID, TokenSecret: simTokenSecret}})
	}
	st := openStore(t, dir)
	clock := NewFakeClock(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	opts := Options{
		Config: cfg, Store: st, Hub: events.NewHub(4096), Seed: 1, MinPassGap: -1, ShutdownGrace: 2 * time.Second,
		Clock: clock,
		PVE: func(c *pve.Config) {
			c.TaskPollMin, c.TaskPollMax = 5*time.Millisecond, 20*time.Millisecond
		},
	}
	for _, m := range mods {
		m(cfg, &opts)
	}
	f, err := NewFleet(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	e := &fleetEnv{t: t, f: f, st: st, repo: repo, clock: clock, opts: opts, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	go func() { defer close(e.done); f.Run(ctx) }()
	t.Cleanup(e.stop)
	return e
}

// stop ends the fleet's loops and closes its store.
func (e *fleetEnv) stop() {
	e.once.Do(func() { e.cancel(); <-e.done; e.st.Close() })
}

// waitCluster polls one cluster's status list until ok holds.
func (e *fleetEnv) waitCluster(name, what string, ok func(api.ResourceList) bool) api.ResourceList {
	e.t.Helper()
	if e.timeout == 0 {
		e.timeout = 60 * time.Second
	}
	ctx := api.WithCluster(context.Background(), name)
	var list api.ResourceList
	if !testwait.Until(e.timeout, func() bool {
		var err error
		list, err = e.f.Resources(ctx)
		return err == nil && ok(list)
	}) {
		e.t.Fatalf("cluster %s: timed out waiting for %s; status: %s", name, what, dump(list))
	}
	return list
}

func allSyncedAt(commit string, n int) func(api.ResourceList) bool {
	return func(l api.ResourceList) bool {
		if l.Revision != commit || len(l.Resources) != n {
			return false
		}
		for _, r := range l.Resources {
			if r.Status != vocab.StatusSynced || r.Progress != nil {
				return false
			}
		}
		return true
	}
}

func TestTwoClustersConvergeFromOneRepositoryWhileOneIsDown(t *testing.T) {
	alpha := startSim(t, 0)
	beta := startGatedSim(t)
	// A guest nobody declared on alpha, at the VMID beta's extra guest uses.
	if err := alpha.AddGuest(pvesimGuest(101, "someone-elses")); err != nil {
		t.Fatal(err)
	}
	repo := gittest.New(t)
	c1 := repo.Commit("two clusters", map[string]string{
		"proxmox/clusters/alpha/app.yaml":  vmManifest("app", 100, 1),
		"proxmox/clusters/beta/app.yaml":   vmManifest("app", 100, 2),
		"proxmox/clusters/beta/extra.yaml": vmManifest("extra", 101, 1),
		"proxmox/README.md":                "not a manifest",
	})
	e := newFleetEnv(t, repo, map[string]string{"alpha": alpha.APIURL(), "beta": beta.URL()})

	e.waitCluster("alpha", "alpha synced at c1", allSyncedAt(c1.String(), 1)) // an unowned guest is not listed
	e.waitCluster("beta", "beta synced at c1", allSyncedAt(c1.String(), 2))
	if guestCores(t, alpha, 100) != "1" || guestCores(t, beta.sim, 100) != "2" {
		t.Fatalf("each cluster got its own manifest: alpha %q beta %q", guestCores(t, alpha, 100), guestCores(t, beta.sim, 100))
	}
	if g, _ := alpha.Guest(101); g.Config["name"] != "someone-elses" {
		t.Fatalf("beta's manifest reached alpha: %+v", g.Config)
	}

	// The same kind/name in both clusters: the request must name one.
	if _, err := e.f.Resource(context.Background(), "VirtualMachine", "app"); !errors.Is(err, api.ErrInvalid) || !strings.Contains(err.Error(), "alpha and beta") {
		t.Fatalf("ambiguous resource: %v", err)
	}
	d, err := e.f.Resource(api.WithCluster(context.Background(), "beta"), "VirtualMachine", "app")
	if err != nil || d.Cluster != "beta" || len(d.History) == 0 {
		t.Fatalf("beta's app: %+v %v", d.ResourceSummary, err)
	}
	if d, err := e.f.Resource(context.Background(), "VirtualMachine", "extra"); err != nil || d.Cluster != "beta" {
		t.Fatalf("a name in one cluster only: %+v %v", d.ResourceSummary, err)
	}
	if _, err := e.f.Resources(api.WithCluster(context.Background(), "gamma")); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown cluster: %v", err)
	}
	all, _ := e.f.Resources(context.Background())
	if len(all.Resources) != 3 || len(all.Clusters) != 2 || all.Clusters[0].Name != "alpha" || all.Counts[vocab.StatusSynced] != 3 {
		t.Fatalf("merged list: %s %+v", dump(all), all.Clusters)
	}

	// beta hangs: alpha converges a new commit all the same.
	beta.hang(true)
	c2 := repo.Commit("alpha grows", map[string]string{"proxmox/clusters/alpha/app.yaml": vmManifest("app", 100, 3)})
	if err := e.f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The status list shows a new revision as soon as it is loaded, before
	// the pass's plan: wait for the cluster itself too.
	e.waitCluster("alpha", "alpha synced at c2 while beta hangs", func(l api.ResourceList) bool {
		return allSyncedAt(c2.String(), 1)(l) && guestCores(t, alpha, 100) == "3"
	})

	// beta refuses connections: alpha prunes what it owns, beta keeps its
	// own guest at the same VMID, and beta reports its trouble.
	beta.stop()
	beta.hang(false)
	c3 := repo.Commit("alpha shrinks, beta drops extra", map[string]string{
		"proxmox/clusters/alpha/app.yaml":  vmManifest("app", 100, 2),
		"proxmox/clusters/beta/extra.yaml": "",
	})
	if err := e.f.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitCluster("alpha", "alpha synced at c3 while beta is stopped", func(l api.ResourceList) bool {
		return allSyncedAt(c3.String(), 1)(l) && guestCores(t, alpha, 100) == "2"
	})
	down := e.waitCluster("beta", "beta reports it cannot be reached, its resources Unknown", func(l api.ResourceList) bool {
		return strings.Contains(l.ClusterError, "observing the cluster failed") && l.Counts[vocab.StatusUnknown] == len(l.Resources)
	})
	if down.SourceError != "" {
		t.Fatalf("beta's cluster error is said as a source error: %q", down.SourceError)
	}
	all, _ = e.f.Resources(context.Background())
	if !strings.HasPrefix(all.ClusterError, "beta: observing the cluster failed") || all.Clusters[0].ClusterError != "" || all.Clusters[0].Counts[vocab.StatusUnknown] != 0 {
		t.Fatalf("only beta is unreachable: %q %+v", all.ClusterError, all.Clusters)
	}
	if _, ok := beta.sim.Guest(101); !ok {
		t.Fatal("beta's extra was deleted while beta was unreachable")
	}
	if g, ok := alpha.Guest(101); !ok || g.Config["name"] != "someone-elses" {
		t.Fatal("alpha's unowned guest at VMID 101 was touched")
	}

	// beta comes back and converges the head: prune removes its own extra.
	// An attempt cut off by the outage waits for its retry time: let it come.
	beta.restart()
	e.clock.Advance(10 * time.Minute)
	if err := e.f.Refresh(api.WithCluster(context.Background(), "beta")); err != nil {
		t.Fatal(err)
	}
	e.waitCluster("beta", "beta synced at c3 after coming back, its own extra pruned", func(l api.ResourceList) bool {
		_, extra := beta.sim.Guest(101)
		return allSyncedAt(c3.String(), 1)(l) && !extra
	})
	if guestCores(t, beta.sim, 100) != "2" || guestCores(t, alpha, 100) != "2" {
		t.Fatal("cores changed on the wrong cluster")
	}

	// One fetch per refresh serves both clusters.
	if n := e.f.shared.Fetches(); n > 5 {
		t.Fatalf("%d Git fetches for 1 start and 3 refreshes of 2 clusters", n)
	}
	// Histories are per cluster.
	hb, err := e.st.History(context.Background(), "VirtualMachine", "beta/extra", 0)
	if err != nil || len(hb) == 0 || hb[0].Event != api.EventDeleted {
		t.Fatalf("beta/extra history: %+v %v", hb, err)
	}
	if ha, _ := e.st.History(context.Background(), "VirtualMachine", "alpha/extra", 0); len(ha) != 0 {
		t.Fatalf("alpha has beta's history: %+v", ha)
	}
}

// newPlannedTwoClusterFleet starts a fleet of alpha (app) and beta (db,
// web) from repo with auto-sync off and waits until both clusters planned.
func newPlannedTwoClusterFleet(t *testing.T) (e *fleetEnv, repo *gittest.Repo, alpha, beta *pvesim.Server) {
	alpha = startSim(t, 0)
	beta = startSim(t, 0)
	repo = gittest.New(t)
	repo.Commit("two clusters", map[string]string{
		"proxmox/clusters/alpha/app.yaml": vmManifest("app", 100, 1),
		"proxmox/clusters/beta/db.yaml":   vmManifest("db", 100, 1),
		"proxmox/clusters/beta/web.yaml":  vmManifest("web", 101, 1),
	})
	e = newFleetEnv(t, repo, map[string]string{"alpha": alpha.APIURL(), "beta": beta.APIURL()}, func(c *config.Config, _ *Options) {
		c.Reconcile.AutoSync = false
	})
	e.waitCluster("beta", "beta planned", func(l api.ResourceList) bool { return len(l.Resources) == 2 && l.LastPass != nil })
	e.waitCluster("alpha", "alpha planned", func(l api.ResourceList) bool { return len(l.Resources) == 1 && l.LastPass != nil })
	return e, repo, alpha, beta
}

func TestFleetPlanNamesEachActionsCluster(t *testing.T) {
	e, _, alpha, beta := newPlannedTwoClusterFleet(t)
	p, err := e.f.Plan(context.Background(), "")
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary.Create != 3 || len(p.Actions) != 3 || p.Cluster != "" {
		t.Fatalf("merged plan: %+v", p)
	}
	by := map[string]string{}
	for _, a := range p.Actions {
		by[a.Name] = a.Cluster
	}
	if by["app"] != "alpha" || by["db"] != "beta" || by["web"] != "beta" {
		t.Fatalf("clusters of actions: %v", by)
	}
	pb, err := e.f.Plan(api.WithCluster(context.Background(), "beta"), "")
	if err != nil || pb.Cluster != "beta" || pb.Summary.Create != 2 {
		t.Fatalf("beta's plan: %+v %v", pb, err)
	}
	if writes(alpha)+writes(beta) != 0 {
		t.Fatal("autoSync off changed a cluster")
	}
}

// The check of a clusters list reports each cluster's lines under its
// name, reading each cluster's own manifests; ?cluster= (GET /api/v1/check)
// checks one, and an unknown name is not found.
func TestFleetCheckReportsEachClusterOrTheOneAskedFor(t *testing.T) {
	e, _, alpha, beta := newPlannedTwoClusterFleet(t)
	res, err := e.f.TestSettings(context.Background(), e.opts.Config)
	if err != nil || !res.OK {
		t.Fatalf("check of both: %+v %v", res, err)
	}
	names := map[string]string{}
	for _, c := range res.Checks {
		names[c.Name] = c.Message
	}
	for _, want := range []string{"alpha: cluster: version", "beta: cluster: version", "alpha: source: repository", "beta: storage local-lvm on pve1"} {
		if _, ok := names[want]; !ok {
			t.Errorf("no line %q in %v", want, names)
		}
	}
	if msg := names["beta: source: repository"]; !strings.Contains(msg, "2 VirtualMachine") {
		t.Errorf("beta's manifests: %s", msg)
	}
	one, err := e.f.TestSettings(api.WithCluster(context.Background(), "beta"), e.opts.Config)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range one.Checks {
		if !strings.HasPrefix(c.Name, "beta: ") {
			t.Errorf("?cluster=beta reports %s", c.Name)
		}
	}
	if _, err := e.f.TestSettings(api.WithCluster(context.Background(), "gamma"), e.opts.Config); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("an unknown cluster: %v", err)
	}
	if writes(alpha)+writes(beta) != 0 {
		t.Error("the check wrote to a cluster")
	}
}
