package controller

import (
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// healthVM is vmManifest with extra spec lines (a health check).
func healthVM(name string, vmid int, extra string) string {
	return vmManifest(name, vmid, 1) + extra
}

// listenOn listens on a loopback address: the guest's service.
func listenOn(t *testing.T, ip string) (net.Listener, int) {
	t.Helper()
	ln := listenAt(t, ip+":0")
	return ln, ln.Addr().(*net.TCPAddr).Port
}

// listenAt listens on addr until the test ends.
func listenAt(t *testing.T, addr string) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// acceptAndClose closes every connection ln accepts, until ln closes: a
// port that is open and says nothing, what a TCP check wants.
func acceptAndClose(ln net.Listener) {
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
}

// waitHealth advances the controller's clock (the probes' interval) until
// the resource shows h and ok holds for its summary.
func (e *env) waitHealth(key string, h vocab.Health, ok func(api.ResourceSummary) bool) api.ResourceSummary {
	e.t.Helper()
	var got api.ResourceSummary
	e.waitFor(key+" "+h.String(), func(l api.ResourceList) bool {
		if r := find(l, key); r != nil && r.Health == h && (ok == nil || ok(*r)) {
			got = *r
			return true
		}
		e.clock.Advance(5 * time.Second)
		return false
	})
	return got
}

func healthEntries(h []api.HistoryEntry) []string {
	var out []string
	for _, e := range h {
		if e.Event == api.EventHealth {
			out = append(out, e.Message)
		}
	}
	return out
}

// A TCP health check against the guest's static IP (found as provisioning
// finds it) makes the VM Healthy while its port accepts and Degraded once
// it is closed for failureThreshold probes: one history entry per
// transition, one degraded notification, and the health gauge follows.
func TestTCPHealthCheckGoesDegradedWhenThePortCloses(t *testing.T) {
	const ip = "127.0.73.10"
	ln, port := listenOn(t, ip)
	acceptAndClose(ln)
	sim, repo := simWithRepo(t, 0, "web", map[string]string{"web.yaml": healthVM("web", 140, "  cloudInit: {ip: "+ip+"/8}\n"+
		"  healthCheck: {tcp: {port: "+strconv.Itoa(port)+"}, interval: 5s, failureThreshold: 2}\n")})
	hook, url := startHookReceiver(t)
	e := newEnv(t, sim, repo, "", withNotifier(t, url, "degraded")).start()
	const key = "VirtualMachine/web"

	e.waitHealth(key, vocab.HealthHealthy, func(s api.ResourceSummary) bool { return s.Status == vocab.StatusSynced })
	testwait.For(t, "a health entry", 30*time.Second, func() bool {
		e.clock.Advance(5 * time.Second)
		return len(healthEntries(e.history(key))) > 0
	})
	ln.Close()
	sum := e.waitHealth(key, vocab.HealthDegraded, nil)
	want := "health check failing (2 in a row): tcp " + ip + ":" + strconv.Itoa(port) + ": connection refused"
	if !strings.Contains(sum.Reason, want) || sum.Status != vocab.StatusSynced {
		t.Fatalf("degraded summary %+v, want reason %q", sum, want)
	}
	testwait.For(t, "the degraded notification", 30*time.Second, func() bool { return hook.count(key, api.NotifyDegraded) == 1 })
	for range 5 {
		e.clock.Advance(5 * time.Second)
	}
	e.refreshPasses(1)
	if n := hook.count(key, api.NotifyDegraded); n != 1 {
		t.Fatalf("degraded notifications = %d, want 1: %+v", n, hook.events(key))
	}
	if got := healthEntries(e.history(key)); len(got) != 2 || got[0] != "Healthy" || got[1] != "Degraded: "+want {
		t.Fatalf("health history %q", got)
	}
	if v := testutil.ToFloat64(e.c.m.ResourceHealth.WithLabelValues("VirtualMachine", "web", "Degraded", "default")); v != 1 {
		t.Fatalf("proxmops_resource_health Degraded = %v", v)
	}
	if n := testutil.CollectAndCount(e.c.m.ResourceHealth); n != 1 {
		t.Fatalf("%d health series, want 1 (the resource's current health)", n)
	}
}

// An HTTP health check wants its expectStatus: 204 is Healthy, 500 after
// failureThreshold probes Degraded, with the answer in the reason.
func TestHTTPHealthCheckWantsTheExpectedStatus(t *testing.T) {
	const ip = "127.0.74.10"
	ln, port := listenOn(t, ip)
	var status atomic.Int32
	status.Store(http.StatusNoContent)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(int(status.Load()))
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	sim, repo := simWithRepo(t, 0, "api", map[string]string{"api.yaml": healthVM("api", 141,
		"  healthCheck: {http: {port: "+strconv.Itoa(port)+", path: /healthz, expectStatus: 204}, address: "+ip+", interval: 5s, failureThreshold: 1}\n")})
	e := newEnv(t, sim, repo, "").start()
	const key = "VirtualMachine/api"

	e.waitHealth(key, vocab.HealthHealthy, nil)
	status.Store(http.StatusInternalServerError)
	sum := e.waitHealth(key, vocab.HealthDegraded, nil)
	if !strings.Contains(sum.Reason, "http http://"+ip+":"+strconv.Itoa(port)+"/healthz: answered 500 Internal Server Error, want 204") {
		t.Fatalf("reason %q", sum.Reason)
	}
	status.Store(http.StatusNoContent)
	e.waitHealth(key, vocab.HealthHealthy, nil)
}

// The guest agent check leaves a booting VM Progressing (inside its grace
// period) while pvesim's agent does not answer yet, and Healthy once it
// has started.
func TestAgentHealthCheckIsProgressingUntilTheAgentAnswers(t *testing.T) {
	simClock := pvesim.NewFakeClock(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC))
	sim := simtest.Start(t, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, Seed: 1,
		Clock: simClock, StatusInterval: -1, AgentStartDelay: 30 * time.Second})
	repo := gittest.New(t)
	repo.Commit("db", map[string]string{"db.yaml": healthVM("db", 142,
		"  agent: true\n  healthCheck: {agent: true, interval: 5s, gracePeriod: 10m}\n")})
	e := newEnv(t, sim, repo, "").start()
	const key = "VirtualMachine/db"

	sum := e.waitHealth(key, vocab.HealthProgressing, func(s api.ResourceSummary) bool {
		return s.Status == vocab.StatusSynced && strings.Contains(s.Reason, "QEMU guest agent is not running")
	})
	if !strings.Contains(sum.Reason, "health check not passing yet: guest agent:") {
		t.Fatalf("reason %q", sum.Reason)
	}
	simClock.Advance(30 * time.Second)
	e.waitHealth(key, vocab.HealthHealthy, nil)
	if got := healthEntries(e.history(key)); len(got) != 2 || !strings.HasPrefix(got[0], "Progressing: ") || got[1] != "Healthy" {
		t.Fatalf("health history %q", got)
	}
}

