package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
)

// sdnRepo is a repository holding the SDN example and the VM runner on
// its vnet labnet.
func sdnRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	repo := gittest.New(t)
	repo.Commit("sdn", map[string]string{
		"sdn/zones.yaml":  testvm.Example(t, "sdn/zones.yaml"),
		"sdn/vnets.yaml":  testvm.Example(t, "sdn/vnets.yaml"),
		"vms/runner.yaml": strings.Replace(vmManifest("runner", 320, 1), "bridge: vmbr0", "bridge: labnet", 1),
	})
	return repo
}

// The daemon hands SDN actions to its dispatcher one at a time: zones,
// vnets with their subnets and a VM on a vnet converge to Synced through
// the loop, every change applied (nothing left pending in /cluster/sdn),
// and a removed repository prunes them again, zones with their vnets.
func TestSdnConvergesThroughTheLoop(t *testing.T) {
	sim := startSim(t, 0)
	repo := sdnRepo(t)
	prune := func(o *Options) { o.Config.Reconcile.Prune = true }
	e := newEnv(t, sim, repo, "", prune).start()
	keys := []string{"SdnZone/lab", "SdnZone/vlans", "SdnZone/overlay", "SdnVnet/labnet", "SdnVnet/iot", "SdnVnet/k8s", "VirtualMachine/runner"}
	e.waitFor("SDN and the VM on a vnet synced", func(l api.ResourceList) bool {
		for _, k := range keys {
			if r := find(l, k); r == nil || r.Status != vocab.StatusSynced {
				return false
			}
		}
		return true
	})
	client := simClient(t, sim)
	ctx := context.Background()
	for _, kind := range []string{"zones", "vnets", "vnets/labnet/subnets"} {
		list, err := client.SDNPending(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) == 0 {
			t.Fatalf("no %s on the cluster", kind)
		}
		for _, x := range list {
			if x.Pending() {
				t.Errorf("%s %s left pending (%s)", kind, x.ID, x.State)
			}
		}
	}
	for _, k := range keys {
		for _, h := range e.history(k) {
			if h.Event == api.EventFailed {
				t.Errorf("%s failed on the way: %s", k, h.Message)
			}
		}
	}

	// The repository drops the VM and the SDN: prune removes all of it.
	repo.Commit("drop", map[string]string{"sdn/zones.yaml": "", "sdn/vnets.yaml": "", "vms/runner.yaml": vmManifest("other", 321, 1)})
	if err := e.c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitFor("SDN pruned", func(l api.ResourceList) bool {
		for _, k := range keys {
			if find(l, k) != nil {
				return false
			}
		}
		r := find(l, "VirtualMachine/other")
		return r != nil && r.Status == vocab.StatusSynced
	})
	for _, kind := range []string{"zones", "vnets"} {
		list, err := client.SDNPending(ctx, kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range list {
			t.Errorf("%s %s left (%s)", kind, x.ID, x.State)
		}
	}
}
