package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// pendingVM is vmManifest without applyMode: a change that needs a reboot
// waits as a pending change.
func pendingVM(name string, vmid, cores int) string {
	return strings.Replace(vmManifest(name, vmid, cores), "  applyMode: reboot\n", "", 1)
}

func TestSyncOptionsRebootPruneAndDryRunApplyToThatSyncOnly(t *testing.T) {
	sim, repo := simWithRepo(t, 0, "vms", map[string]string{"vms/a.yaml": pendingVM("a", 370, 2), "vms/b.yaml": pendingVM("b", 371, 1)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/a", vocab.StatusSynced)
	e.waitStatus("VirtualMachine/b", vocab.StatusSynced)
	ctx := context.Background()

	// More cores for a running VM: written as pending, waiting for a reboot.
	repo.Commit("a: 3 cores; b goes", map[string]string{"vms/a.yaml": pendingVM("a", 370, 3), "vms/b.yaml": ""})
	e.c.Refresh(ctx)
	e.waitFor("a's change pending", func(api.ResourceList) bool {
		g, _ := sim.Guest(370)
		return g.Pending["cores"] == "3"
	})

	// A dry run of a sync with prune and reboot plans both and changes nothing.
	before := writes(sim)
	plan, err := e.c.Sync(ctx, "", "", api.SyncOptions{DryRun: true, Prune: true, Reboot: true})
	if err != nil {
		t.Fatal(err)
	}
	acts := map[string]vocab.Action{}
	for _, a := range plan.Actions {
		acts[a.Kind+"/"+a.Name] = a.Action
	}
	if acts["VirtualMachine/b"] != vocab.ActionDelete || acts["VirtualMachine/a"] == vocab.ActionNone || plan.Summary.Delete != 1 {
		t.Fatalf("dry-run plan: %+v", plan)
	}
	one, err := e.c.Sync(ctx, "VirtualMachine", "a", api.SyncOptions{DryRun: true})
	if err != nil || len(one.Actions) != 1 || one.Actions[0].Name != "a" {
		t.Fatalf("dry run of one: %+v, %v", one, err)
	}
	if writes(sim) != before {
		t.Fatal("a dry run wrote to the cluster")
	}
	wantGuest(t, sim, 371, "b is gone after a dry run")

	// Reboot for this sync of a: the pending change is applied by a reboot.
	if _, err := e.c.Sync(ctx, "VirtualMachine", "a", api.SyncOptions{Reboot: true}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("a rebooted into 3 cores", func(api.ResourceList) bool {
		g, _ := sim.Guest(370)
		return g.Config["cores"] == "3" && len(g.Pending) == 0 && g.Running
	})
	// Reconcile.prune is off and that sync asked for no prune: b is still there.
	wantGuest(t, sim, 371, "b was pruned by a sync that did not ask for it")

	// A full sync with prune deletes it.
	if _, err := e.c.Sync(ctx, "", "", api.SyncOptions{Prune: true}); err != nil {
		t.Fatal(err)
	}
	e.waitFor("b pruned", func(api.ResourceList) bool {
		_, ok := sim.Guest(371)
		return !ok
	})
}
