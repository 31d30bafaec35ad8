package controller

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/vocab"
)

func TestLoopFollowsGitCommitsAndForcePushes(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	c1 := repo.Commit("add app", map[string]string{"vms/app.yaml": vmManifest("app", 300, 2)})
	e := newEnv(t, sim, repo, "").start()

	e.waitStatus("VirtualMachine/app", vocab.StatusSynced)
	if got := guestCores(t, sim, 300); got != "2" {
		t.Fatalf("cores on the cluster = %q, want 2", got)
	}
	list, _ := e.c.Resources(context.Background())
	if list.Revision != c1.String() || list.RevisionMessage != "add app" {
		t.Errorf("revision %q %q, want %s", list.Revision, list.RevisionMessage, c1)
	}

	// A commit changing the manifest reaches the cluster after a refresh.
	c2 := repo.Commit("more cores", map[string]string{"vms/app.yaml": vmManifest("app", 300, 4)})
	if err := e.c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("cores 4 applied", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/app")
		return l.Revision == c2.String() && r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 300) == "4"
	})

	// A force push back to the first commit is followed too.
	repo.ResetHard(c1)
	if err := e.c.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitFor("force push followed", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/app")
		return l.Revision == c1.String() && r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 300) == "2"
	})

	got := events_(e.history("VirtualMachine/app"))
	for _, want := range []api.HistoryEvent{api.EventCreated, api.EventDrifted, api.EventApplied} {
		if !slices.Contains(got, want) {
			t.Errorf("history %v lacks %s", got, want)
		}
	}
	if got[0] != api.EventCreated {
		t.Errorf("first history event %s, want created", got[0])
	}
	for _, h := range e.history("VirtualMachine/app") {
		if h.Commit == "" {
			t.Errorf("history entry without commit: %+v", h)
		}
	}
}

func TestDeletedManifestWithoutAndWithPrune(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "two vms", map[string]string{
		"vms/a.yaml": vmManifest("a", 310, 1),
		"vms/b.yaml": vmManifest("b", 311, 1),
	})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e.waitStatus("VirtualMachine/b", vocab.StatusSynced)

	// Without prune, a removed manifest leaves its VM alone, OutOfSync.
	repo.Commit("drop b", map[string]string{"vms/b.yaml": ""})
	e.c.Refresh(context.Background())
	r := e.waitStatus("VirtualMachine/b", vocab.StatusOutOfSync)
	if !strings.Contains(r.Reason, "prune is off") {
		t.Errorf("reason %q", r.Reason)
	}
	wantGuest(t, sim, 311, "VM b was deleted without prune")

	// With prune, it is deleted, and the history says so.
	v := values(sim, repo.URL(), e.dir)
	v.Reconcile.Prune = true
	e.c.ApplyConfig(v)
	e.waitFor("b pruned", func(l api.ResourceList) bool {
		_, exists := sim.Guest(311)
		return find(l, "VirtualMachine/b") == nil && !exists
	})
	h := events_(e.history("VirtualMachine/b"))
	if h[len(h)-1] != api.EventDeleted {
		t.Errorf("history of b %v, want it to end with deleted", h)
	}
	wantGuest(t, sim, 310, "VM a was deleted")
}

func TestNoPruneFromEmptyOrFailedLoad(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "one vm", map[string]string{"vms/a.yaml": vmManifest("a", 320, 1)})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.Config.Reconcile.Prune = true }).start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)

	// An empty load never prunes.
	repo.Commit("oops, everything gone", map[string]string{"vms/a.yaml": ""})
	e.c.Refresh(context.Background())
	l := e.waitFor("empty load reported", func(l api.ResourceList) bool {
		return strings.Contains(l.SourceError, "no manifests")
	})
	if _, ok := sim.Guest(320); !ok {
		t.Fatalf("VM pruned from an empty load: %s", dump(l))
	}
	// Its reason names the guard, not "prune is off".
	l = e.waitFor("the guard named in the reason", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && strings.Contains(r.Reason, "nothing is pruned from an empty load")
	})
	if r := find(l, "VirtualMachine/a"); r.Status != vocab.StatusOutOfSync || strings.Contains(r.Reason, "prune is off") {
		t.Fatalf("orphan after an empty load with prune on: %+v", r)
	}

	// Invalid manifests keep the last good desired state, and never prune.
	repo.Commit("broken", map[string]string{"vms/a.yaml": "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: a}\nspec: {coers: 2}\n"})
	e.c.Refresh(context.Background())
	e.waitFor("invalid manifests reported", func(l api.ResourceList) bool {
		return l.LoadError != nil && len(l.LoadError.Errors) > 0
	})

	// An unreachable repository keeps the last good desired state too.
	v := values(sim, "file://"+t.TempDir()+"/missing", e.dir)
	v.Reconcile.Prune = true
	e.c.ApplyConfig(v)
	l = e.waitFor("source error reported", func(l api.ResourceList) bool {
		return strings.Contains(l.SourceError, "git:")
	})
	if _, ok := sim.Guest(320); !ok {
		t.Fatalf("VM pruned after a failed load: %s", dump(l))
	}
	if len(l.Resources) == 0 {
		t.Fatal("resources vanished from the status after a failed load")
	}
}
