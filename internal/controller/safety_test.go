package controller

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
)

func TestDetectOnlyAndDryRunTouchNothing(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*Options)
	}{
		{"autoSync false", func(o *Options) { o.Config.Reconcile.AutoSync = false }},
		{"dryRun", func(o *Options) { o.Config.Reconcile.DryRun = true }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := startSim(t, 0)
			repo := gittest.New(t)
			repo.Commit("vm", map[string]string{"vms/a.yaml": vmManifest("a", 330, 2)})
			sim.ResetRequests()
			e := newEnv(t, sim, repo, "", tc.mod).start()
			r := e.waitStatus("VirtualMachine/a", vocab.StatusOutOfSync)
			if r.Action != vocab.ActionCreate {
				t.Errorf("action %s, want create", r.Action)
			}
			// More passes, including a refresh: still nothing written.
			for range 3 {
				e.c.Refresh(context.Background())
				e.waitFor("a pass", func(l api.ResourceList) bool { return l.LastPass != nil })
			}
			time.Sleep(50 * time.Millisecond)
			if n := writes(sim); n != 0 {
				t.Fatalf("%d POST/PUT/DELETE requests reached the cluster: %+v", n, sim.Requests())
			}
			// Nothing happened to it yet: a resource never on the cluster has
			// not drifted (its status says it is missing); its history starts
			// when it is created.
			if got := events_(e.history("VirtualMachine/a")); len(got) != 0 {
				t.Errorf("history %v, want none before the create", got)
			}
		})
	}
}

func TestSyncAllAppliesInDetectOnlyMode(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 331, 2)})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.Config.Reconcile.AutoSync = false }).start()
	e.waitStatus("VirtualMachine/a", vocab.StatusOutOfSync)
	if err := e.c.SyncAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	wantGuest(t, sim, 331, "sync all did not create the VM")
}

func TestDryRunRefusesActions(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vm", map[string]string{"vms/a.yaml": vmManifest("a", 332, 2)})
	e := newEnv(t, sim, repo, "", func(o *Options) { o.Config.Reconcile.DryRun = true }).start()
	e.waitStatus("VirtualMachine/a", vocab.StatusOutOfSync)
	for name, err := range map[string]error{
		"SyncAll": e.c.SyncAll(context.Background()),
		"SyncOne": e.c.SyncOne(context.Background(), "VirtualMachine", "a"),
	} {
		if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "dry-run") {
			t.Errorf("%s in dry-run mode: %v", name, err)
		}
	}
}

func TestSyncAnnotations(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vms", map[string]string{
		"vms/auto.yaml":     vmManifest("auto", 340, 1),
		"vms/manual.yaml":   vmManifest("manual", 341, 1, "proxmops.dev/sync=manual"),
		"vms/disabled.yaml": vmManifest("disabled", 342, 1, "proxmops.dev/sync=disabled"),
	})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/auto", vocab.StatusSynced)
	m := e.waitStatus("VirtualMachine/manual", vocab.StatusOutOfSync)
	if m.SyncPolicy != vocab.SyncManual {
		t.Errorf("sync policy %q", m.SyncPolicy)
	}
	d := e.waitStatus("VirtualMachine/disabled", vocab.StatusUnknown)
	if d.SyncPolicy != vocab.SyncDisabled {
		t.Errorf("sync policy %q", d.SyncPolicy)
	}
	if _, ok := sim.Guest(341); ok {
		t.Fatal("a manual resource was applied automatically")
	}
	if _, ok := sim.Guest(342); ok {
		t.Fatal("a disabled resource was applied")
	}
	if err := e.c.SyncOne(context.Background(), "VirtualMachine", "disabled"); !errors.Is(err, api.ErrConflict) {
		t.Errorf("sync one of a disabled resource: %v", err)
	}
	// A person syncing the manual resource applies it.
	if err := e.c.SyncOne(context.Background(), "VirtualMachine", "manual"); err != nil {
		t.Fatal(err)
	}
	e.waitStatus("VirtualMachine/manual", vocab.StatusSynced)
	wantGuest(t, sim, 341, "sync one did not apply the manual resource")
	if err := e.c.SyncOne(context.Background(), "VirtualMachine", "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Errorf("sync one of an unknown resource: %v", err)
	}
}

func TestDeleteChecksOwnership(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vms", map[string]string{
		"vms/mine.yaml":  vmManifest("mine", 350, 1, "proxmops.dev/sync=manual"),
		"vms/taken.yaml": vmManifest("taken", 351, 1),
	})
	// VMID 351 is held by a guest proxmops does not own.
	simtest.AddGuests(t, sim, pvesimGuest(351, "someone-elses"))
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/mine", vocab.StatusOutOfSync)
	e.syncCreated("mine")
	e.waitStatus("VirtualMachine/taken", vocab.StatusConflict)

	if err := e.c.Delete(context.Background(), "VirtualMachine", "taken"); !errors.Is(err, api.ErrNotOwned) {
		t.Fatalf("delete of an unowned guest: %v", err)
	}
	if err := e.c.Delete(context.Background(), "VirtualMachine", "ghost"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("delete of an unknown resource: %v", err)
	}
	if err := e.c.Delete(context.Background(), "VirtualMachine", "mine"); err != nil {
		t.Fatal(err)
	}
	e.waitFor("mine deleted and recorded", func(api.ResourceList) bool {
		_, ok := sim.Guest(350)
		return !ok && containsEvent(events_(e.history("VirtualMachine/mine")), api.EventDeleted)
	})
	wantGuest(t, sim, 351, "the unowned guest was deleted")
	// Its manifest (sync: manual) is still there: reported missing, not re-created.
	e.waitFor("mine reported missing", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/mine")
		return r != nil && r.Status == vocab.StatusOutOfSync && r.Action == vocab.ActionCreate
	})
}

func containsEvent(h []api.HistoryEvent, ev api.HistoryEvent) bool {
	for _, x := range h {
		if x == ev {
			return true
		}
	}
	return false
}
