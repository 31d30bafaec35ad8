package controller

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A pass that read a guest before its action ended, and is judged after the
// outcome was recorded, must not take its old view for news: no "drifted"
// entry, and no second update of what the first already changed.
func TestAPassThatReadBeforeAnActionEndedLeavesItsOutcomeStanding(t *testing.T) {
	e := syncedVM(t, 0, "a", 360, 2)
	sim, repo := e.sim, e.repo
	ctx := context.Background()
	sim.ResetRequests()

	// The update's request takes 1.5 s to reach Proxmox's handler.
	sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultLatency, Method: "PUT", Path: "/nodes/{node}/qemu/{vmid}/config", Latency: 1500 * time.Millisecond})
	repo.Commit("a: 4 cores", map[string]string{"vms/a.yaml": vmManifest("a", 360, 4)})
	if err := e.c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the update running", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusProgressing
	})
	// The next pass reads a's configuration (2 cores) at once, and its read
	// of a's power state is answered only after the update ended.
	sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultLatency, Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/status/current", Latency: 3 * time.Second})
	if err := e.c.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	e.waitFor("the stale pass and the re-scan", func(l api.ResourceList) bool {
		r := find(l, "VirtualMachine/a")
		return r != nil && r.Status == vocab.StatusSynced && sim.RequestCountFor("GET", "/nodes/{node}/qemu/{vmid}/status/current") > 1 &&
			guestCores(t, sim, 360) == "4"
	})
	e.waitPasses(2)
	// The commit's difference is the one "drifted" entry, before the update.
	want := []api.HistoryEvent{api.EventCreated, api.EventDrifted, api.EventApplied}
	if events := events_(e.history("VirtualMachine/a")); !slices.Equal(events, want) {
		t.Errorf("history %v, want %v: %+v", events, want, e.history("VirtualMachine/a"))
	}
	if n := sim.RequestCountFor("PUT", "/nodes/{node}/qemu/{vmid}/config") + sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/config"); n != 1 {
		t.Errorf("%d updates sent, want the one", n)
	}
}
