package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A failure Proxmox would answer alike to the same request (here a refused
// parameter, 400) is terminal: interval passes well past the backoff of a
// passing fault do not send it again; a manual sync of the resource, or a
// commit that changes what is to be done, does.
// A passing fault (a 500) is retried by the interval pass once its backoff
// is over, without anyone asking.
func TestTerminalFailureWaitsForAChangeAndRetryableOneIsRetriedWithBackoff(t *testing.T) {
	e := syncedVM(t, 0, "app", 300, 2)
	const key = "VirtualMachine/app"
	sim, repo := e.sim, e.repo
	const putConfig = "/nodes/{node}/qemu/{vmid}/config"
	puts := func() int64 { return sim.RequestCountFor("PUT", putConfig) }
	// intervals lets the fake clock pass n reconcile intervals, each
	// followed by its pass.
	intervals := func(n int) {
		for range n {
			e.clock.Advance(time.Minute)
			e.waitPasses(1)
		}
	}
	change := func(msg string, cores int) {
		repo.Commit(msg, map[string]string{"vms/app.yaml": vmManifest("app", 300, cores)})
		if err := e.c.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}

	sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/300/config",
		ParamErrors: map[string]string{"cores": "value may not be greater than 1"}})
	sim.ResetRequests()
	change("more cores", 4)
	sum := e.waitStatus(key, vocab.StatusFailed)
	if !strings.Contains(sum.Reason, "value may not be greater than 1") {
		t.Fatalf("reason %q", sum.Reason)
	}
	intervals(10) // far past the backoff of a passing fault (30 s, 1 min, 2 min, 4 min)
	if n := puts(); n != 1 {
		t.Fatalf("a terminal failure was sent %d times without a change", n)
	}
	l, _ := e.c.Resources(context.Background())
	if r := find(l, key); r == nil || r.Status != vocab.StatusFailed || !strings.Contains(r.Reason, "not retried until") {
		t.Fatalf("after the terminal failure: %+v", r)
	}
	if err := e.c.SyncOne(context.Background(), "VirtualMachine", "app"); err != nil {
		t.Fatal(err)
	}
	e.waitFor("cores 4 after a manual sync", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 300) == "4"
	})

	// A commit that changes what is to be done tries again at once.
	sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/300/config",
		ParamErrors: map[string]string{"cores": "value may not be greater than 4"}})
	change("five cores", 5)
	e.waitStatus(key, vocab.StatusFailed)
	change("three cores", 3)
	e.waitFor("cores 3 after the next commit", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 300) == "3"
	})

	sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/300/config"})
	sim.ResetRequests()
	change("even more cores", 6)
	e.waitStatus(key, vocab.StatusFailed)
	deadline := time.Now().Add(30 * time.Second)
	for guestCores(t, sim, 300) != "6" {
		if time.Now().After(deadline) {
			t.Fatalf("a passing fault was not retried; %d PUTs", puts())
		}
		intervals(1)
	}
	if n := puts(); n != 2 {
		t.Fatalf("%d PUTs for one passing fault and its retry", n)
	}
	e.waitStatus(key, vocab.StatusSynced)
}

// A retryable failure's backoff holds the same attempt only: a commit that
// changes what is to be done for the resource is tried at the next pass,
// however long the backoff had grown, and its own backoff starts over.
func TestANewCommitIsTriedAtOnceWhateverTheBackoffOfTheLastAttempt(t *testing.T) {
	e := syncedVM(t, 0, "app", 300, 2)
	const key = "VirtualMachine/app"
	sim, repo := e.sim, e.repo
	puts := func() int64 { return sim.RequestCountFor("PUT", "/nodes/{node}/qemu/{vmid}/config") }
	change := func(msg string, cores int) {
		repo.Commit(msg, map[string]string{"vms/app.yaml": vmManifest("app", 300, cores)})
		if err := e.c.Refresh(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	for range 3 {
		sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "PUT", Path: "/nodes/pve1/qemu/300/config"})
	}
	sim.ResetRequests()
	change("more cores", 4)
	e.waitStatus(key, vocab.StatusFailed)
	// Three failures in a row: the next retry is two intervals away.
	for i := 0; puts() < 3; i++ {
		if i == 10 {
			t.Fatalf("%d PUTs after 10 intervals, want the three failing ones", puts())
		}
		e.clock.Advance(time.Minute)
		e.waitPasses(1)
	}
	sum := e.waitStatus(key, vocab.StatusFailed)
	if !strings.Contains(sum.Reason, "injected error") || guestCores(t, sim, 300) != "2" {
		t.Fatalf("after three failures: %q, cores %s", sum.Reason, guestCores(t, sim, 300))
	}

	// The clock stands still: only the commit can make the next pass act.
	change("five cores", 5)
	e.waitFor("cores 5 at the pass after the commit", func(l api.ResourceList) bool {
		r := find(l, key)
		return r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 300) == "5"
	})
}

// Which plans a recorded failure holds until its retry time.
func TestAFailureHoldsTheSameAttemptOnly(t *testing.T) {
	act := func(to string) *engine.Action {
		return &engine.Action{Kind: "VirtualMachine", Name: "app", Action: vocab.ActionUpdate,
			Changes: []vocab.Change{{Field: "cores", From: "2", To: to}}}
	}
	retryable := record{Attempt: attemptOf("", act("4")), AttemptCommit: "c1"}
	terminal := record{Terminal: attemptOf("c1", act("4"))}
	tests := []struct {
		name   string
		rec    record
		commit string
		a      *engine.Action
		holds  bool
	}{
		{"a retryable failure, the same commit and plan", retryable, "c1", act("4"), true},
		{"a retryable failure, the same commit, another plan (partly applied)", retryable, "c1", act("5"), true},
		{"a retryable failure, a later commit planning the same", retryable, "c2", act("4"), true},
		{"a retryable failure, a later commit planning something else", retryable, "c2", act("5"), false},
		{"a terminal failure, the same attempt", terminal, "c1", act("4"), true},
		{"a terminal failure, another plan at the same commit", terminal, "c1", act("5"), false},
		{"a terminal failure, a later commit", terminal, "c2", act("4"), false},
		{"a record of an older build", record{}, "c2", act("5"), true},
	}
	for _, tt := range tests {
		if got := tt.rec.holds(tt.commit, tt.a); got != tt.holds {
			t.Errorf("%s: holds %v, want %v", tt.name, got, tt.holds)
		}
	}
}
