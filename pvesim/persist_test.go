package pvesim

import (
	"net/url"
	"path/filepath"
	"testing"
	"time"
)

func taskStatus(c *client, upid string) map[string]any {
	c.t.Helper()
	info, _ := ParseUPID(upid)
	return c.mustOK("GET", "/nodes/"+info.Node+"/tasks/"+url.PathEscape(upid)+"/status", nil).obj(c.t)
}

// TestStateRestoreInterruptsTasks saves the state while tasks run and
// restores it into a new simulator: the tasks come back stopped with the
// interrupt as their error, and what their error paths undo is undone.
func TestStateRestoreInterruptsTasks(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/big.qcow2", Size: 20 << 30})
	mustAddGuest(t, srv, GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{"name": "tpl", "template": "1", "scsi0": "local-lvm:base-9000-disk-0,size=8G"}})
	done := c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "101")).str(t)
	waitSleepers(t, clock, 1, "clone never slept")
	clock.Advance(time.Minute)
	if st := c.waitTask(done); st != "OK" {
		t.Fatalf("first clone: %s", st)
	}
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:0,import-from=local:import/big.qcow2")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	clock.Advance(durCreate) // now importing, vm-100-disk-0 allocated
	clone := c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "102", "full", "1")).str(t)
	waitSleepers(t, clock, 2, "second clone never slept")
	path := filepath.Join(t.TempDir(), "state.json")
	if err := srv.SaveState(path); err != nil {
		t.Fatal(err)
	}

	restored := New(Options{TokenID: testTokenID, TokenSecret: testTokenSecret, Clock: clock})
	if err := restored.LoadState(path); err != nil {
		t.Fatal(err)
	}
	if err := restored.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { restored.Close() })
	rc := newClient(t, restored)
	for _, tt := range []struct {
		name, upid, exit string
	}{
		{"finished clone", done, "OK"},
		{"interrupted create", create, "unable to create VM 100 - received interrupt"},
		{"interrupted clone", clone, "clone failed: interrupted by signal"},
	} {
		st := taskStatus(rc, tt.upid)
		if st["status"] != "stopped" || st["exitstatus"] != tt.exit {
			t.Errorf("%s: %v, want stopped with %q", tt.name, st, tt.exit)
		}
		if lines := taskLog(rc, tt.upid); lines[len(lines)-1] != map[bool]string{true: "TASK OK", false: "TASK ERROR: " + tt.exit}[tt.exit == "OK"] {
			t.Errorf("%s: log %q", tt.name, lines)
		}
	}
	if l := rc.mustOK("GET", "/nodes/pve1/tasks", vals("source", "active")).list(t); len(l) != 0 {
		t.Errorf("tasks still running after restore: %v", l)
	}
	if l := rc.mustOK("GET", "/nodes/pve1/tasks", vals("errors", "1")).list(t); len(l) != 2 {
		t.Errorf("failed tasks after restore: %v", l)
	}
	// The half-created VM and the half-cloned one are gone with their volumes;
	// the finished clone stays.
	for _, vmid := range []string{"100", "102"} {
		if r := rc.do("GET", "/nodes/pve1/qemu/"+vmid+"/config", nil); r.Status != 500 {
			t.Errorf("guest %s after restore: %d %s", vmid, r.Status, r.Body)
		}
	}
	if cfg := rc.mustOK("GET", "/nodes/pve1/qemu/101/config", nil).obj(t); cfg["lock"] != nil {
		t.Errorf("finished clone: %v", cfg)
	}
	var vols []string
	for _, v := range rc.mustOK("GET", "/nodes/pve1/storage/local-lvm/content", nil).list(t) {
		vols = append(vols, v["volid"].(string))
	}
	if len(vols) != 2 || vols[0] != "local-lvm:base-9000-disk-0" || vols[1] != "local-lvm:vm-101-disk-0" {
		t.Errorf("volumes after restore: %v", vols)
	}
	// New tasks get fresh UPIDs and the VMID is free again.
	again := rc.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100")).str(t)
	for _, old := range []string{done, create, clone} {
		if again == old {
			t.Fatalf("UPID %s reused", again)
		}
	}
	if st := rc.waitTask(again); st != "OK" {
		t.Fatalf("create after restore: %s", st)
	}
}

// TestCloseInterruptsRunningTasks closes a simulator while a create runs,
// as `proxmops sim` does before it saves: the worker is interrupted and
// cleans up, and the saved state holds the stopped task.
func TestCloseInterruptsRunningTasks(t *testing.T) {
	srv, c, clock := clockedSim(t)
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:4")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	srv.Close()
	restored := reloaded(t, srv)
	rc := newClient(t, restored)
	if st := taskStatus(rc, create); st["status"] != "stopped" || st["exitstatus"] != "unable to create VM 100 - received interrupt" {
		t.Errorf("create after close: %v", st)
	}
	if r := rc.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Status != 500 {
		t.Errorf("guest after close: %d %s", r.Status, r.Body)
	}
}
