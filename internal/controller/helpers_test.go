package controller

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

var _ server.Backend = (*Controller)(nil)

const (
	simTokenID     = "root@pam!proxmops"
	simTokenSecret = "sim-secret"
)

// startSim serves a simulated three-node cluster over HTTP on loopback,
// holding guests.
func startSim(t *testing.T, taskSpeed float64, guests ...pvesim.GuestSpec) *pvesim.Server {
	t.Helper()
	sim := simtest.Start(t, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, TaskSpeed: taskSpeed, Seed: 1})
	simtest.AddGuests(t, sim, guests...)
	return sim
}

// simClient is a PVE client of sim, closed when the test ends: a person
// working through the API, or a check of what the simulator holds.
func simClient(t testing.TB, sim *pvesim.Server) *pve.Client {
	t.Helper()
	c, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: simTokenID, TokenSecret: simTokenSecret})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// wantGuest fails the test with why unless guest vmid is on sim.
func wantGuest(t *testing.T, sim *pvesim.Server, vmid int, why string) {
	t.Helper()
	if _, ok := sim.Guest(vmid); !ok {
		t.Fatal(why)
	}
}

// simWithRepo is a fresh simulator (startSim) and a repository whose first
// commit, msg, holds files.
func simWithRepo(t *testing.T, taskSpeed float64, msg string, files map[string]string) (*pvesim.Server, *gittest.Repo) {
	t.Helper()
	sim := startSim(t, taskSpeed)
	repo := gittest.New(t)
	repo.Commit(msg, files)
	return sim, repo
}

// vmManifest is a VirtualMachine without image or template: a blank disk,
// running, tagged lab.
func vmManifest(name string, vmid, cores int, annotations ...string) string {
	return testvm.VM{Name: name, Node: "pve1", VMID: vmid, Cores: cores, Tags: []string{"lab"}, Annotations: annotations, Running: true}.YAML()
}

// env is a controller wired to a simulator, a Git repository and a store.
type env struct {
	t     testing.TB
	sim   *pvesim.Server
	repo  *gittest.Repo
	st    *store.Store
	hub   *events.Hub
	c     *Controller
	clock *FakeClock
	dir   string
	// first is the repository's first commit, when syncedVM made it.
	first plumbing.Hash

	cancel context.CancelFunc
	done   chan struct{}
	// timeout bounds waitFor (default 30s).
	timeout time.Duration
}

type envOpt func(*Options)

// values is a configuration pointing at sim and a repository, with its Git
// cache under dir.
func values(sim *pvesim.Server, repoURL, dir string) *config.Config {
	cfg := config.Defaults()
	cfg.Cluster = config.Cluster{Endpoint: sim.APIURL(), TokenID: simTokenID, TokenSecret: simTokenSecret}
	cfg.Source.RepoURL, cfg.Source.Revision, cfg.Source.Submodules = repoURL, "main", true
	cfg.Source.CacheDir = filepath.Join(dir, "git-cache")
	cfg.Reconcile.Interval, cfg.Reconcile.AutoSync, cfg.Reconcile.Concurrency = time.Minute, true, 4
	return cfg
}

func openStore(t testing.TB, dir string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(dir, "proxmops.db")})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// newEnv builds (but does not run) a controller.
func newEnv(t testing.TB, sim *pvesim.Server, repo *gittest.Repo, dir string, mods ...envOpt) *env {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e := &env{t: t, sim: sim, repo: repo, dir: dir, hub: events.NewHub(4096), clock: NewFakeClock(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))}
	e.st = openStore(t, dir)
	opts := Options{
		Config: values(sim, repo.URL(), dir), Store: e.st, Hub: e.hub,
		Clock: e.clock, Seed: 1, MinPassGap: -1, ShutdownGrace: 5 * time.Second,
		PVE: func(c *pve.Config) { c.TaskPollMin, c.TaskPollMax = 5*time.Millisecond, 20*time.Millisecond },
	}
	for _, m := range mods {
		m(&opts)
	}
	c, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	e.c = c
	return e
}

