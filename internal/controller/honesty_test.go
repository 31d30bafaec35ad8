package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// summaryWatch collects every resource summary the controller publishes.
type summaryWatch struct {
	mu   sync.Mutex
	seen []api.ResourceSummary
	stop func()
}

func watchSummaries(e *env) *summaryWatch {
	w := &summaryWatch{}
	sub, _, _ := e.hub.Subscribe("")
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range sub.C {
			if ev.Type != api.SSEResource {
				continue
			}
			var s api.ResourceSummary
			if json.Unmarshal(ev.Data, &s) == nil {
				w.mu.Lock()
				w.seen = append(w.seen, s)
				w.mu.Unlock()
			}
		}
	}()
	w.stop = func() { e.hub.Unsubscribe(sub); <-done }
	return w
}

// contradictions lists summaries whose status, action and reason disagree.
func (w *summaryWatch) contradictions() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var bad []string
	for _, s := range w.seen {
		switch {
		case s.Status == vocab.StatusSynced && s.Action != vocab.ActionNone:
			bad = append(bad, fmt.Sprintf("%s/%s Synced with action %s (%s)", s.Kind, s.Name, s.Action, s.Reason))
		case s.Action != vocab.ActionNone && s.Reason == "in sync":
			bad = append(bad, fmt.Sprintf("%s/%s %s: in sync", s.Kind, s.Name, s.Action))
		case s.Action == vocab.ActionNone && strings.Contains(s.Reason, "does not exist"):
			bad = append(bad, fmt.Sprintf("%s/%s %s none: %s", s.Kind, s.Name, s.Status, s.Reason))
		}
	}
	return bad
}

// While a create runs, passes see the guest locked and plan no action:
// the summary keeps the action that runs and its reason, and never shows
// "none" with the create's reason.
func TestRunningActionKeepsItsActionAndReason(t *testing.T) {
	// the create runs long enough for passes to see its lock
	sim, repo := simWithRepo(t, 0.5, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 430, 1)})
	e := newEnv(t, sim, repo, "")
	w := watchSummaries(e)
	e.start()
	e.waitFor("create running", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Progress != nil && r.Progress.Task != ""
	})
	// Passes while the create runs: each one ends before the next is asked
	// for, and at least one must see the create still running, or the
	// summaries below were never put to the test.
	during := 0
	for range 5 {
		e.waitPasses(1)
		l, _ := e.c.Resources(context.Background())
		if r := find(l, "VirtualMachine/a"); r != nil && r.Progress != nil && r.Progress.Task != "" {
			during++
		}
	}
	if during == 0 {
		t.Fatal("no pass ran while the create did")
	}
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	w.stop()
	if bad := w.contradictions(); len(bad) > 0 {
		t.Fatalf("summaries contradict themselves:\n%s", strings.Join(bad, "\n"))
	}
	if h := events_(e.history("VirtualMachine/a")); len(h) == 0 || h[0] != api.EventCreated {
		t.Fatalf("history of a new VM: %v", h)
	}
}

// A deletion by hand shows as a delete with its own reason, then as done
// with no action left, never "delete: in sync".
func TestDeleteByHandIsShownAsADelete(t *testing.T) {
	sim, repo := simWithRepo(t, 0.2, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 431, 1, "proxmops.dev/sync=manual")})
	e := newEnv(t, sim, repo, "")
	w := watchSummaries(e)
	e.start()
	e.waitStatus("VirtualMachine/a", vocab.StatusOutOfSync)
	e.syncCreated("a")
	if err := e.c.Delete(context.Background(), "VirtualMachine", "a"); err != nil {
		t.Fatal(err)
	}
	l, _ := e.c.Resources(context.Background())
	if r := find(l, "VirtualMachine/a"); r == nil || r.Action != vocab.ActionDelete || !strings.Contains(r.Reason, "deletion requested") {
		t.Fatalf("summary right after the delete request: %+v", r)
	}
	e.waitFor("deleted", func(api.ResourceList) bool {
		return containsEvent(events_(e.history("VirtualMachine/a")), api.EventDeleted)
	})
	w.stop()
	if bad := w.contradictions(); len(bad) > 0 {
		t.Fatalf("summaries contradict themselves:\n%s", strings.Join(bad, "\n"))
	}
	if h := events_(e.history("VirtualMachine/a")); h[0] != api.EventCreated {
		t.Fatalf("history %v: a VM created by hand starts with created", h)
	}
}

// Resources whose create waits (the queue is full) have not drifted: each
// history starts with "created".
func TestNewResourcesHistoryStartsWithCreated(t *testing.T) {
	sim, repo := simWithRepo(t, 0.1, "vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 432, 1),
		"vms/b.yaml": vmManifest("b", 433, 1),
		"vms/c.yaml": vmManifest("c", 434, 1),
	})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.QueueLimit = 1 }).start()
	for _, k := range []string{"VirtualMachine/a", "VirtualMachine/b", "VirtualMachine/c"} {
		e.waitStatus(k, vocab.StatusSynced)
	}
	for _, k := range []string{"VirtualMachine/a", "VirtualMachine/b", "VirtualMachine/c"} {
		h := e.history(k)
		if len(h) == 0 || h[0].Event != api.EventCreated {
			t.Errorf("%s history %+v: want created first", k, h)
		}
		e.wantNoEvent(k, api.EventDrifted, "a new resource drifted")
	}
}

