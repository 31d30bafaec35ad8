package export_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/pvesim"
)

// TestExportTakesTheStateFromTheGuest exports guests whose power changed
// by hand after pvestatd's last report: the manifest's state is the one
// the guest is in, or applying the export would stop or start it.
func TestExportTakesTheStateFromTheGuest(t *testing.T) {
	for _, running := range []bool{false, true} {
		clock := pvesim.NewFakeClock(time.Unix(1_780_000_000, 0))
		c := newClusterWith(t, pvesim.Options{Clock: clock, StatusInterval: pvesim.DefaultStatusInterval})
		sim, client := c.sim, c.client
		for _, g := range []pvesim.GuestSpec{
			{VMID: 150, Node: "pve1", Running: running, Config: map[string]string{
				"name": "web", "cores": "1", "memory": "512", "tags": engine.OwnerTag}},
			{VMID: 250, Node: "pve1", Type: "lxc", Running: running, Config: map[string]string{
				"hostname": "dns", "cores": "1", "memory": "512", "rootfs": "local-lvm:vm-250-disk-0,size=8G",
				"nameserver": "9.9.9.9", "ostype": "debian", "unprivileged": "1", "tags": engine.OwnerTag}},
		} {
			if err := sim.AddGuest(g); err != nil {
				t.Fatal(err)
			}
		}
		clock.Advance(pvesim.DefaultStatusInterval)
		for _, id := range []int{150, 250} {
			if err := sim.SetGuestRunning(id, !running); err != nil {
				t.Fatal(err)
			}
		}
		res, err := export.Run(context.Background(), client, export.Options{All: true})
		if err != nil {
			t.Fatal(err)
		}
		set, err := res.Load()
		if err != nil {
			t.Fatal(err)
		}
		want := manifest.StateRunning
		if running {
			want = manifest.StateStopped
		}
		seen := 0
		for _, r := range set.Resources {
			var state manifest.PowerState
			switch r := r.(type) {
			case *manifest.VirtualMachine:
				state = r.Spec.State
			case *manifest.Container:
				state = r.Spec.State
			default:
				continue
			}
			seen++
			if state == "" {
				state = manifest.StateRunning
			}
			if state != want {
				t.Errorf("%s/%s: state %q, want %q (the guest's own status)", r.Kind(), r.Name(), state, want)
			}
		}
		if seen != 2 {
			t.Fatalf("exported %d guests, want 2: %+v", seen, res.Files)
		}
	}
}