// syncedVM runs a controller over a fresh simulator and a repository whose
// first commit holds one VM of vmManifest, and returns once it is Synced.
func syncedVM(t *testing.T, taskSpeed float64, name string, vmid, cores int) *env {
	t.Helper()
	repo := gittest.New(t)
	first := repo.Commit("vm", map[string]string{"vms/" + name + ".yaml": vmManifest(name, vmid, cores)})
	e := newEnv(t, startSim(t, taskSpeed), repo, "").start()
	e.first = first
	e.waitStatus("VirtualMachine/"+name, vocab.StatusSynced)
	return e
}

// start runs the loop until stop (or the test's end).
func (e *env) start() *env {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		e.c.Run(ctx)
	}()
	e.t.Cleanup(e.stop)
	return e
}

// stop ends the loop gracefully and closes the store.
func (e *env) stop() {
	if e.cancel == nil {
		return
	}
	e.endRun()
	e.st.Close()
}

// endRun cancels the controller's run and waits until it has returned.
func (e *env) endRun() {
	e.cancel()
	<-e.done
	e.cancel = nil
}

// stopMidAction stops e gracefully while key's action runs past the grace
// period: its history ends with the interruption.
func (e *env) stopMidAction(key string) {
	e.t.Helper()
	e.endRun()
	h := e.history(key)
	if len(h) == 0 || !interrupted(h[len(h)-1]) {
		e.t.Fatalf("history of %s after a graceful stop mid-apply: %+v", key, h)
	}
}

// interrupted tells the failure recorded for an action the daemon's stop
// or death cut short.
func interrupted(x api.HistoryEntry) bool {
	return x.Event == api.EventFailed && strings.Contains(x.Message, "interrupted")
}

// waitInterruptedRecorded waits until key's history holds the failure of
// its interrupted action.
func (e *env) waitInterruptedRecorded(key string) {
	e.t.Helper()
	e.waitFor("interrupted create recorded", func(api.ResourceList) bool {
		return slices.ContainsFunc(e.history(key), interrupted)
	})
}

// wantNoEvent fails the test for each entry of key's history that is an
// event, saying why it should not be there.
func (e *env) wantNoEvent(key string, event api.HistoryEvent, why string) {
	e.t.Helper()
	for _, x := range e.history(key) {
		if x.Event == event {
			e.t.Errorf("%s %s: %s", key, why, x.Message)
		}
	}
}

// closeWithNothingInFlight checks that the graceful stop left no guest in
// the in-flight state, so the next start records nothing again, and closes
// the store.
func (e *env) closeWithNothingInFlight() {
	e.t.Helper()
	b, ok, err := e.st.State(context.Background(), stateInflight)
	if err != nil || !ok || strings.Contains(string(b), "VirtualMachine/") {
		e.t.Fatalf("in-flight state after a graceful stop: %s %v %v", b, ok, err)
	}
	e.st.Close()
}

// kill ends e as SIGKILL would: nothing it does from now on reaches the
// database.
func (e *env) kill() {
	e.st.Close()
	e.c.Close()
	e.endRun()
}

// syncCreated syncs the VirtualMachine name and waits until it is created,
// owned and Synced.
func (e *env) syncCreated(name string) {
	e.t.Helper()
	if err := e.c.SyncOne(context.Background(), "VirtualMachine", name); err != nil {
		e.t.Fatal(err)
	}
	e.waitFor(name+" created", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/"+name)
		return r != nil && r.Status == vocab.StatusSynced && r.Owned
	})
}

// waitFor polls the status list until ok holds.
func (e *env) waitFor(what string, ok func(api.ResourceList) bool) api.ResourceList {
	e.t.Helper()
	if e.timeout == 0 {
		e.timeout = 30 * time.Second
	}
	var list api.ResourceList
	if !testwait.Until(e.timeout, func() bool {
		list, _ = e.c.Resources(context.Background())
		return ok(list)
	}) {
		e.t.Fatalf("timed out waiting for %s; status: %s", what, dump(list))
	}
	return list
}

// waitStatus waits until kind/name has status st.
func (e *env) waitStatus(key string, st vocab.Status) api.ResourceSummary {
	e.t.Helper()
	var got api.ResourceSummary
	e.waitFor(key+" "+st.String(), func(l api.ResourceList) bool {
		for _, r := range l.Resources {
			if r.Kind+"/"+r.Name == key && r.Status == st && r.Progress == nil {
				got = r
				return true
			}
		}
		return false
	})
	return got
}

