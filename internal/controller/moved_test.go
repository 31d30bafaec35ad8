package controller

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestAGuestMovedUnderTheDaemonIsNamedAndLeftThere migrates a VM the
// daemon made to another node while the daemon runs: the status, the plan
// and the history say where it is and what the manifest says, it counts
// as in sync, and the daemon neither creates it again nor moves it back.
func TestAGuestMovedUnderTheDaemonIsNamedAndLeftThere(t *testing.T) {
	e := syncedVM(t, 0, "a", 380, 2)
	sim := e.sim

	ctx := context.Background()
	hand := simClient(t, sim)
	var upid string
	if err := hand.Post(ctx, "/nodes/pve1/qemu/380/migrate", pve.NewParams().Set("target", "pve2").Set("online", "1").Set("with-local-disks", "1"), &upid); err != nil {
		t.Fatal(err)
	}
	if st, err := hand.WaitTask(ctx, upid, nil); err != nil || st.ExitStatus != "OK" {
		t.Fatalf("migration: %v %q", err, st.ExitStatus)
	}
	sim.ResetRequests()

	const note = "running on pve2; the manifest says pve1: moved by HA or a migration, left where it is"
	e.c.Refresh(ctx)
	list := e.waitFor("the move seen", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Node == "pve2"
	})
	r := find(list, "VirtualMachine/a")
	if r.Status != vocab.StatusSynced || r.ManifestNode != "pve1" || !strings.Contains(r.Reason, note) {
		t.Errorf("status: %s, manifestNode %q, reason %q; want Synced, pve1 and %q", r.Status, r.ManifestNode, r.Reason, note)
	}
	if list.Counts[vocab.StatusSynced] != 1 {
		t.Errorf("counts %v: the moved guest is not counted in sync", list.Counts)
	}
	e.waitFor("moved in the history", func(api.ResourceList) bool {
		return containsEvent(events_(e.history("VirtualMachine/a")), api.EventMoved)
	})

	p, err := e.c.Plan(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if a.Name == "a" && (a.Node != "pve2" || a.ManifestNode != "pve1" || a.Action != vocab.ActionNone || !strings.Contains(a.Reason, note)) {
			t.Errorf("plan: %+v", a)
		}
	}

	// Another pass writes nothing more and changes nothing.
	before := len(e.history("VirtualMachine/a"))
	e.clock.Advance(time.Second) // the pass is told by its time
	e.c.Refresh(ctx)
	e.waitFor("a second pass", func(l api.ResourceList) bool { return l.LastPass != nil && l.LastPass.After(*list.LastPass) })
	h := e.history("VirtualMachine/a")
	if len(h) != before {
		t.Errorf("history grew on a quiet pass: %v", events_(h))
	}
	moved := 0
	for _, en := range h {
		if en.Event == api.EventMoved {
			moved++
			if en.Message != note {
				t.Errorf("moved entry %q, want %q", en.Message, note)
			}
		}
	}
	if moved != 1 {
		t.Errorf("%d moved entries: %v", moved, events_(h))
	}
	if w := writes(sim); w != 0 {
		t.Errorf("the daemon sent %d writes after the move (a create on pve1, a move back?): %v", w, writeRequests(sim))
	}
	if g, _ := sim.Guest(380); g.Node != "pve2" || !g.Running {
		t.Errorf("VM 380 on %s, running %v", g.Node, g.Running)
	}
}