// A probe that hangs holds up no pass: passes go on while the guest's
// HTTP server has not answered, and the check's timeout ends the probe.
func TestHangingProbeDoesNotHoldUpPasses(t *testing.T) {
	const ip = "127.0.75.10"
	ln, port := listenOn(t, ip)
	release := make(chan struct{})
	var asked atomic.Int32
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { close(release); srv.Close() })
	sim, repo := simWithRepo(t, 0, "slow", map[string]string{"slow.yaml": healthVM("slow", 143,
		"  healthCheck: {http: {port: "+strconv.Itoa(port)+"}, address: "+ip+", interval: 1h, timeout: 1h}\n")})
	e := newEnv(t, sim, repo, "").start()
	const key = "VirtualMachine/slow"
	e.waitStatus(key, vocab.StatusSynced)
	testwait.For(t, "a probe in flight", 30*time.Second, func() bool {
		e.clock.Advance(time.Hour)
		return asked.Load() > 0
	})
	e.refreshPasses(2)
	l, _ := e.c.Resources(t.Context())
	if r := find(l, key); r == nil || r.Health != vocab.HealthProgressing || !strings.Contains(r.Reason, "waiting for the first health check") {
		t.Fatalf("while the probe hangs: %+v", r)
	}
}

// A guest declared stopped is not probed: it stays Healthy.
func TestStoppedGuestIsNotProbed(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	manifest := strings.Replace(healthVM("off", 144, "  healthCheck: {tcp: {port: 9}, address: 127.0.76.10, interval: 5s, failureThreshold: 1}\n"),
		"state: running", "state: stopped", 1)
	repo.Commit("off", map[string]string{"off.yaml": manifest})
	e := newEnv(t, sim, repo, "").start()
	const key = "VirtualMachine/off"
	e.waitStatus(key, vocab.StatusSynced)
	for range 4 {
		e.clock.Advance(5 * time.Second)
	}
	e.refreshPasses(2)
	l, _ := e.c.Resources(t.Context())
	if r := find(l, key); r == nil || r.Health != vocab.HealthHealthy {
		t.Fatalf("stopped guest: %+v", r)
	}
	if got := healthEntries(e.history(key)); len(got) != 0 {
		t.Fatalf("health history of a stopped guest %q", got)
	}
}

// A health check removed from the manifest takes its verdict with it: the
// guest has the plan's health again.
func TestRemovedHealthCheckLeavesThePlansHealth(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "gone", map[string]string{"gone.yaml": healthVM("gone", 145,
		"  healthCheck: {tcp: {port: 9}, address: 127.0.77.10, interval: 5s, failureThreshold: 1}\n")})
	e := newEnv(t, sim, repo, "").start()
	const key = "VirtualMachine/gone"
	e.waitHealth(key, vocab.HealthDegraded, func(s api.ResourceSummary) bool { return s.Status == vocab.StatusSynced })
	repo.Commit("no check", map[string]string{"gone.yaml": healthVM("gone", 145, "")})
	if err := e.c.Refresh(t.Context()); err != nil {
		t.Fatal(err)
	}
	e.waitHealth(key, vocab.HealthHealthy, func(s api.ResourceSummary) bool { return !strings.Contains(s.Reason, "health check") })
}
