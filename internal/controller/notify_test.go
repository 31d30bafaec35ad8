package controller

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/notify"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// hookReceiver is a JSON webhook receiver on loopback that keeps every
// message it gets.
type hookReceiver struct {
	mu     sync.Mutex
	bodies []api.NotificationBody
}

func startHookReceiver(t *testing.T) (*hookReceiver, string) {
	h := &hookReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var body api.NotificationBody
		if err := json.Unmarshal(b, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.bodies = append(h.bodies, body)
		h.mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	return h, srv.URL
}

// events lists the events received for key, in order.
func (h *hookReceiver) events(key string) []api.Notice {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []api.Notice
	for _, b := range h.bodies {
		for _, e := range b.Events {
			if e.Kind+"/"+e.Name == key || key == "" && e.Kind == "" {
				out = append(out, e)
			}
		}
	}
	return out
}

func (h *hookReceiver) count(key string, ev api.NotificationEvent) int {
	n := 0
	for _, e := range h.events(key) {
		if e.Event == ev {
			n++
		}
	}
	return n
}

// withNotifier gives the controller a dispatcher for one receiver taking
// events on.
func withNotifier(t *testing.T, url string, on ...string) envOpt {
	d := notify.New([]config.Notification{{Name: "ops", URL: url, On: on}},
		notify.Options{Window: 20 * time.Millisecond, Backoff: 10 * time.Millisecond})
	t.Cleanup(d.Close)
	return func(o *Options) { o.Notifier = d }
}

func (e *env) failures(key string) int {
	e.c.mu.Lock()
	defer e.c.mu.Unlock()
	return e.c.records[key].Failures
}

func TestFailedResourceNotifiesOnceAcrossFailingAttempts(t *testing.T) {
	sim := startSim(t, 0)
	for range 3 {
		sim.FailNextTask("qmcreate")
	}
	repo := gittest.New(t)
	repo.Commit("web", map[string]string{"web.yaml": vmManifest("web", 120, 1)})
	hook, url := startHookReceiver(t)
	e := newEnv(t, sim, repo, "", withNotifier(t, url, "failed", "degraded", "synced")).start()
	const key = "VirtualMachine/web"

	// Three creates fail (the retries come as the clock passes their
	// backoff), the fourth makes the guest.
	for want := 1; want <= 3; want++ {
		testwait.For(t, "failed attempt", 30*time.Second, func() bool {
			if e.failures(key) >= want {
				return true
			}
			e.clock.Advance(10 * time.Second) // past the backoff; testwait polls again
			return false
		})
		e.waitStatus(key, vocab.StatusFailed)
	}
	testwait.For(t, "the failure's notification", 30*time.Second, func() bool { return hook.count(key, api.NotifyFailed) == 1 })
	defer func() {
		if t.Failed() {
			t.Logf("history %+v failures %d events %+v", e.history(key), e.failures(key), hook.events(key))
		}
	}()
	e.waitFor("the create", func(l api.ResourceList) bool {
		if r := find(l, key); r != nil && r.Status == vocab.StatusSynced {
			return true
		}
		e.clock.Advance(10 * time.Second)
		return false
	})
	testwait.For(t, "the recovery's notification", 30*time.Second, func() bool { return hook.count(key, api.NotifySynced) == 1 })

	got := hook.events(key)
	if n := hook.count(key, api.NotifyFailed); n != 1 {
		t.Errorf("failed notifications = %d across 3 failed attempts, want 1: %+v", n, got)
	}
	if n := hook.count(key, api.NotifyDegraded); n != 1 {
		t.Errorf("degraded notifications = %d, want 1: %+v", n, got)
	}
	f := got[0]
	if f.Event != api.NotifyFailed && f.Event != api.NotifyDegraded || f.Cluster != "default" || f.Revision == "" || !strings.Contains(f.Message, "create failed") {
		t.Errorf("first notice = %+v", f)
	}
}

// stoppedOwnedVM is a guest proxmops made, stopped by someone.
func stoppedOwnedVM(vmid int, name string) pvesim.GuestSpec {
	return pvesim.GuestSpec{VMID: vmid, Node: "pve1", Running: false, Config: map[string]string{
		"name": name, "cores": "1", "memory": "1024", "tags": "managed-by-proxmops",
		"scsi0": "local-lvm:vm-" + itoa(vmid) + "-disk-0,size=4G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}
}

func TestDegradedResourceNotifiesOnceUntilHealthyAgain(t *testing.T) {
	sim := startSim(t, 0, stoppedOwnedVM(130, "db"))
	repo := gittest.New(t)
	repo.Commit("db", map[string]string{"db.yaml": vmManifest("db", 130, 1)})
	hook, url := startHookReceiver(t)
	e := newEnv(t, sim, repo, "", withNotifier(t, url, "degraded"), func(o *Options) { o.Config.Reconcile.AutoSync = false }).start()
	const key = "VirtualMachine/db"
	e.waitFor("db degraded", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Health == vocab.HealthDegraded
	})
	e.refreshPasses(3)
	testwait.For(t, "the notification", 30*time.Second, func() bool { return hook.count(key, api.NotifyDegraded) >= 1 })
	e.refreshPasses(2)
	if n := hook.count(key, api.NotifyDegraded); n != 1 {
		t.Fatalf("degraded notifications = %d after several passes, want 1: %+v", n, hook.events(key))
	}

	// Started by hand it is healthy; stopped again it is a new transition.
	if _, err := e.c.Sync(t.Context(), "VirtualMachine", "db", api.SyncOptions{}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("db healthy", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Health == vocab.HealthHealthy
	})
	if err := sim.SetGuestRunning(130, false); err != nil {
		t.Fatal(err)
	}
	e.refreshPasses(1)
	e.waitFor("db degraded again", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Health == vocab.HealthDegraded
	})
	testwait.For(t, "the second notification", 30*time.Second, func() bool { return hook.count(key, api.NotifyDegraded) == 2 })
}

// refreshPasses runs n passes that only read (a refresh acts only as
// reconcile.autoSync says), waiting for each.
func (e *env) refreshPasses(n int) { e.passesAfter(n, e.c.Refresh) }

// passesAfter calls start n times, each time waiting for the pass it asks for.
func (e *env) passesAfter(n int, start func(context.Context) error) {
	e.t.Helper()
	sub, _, _ := e.hub.Subscribe("")
	defer e.hub.Unsubscribe(sub)
	timeout := time.After(30 * time.Second)
	for range n {
		if err := start(context.Background()); err != nil {
			e.t.Fatal(err)
		}
		nextOn(e.t, sub.C, timeout, "event subscription lagged", "timed out waiting for a pass",
			func(ev eventsEvent) bool { return ev.Type == api.SSEPass })
	}
}

func TestConflictAndSourceErrorNotifyOnceEach(t *testing.T) {
	sim := startSim(t, 0, pvesimGuest(140, "theirs"))
	repo := gittest.New(t)
	repo.Commit("mine", map[string]string{"mine.yaml": vmManifest("mine", 140, 1)})
	hook, url := startHookReceiver(t)
	e := newEnv(t, sim, repo, "", withNotifier(t, url, "conflict", "failed", "source-error")).start()
	const key = "VirtualMachine/mine"
	e.waitStatus(key, vocab.StatusConflict)
	e.refreshPasses(2)
	repo.Commit("broken", map[string]string{"broken.yaml": "kind: Nope\n"})
	e.refreshPasses(3)
	testwait.For(t, "the notifications", 30*time.Second, func() bool {
		return hook.count(key, api.NotifyConflict) == 1 && hook.count("", api.NotifySourceError) == 1
	})
	e.refreshPasses(1)
	if n := hook.count(key, api.NotifyConflict) + hook.count(key, api.NotifyFailed); n != 1 {
		t.Errorf("conflict notifications = %d, want 1 (never also a failure): %+v", n, hook.events(key))
	}
	src := hook.events("")
	if len(src) != 1 || src[0].Event != api.NotifySourceError || !strings.Contains(src[0].Message, "are invalid") {
		t.Errorf("source notifications = %+v", src)
	}
}
