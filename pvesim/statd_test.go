package pvesim

import (
	"testing"
	"time"
)

// TestClusterResourcesLagsBehindPvestatd follows one VM through
// /cluster/resources with the default 10 s status cycle: name, status and
// template show what the last report saw, lock and tags are current, a new
// guest reads "unknown" until the next report, the guest's own
// status/current and config are always current, and a report older than
// five minutes expires.
func TestClusterResourcesLagsBehindPvestatd(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := newSim(t, Options{Clock: clock})
	want := func(stage string, kv ...any) {
		t.Helper()
		res := resourceOf(c, 100)
		if res == nil {
			t.Fatalf("%s: VM 100 missing from /cluster/resources", stage)
		}
		for i := 0; i < len(kv); i += 2 {
			k := kv[i].(string)
			v, has := res[k]
			switch w := kv[i+1]; w {
			case nil:
				if has {
					t.Errorf("%s: %s = %v, want it absent (%v)", stage, k, v, res)
				}
			default:
				if v != w {
					t.Errorf("%s: %s = %v, want %v (%v)", stage, k, v, w, res)
				}
			}
		}
	}

	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100", "name", "web", "scsi0", "local-lvm:4", "tags", "a"))
	want("new guest", "status", "unknown", "name", nil, "template", nil, "maxdisk", nil, "tags", "a", "node", "pve1")
	if st := c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).obj(t); st["status"] != "stopped" || st["name"] != "web" {
		t.Errorf("status/current of the new guest: %v", st)
	}

	clock.Advance(DefaultStatusInterval)
	want("after a report", "status", "stopped", "name", "web", "template", float64(0), "maxdisk", float64(4<<30))

	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/status/start", nil)
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("name", "web2", "tags", "b"))
	want("after start and rename", "status", "stopped", "name", "web", "tags", "b")
	if st := c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).obj(t); st["status"] != "running" || st["name"] != "web2" {
		t.Errorf("status/current after start and rename: %v", st)
	}
	clock.Advance(DefaultStatusInterval - time.Second)
	want("one second before the report", "status", "stopped", "name", "web")
	clock.Advance(time.Second)
	want("after the next report", "status", "running", "name", "web2")

	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/status/stop", nil)
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/template", nil)
	want("after stop and conversion", "status", "running", "template", float64(0))
	clock.Advance(DefaultStatusInterval)
	want("reported as a template", "status", "stopped", "template", float64(1))

	// pve1's pvestatd stops reporting: the entry stays for five minutes.
	srv.SetNodeOnline("pve1", false)
	clock.Advance(statExpiry - DefaultStatusInterval)
	want("pve1 silent for under five minutes", "status", "stopped", "name", "web2")
	clock.Advance(2 * DefaultStatusInterval)
	want("pve1 silent for over five minutes", "status", "unknown", "name", nil)
}

// TestClusterResourcesReportsAreKeyedByVMID shows the old guest's figures
// at a VMID deleted and created again before the next report, as pmxcfs'
// RRD cache (keyed by VMID) does.
func TestClusterResourcesReportsAreKeyedByVMID(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	_, c := newSim(t, Options{Clock: clock, StatusInterval: 2 * time.Second})
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100", "name", "tpl", "template", "1"))
	clock.Advance(2 * time.Second)
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/qemu/100", nil)
	if res := resourceOf(c, 100); res != nil {
		t.Fatalf("a deleted guest leaves the vmlist at once: %v", res)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve2/qemu", vals("vmid", "100", "name", "vm"))
	if res := resourceOf(c, 100); res["name"] != "tpl" || res["template"] != float64(1) || res["node"] != "pve2" {
		t.Errorf("before the next report: %v, want the old figures on the new node", res)
	}
	clock.Advance(2 * time.Second)
	if res := resourceOf(c, 100); res["name"] != "vm" || res["template"] != float64(0) {
		t.Errorf("after the report: %v", res)
	}
}

// TestClusterResourcesWithoutLag checks that a negative StatusInterval
// answers from the current state, and that a nameless guest is named as
// vmstatus names it.
func TestClusterResourcesWithoutLag(t *testing.T) {
	_, c := newSim(t, Options{StatusInterval: -1})
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "100"))
	if res := resourceOf(c, 100); res["status"] != "stopped" || res["name"] != "VM 100" {
		t.Errorf("resource %v", res)
	}
	if st := c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).obj(t); st["name"] != "VM 100" {
		t.Errorf("status/current %v", st)
	}
}