func find(l api.ResourceList, key string) *api.ResourceSummary {
	for i, r := range l.Resources {
		if r.Kind+"/"+r.Name == key {
			return &l.Resources[i]
		}
	}
	return nil
}

func dump(l api.ResourceList) string {
	var b strings.Builder
	fmt.Fprintf(&b, "revision=%s sourceError=%q", short(l.Revision), l.SourceError)
	for _, r := range l.Resources {
		fmt.Fprintf(&b, "\n  %s/%s %s %s action=%s reason=%q", r.Kind, r.Name, r.Status, r.Health, r.Action, r.Reason)
	}
	return b.String()
}

// history lists the events of a resource, oldest first.
func (e *env) history(key string) []api.HistoryEntry {
	e.t.Helper()
	kind, name := splitKey(key)
	h, err := e.st.History(context.Background(), kind, name, 0)
	if err != nil {
		e.t.Fatal(err)
	}
	for i, j := 0, len(h)-1; i < j; i, j = i+1, j-1 {
		h[i], h[j] = h[j], h[i]
	}
	return h
}

func events_(h []api.HistoryEntry) []api.HistoryEvent {
	out := make([]api.HistoryEvent, len(h))
	for i, e := range h {
		out[i] = e.Event
	}
	return out
}

// writes counts the requests that change the simulated cluster.
func writes(sim *pvesim.Server) int64 {
	var n int64
	for _, r := range sim.Requests() {
		if r.Method == "POST" || r.Method == "PUT" || r.Method == "DELETE" {
			n += r.Count
		}
	}
	return n
}

// writeRequests names the writes pvesim saw, for a failure message.
func writeRequests(sim *pvesim.Server) []string {
	var out []string
	for _, r := range sim.Requests() {
		if r.Method == "POST" || r.Method == "PUT" || r.Method == "DELETE" {
			out = append(out, fmt.Sprintf("%s %s ×%d", r.Method, r.Path, r.Count))
		}
	}
	return out
}

func guestCores(t *testing.T, sim *pvesim.Server, vmid int) string {
	t.Helper()
	g, ok := sim.Guest(vmid)
	if !ok {
		return ""
	}
	return g.Config["cores"]
}

// pvesimGuest is a running VM someone else made (no ownership tag).
func pvesimGuest(vmid int, name string) pvesim.GuestSpec {
	return pvesim.GuestSpec{VMID: vmid, Node: "pve1", Running: true,
		Config: map[string]string{"name": name, "cores": "1", "memory": "512", "scsi0": "local-lvm:vm-" + itoa(vmid) + "-disk-0,size=4G"}}
}

func itoa(n int) string { return fmt.Sprint(n) }

func branchRef(name string, at plumbing.Hash) *plumbing.Reference {
	return plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), at)
}

// newEnvB is newEnv on the wall clock, with the interval an hour: passes
// happen when asked for.
func newEnvB(b *testing.B, sim *pvesim.Server, repo *gittest.Repo, dir string, mods ...envOpt) *env {
	mods = append([]envOpt{func(o *Options) { o.Clock = realClock{}; o.Config.Reconcile.Interval = time.Hour }}, mods...)
	return newEnv(b, sim, repo, dir, mods...)
}

type eventsEvent = events.Event

// lastPass is the time of the last pass (zero before the first).
func (e *env) lastPass() time.Time {
	l, _ := e.c.Resources(context.Background())
	if l.LastPass == nil {
		return time.Time{}
	}
	return *l.LastPass
}

// serveHTTP runs the daemon's HTTP server with o on loopback until the
// test ends, and returns its base URL. Passwords hash cheaply and the
// setup token goes to the store's file only.
func serveHTTP(t testing.TB, o server.Options) string {
	t.Helper()
	o.SetupOutput, o.PasswordParams = io.Discard, auth.Params{Memory: 1024, Time: 1, Threads: 1}
	srv, err := server.New(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() { defer close(served); srv.Serve(ctx, ln) }()
	t.Cleanup(func() { cancel(); <-served })
	return "http://" + ln.Addr().String()
}

// serverOptions wires the daemon's server to e's controller with cfg.
func (e *env) serverOptions(cfg *config.Config) server.Options {
	return server.Options{Store: e.st, Backend: e.c, Hub: e.hub, Config: cfg}
}