// A daemon killed while one action runs and others wait for a slot
// records only the running one as interrupted; the queued ones changed
// nothing and leave no failure in their history.
func TestKillRecordsOnlyStartedActionsAsInterrupted(t *testing.T) {
	sim, repo := simWithRepo(t, 0.5, "vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 435, 1),
		"vms/b.yaml": vmManifest("b", 436, 1),
		"vms/c.yaml": vmManifest("c", 437, 1),
	})
	dir := t.TempDir()
	oneAtATime := func(o *Options) { o.Config.Reconcile.Concurrency = 1 }
	e1 := newEnv(t, sim, repo, dir, oneAtATime).start()
	var running string
	e1.waitFor("one create running, two queued", func(l api.ResourceList) bool {
		n := 0
		for _, r := range l.Resources {
			if r.Status == vocab.StatusProgressing {
				n++
			}
			if r.Progress != nil && r.Progress.Task != "" {
				running = r.Kind + "/" + r.Name
			}
		}
		return n == 3 && running != ""
	})
	// The process dies: nothing it does from now on reaches the database.
	e1.kill()

	e2 := newEnv(t, sim, repo, dir, oneAtATime).start()
	e2.waitInterruptedRecorded(running)
	for _, k := range []string{"VirtualMachine/a", "VirtualMachine/b", "VirtualMachine/c"} {
		e2.waitStatus(k, vocab.StatusSynced)
	}
	for _, k := range []string{"VirtualMachine/a", "VirtualMachine/b", "VirtualMachine/c"} {
		if k == running {
			continue
		}
		e2.wantNoEvent(k, api.EventFailed, "never started but its history says")
	}
}

// A graceful stop that outlasts its grace period interrupts the running
// action only; the queued ones are dropped without a failure.
func TestGracefulStopDropsQueuedActionsSilently(t *testing.T) {
	sim, repo := simWithRepo(t, 2, "vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 438, 1),
		"vms/b.yaml": vmManifest("b", 439, 1),
	})
	e := newEnv(t, sim, repo, "", func(o *Options) {
		o.Config.Reconcile.Concurrency, o.ShutdownGrace = 1, 50*time.Millisecond
	}).start()
	var running, queued string
	e.waitFor("one create running, one queued", func(l api.ResourceList) bool {
		running, queued = "", ""
		for _, r := range l.Resources {
			switch {
			case r.Progress != nil && r.Progress.Task != "":
				running = r.Kind + "/" + r.Name
			case r.Status == vocab.StatusProgressing:
				queued = r.Kind + "/" + r.Name
			}
		}
		return running != "" && queued != ""
	})
	e.stopMidAction(running)
	if h := e.history(queued); len(h) != 0 {
		t.Fatalf("history of an action that never started: %+v", h)
	}
	e.closeWithNothingInFlight()
}

// TestRunningSummaryNeverContradictsThePlan: while a resource's job is in
// the dispatcher, its summary says what runs; once finish recorded the
// outcome (the job still leaving the dispatcher) the plan's view stands.
func TestRunningSummaryNeverContradictsThePlan(t *testing.T) {
	inSync := api.ResourceSummary{Status: vocab.StatusSynced, Health: vocab.HealthHealthy, Action: vocab.ActionNone, Reason: "in sync"}
	created := api.ResourceSummary{Status: vocab.StatusSynced, Health: vocab.HealthHealthy, Action: vocab.ActionNone, Reason: "create done; confirmed by the next scan"}
	creating := api.ResourceSummary{Status: vocab.StatusProgressing, Health: vocab.HealthProgressing, Action: vocab.ActionCreate, Reason: "the VM does not exist"}
	queued := inflightAction{Action: vocab.ActionUpdate, Commit: "c1", Started: time.Unix(1, 0), Queued: true}
	for _, tc := range []struct {
		name       string
		plan, prev api.ResourceSummary
		in         inflightAction
		want       api.ResourceSummary
	}{
		{"a finished action leaving the dispatcher shows the plan's view", inSync, created, inflightAction{}, inSync},
		{"a finished action whose outcome is being saved shows the plan's view", inSync, created,
			inflightAction{Action: vocab.ActionCreate, Started: time.Unix(1, 0), Done: true, Record: &record{Status: vocab.StatusSynced}}, inSync},
		{"a running create keeps its action and reason", inSync, creating, inflightAction{Action: vocab.ActionCreate, Started: time.Unix(1, 0)},
			api.ResourceSummary{Status: vocab.StatusProgressing, Health: vocab.HealthProgressing, Action: vocab.ActionCreate, Reason: "the VM does not exist"}},
		{"a queued action the plan no longer sees is named as in progress", inSync, created, queued,
			api.ResourceSummary{Status: vocab.StatusProgressing, Health: vocab.HealthProgressing, Action: vocab.ActionUpdate, Reason: "update in progress", Changes: []vocab.Change{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := runningSummary(tc.plan, tc.prev, tc.in)
			if got.Status != tc.want.Status || got.Action != tc.want.Action || got.Reason != tc.want.Reason || got.Health != tc.want.Health {
				t.Errorf("got %s/%s action %s reason %q, want %s/%s action %s reason %q",
					got.Status, got.Health, got.Action, got.Reason, tc.want.Status, tc.want.Health, tc.want.Action, tc.want.Reason)
			}
			if got.Status == vocab.StatusProgressing && got.Action == vocab.ActionNone {
				t.Errorf("Progressing with nothing to do: %q", got.Reason)
			}
		})
	}
}
