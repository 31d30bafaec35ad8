package controller

import (
	"context"
	"errors"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// A pinned older commit is what the cluster converges to, across a
// restart too; unpinning brings the branch head back.
func TestPinnedRevisionIsAppliedUntilUnpinned(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	old := repo.Commit("two cores", map[string]string{"vms/a.yaml": vmManifest("a", 370, 2)})
	head := repo.Commit("three cores", map[string]string{"vms/a.yaml": vmManifest("a", 370, 3)})
	dir := t.TempDir()
	e := newEnv(t, sim, repo, dir).start()
	e.waitFor("head applied", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return l.Revision == head.String() && r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 370) == "3"
	})

	ctx := context.Background()
	// The pass record is written at the end of a pass: the one after the
	// create finished counts the VM Synced.
	var revs api.RevisionList
	e.waitFor("a pass counting the VM synced", func(api.ResourceList) bool {
		var err error
		if revs, err = e.c.Revisions(ctx); err != nil {
			t.Fatal(err)
		}
		return len(revs.Revisions) > 0 && revs.Revisions[0].Result != nil && revs.Revisions[0].Result.Counts[vocab.StatusSynced] == 1
	})
	if len(revs.Revisions) != 2 || revs.Revisions[0].Hash != head.String() || revs.Revisions[1].Hash != old.String() {
		t.Fatalf("revisions = %+v, want head then the older commit", revs.Revisions)
	}
	if top := revs.Revisions[0]; !top.Current || top.Message != "three cores" || top.Author == "" || top.Result == nil ||
		top.Result.Counts[vocab.StatusSynced] != 1 || top.Result.Events[api.EventCreated] != 1 {
		t.Fatalf("head revision = %+v (result %+v), want current, its message, author and the pass result", top, top.Result)
	}
	if revs.Revisions[1].Result != nil || revs.Revisions[1].Current {
		t.Fatalf("the older commit never ran: %+v", revs.Revisions[1])
	}

	if _, err := e.c.Pin(ctx, "", "alice"); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("empty pin: err = %v, want invalid", err)
	}
	if _, err := e.c.Pin(ctx, "0123456789abcdef0123456789abcdef01234567", "alice"); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("pin of a missing commit: err = %v, want invalid", err)
	}
	p, err := e.c.Pin(ctx, old.String()[:7], "alice")
	if err != nil {
		t.Fatal(err)
	}
	if p.Revision != old.String() || p.By != "alice" || p.Message != "two cores" {
		t.Fatalf("pin = %+v, want the full hash of the older commit", p)
	}
	e.waitFor("pinned commit applied", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return l.Revision == old.String() && l.Pinned != nil && r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 370) == "2"
	})
	e.stop()

	// The pin survives a restart: the head is not applied.
	e2 := newEnv(t, sim, repo, dir).start()
	l := e2.waitFor("first pass after restart", func(l api.ResourceList) bool { return l.LastPass != nil })
	if l.Revision != old.String() || l.Pinned == nil || l.Pinned.Revision != old.String() {
		t.Fatalf("after a restart revision=%s pinned=%+v, want the pin kept", short(l.Revision), l.Pinned)
	}
	if got := guestCores(t, sim, 370); got != "2" {
		t.Fatalf("cores after restart = %s, want the pinned 2", got)
	}
	revs, err = e2.c.Revisions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if revs.Pinned == nil || !revs.Revisions[1].Pinned || !revs.Revisions[1].Current || revs.Revisions[1].Result == nil {
		t.Fatalf("revisions while pinned = %+v", revs)
	}

	if err := e2.c.Unpin(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	if err := e2.c.Unpin(ctx, "alice"); !errors.Is(err, api.ErrConflict) {
		t.Fatalf("second unpin: err = %v, want conflict", err)
	}
	e2.waitFor("head applied again", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return l.Revision == head.String() && l.Pinned == nil && r != nil && r.Status == vocab.StatusSynced && guestCores(t, sim, 370) == "3"
	})
	if hs := e2.c.sortedRevisionHashes(); len(hs) != 2 {
		t.Fatalf("pass records for %d commits, want both", len(hs))
	}
}

// A commit whose manifests do not load cannot be pinned.
func TestPinRefusesInvalidManifests(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	bad := repo.Commit("broken", map[string]string{"vms/a.yaml": "kind: VirtualMachine\nmetadata: [\n"})
	repo.Commit("fixed", map[string]string{"vms/a.yaml": vmManifest("a", 371, 2)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	if _, err := e.c.Pin(context.Background(), bad.String(), "alice"); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("pin of a broken commit: err = %v, want invalid", err)
	}
	if l, _ := e.c.Resources(context.Background()); l.Pinned != nil {
		t.Fatalf("pinned = %+v after a refused pin", l.Pinned)
	}
}
