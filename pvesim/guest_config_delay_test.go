package pvesim

import (
	"testing"
)

// POST .../config with background_delay waits for its task: null when it
// ended well in time, the task's status as the error when it failed, its
// UPID when it still runs (qemu-server API2/Qemu.pm update_vm_api).
func TestConfigUpdateBackgroundDelay(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 1, TaskSpeed: 0.01})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a", "cores": "1"}})
	const path = "/nodes/pve1/qemu/100/config"

	r := c.mustOK("POST", path, vals("cores", "2", "background_delay", "5"))
	if string(r.Data) != "null" {
		t.Fatalf("answer %s, want null for a task that ended within the delay", r.Data)
	}
	if got := c.mustOK("GET", path, nil).obj(t)["cores"]; got != float64(2) {
		t.Fatalf("cores = %v after the update", got)
	}

	srv.FailNextTask("qmconfig")
	r = c.do("POST", path, vals("cores", "3", "background_delay", "5"))
	if want := "failed to update VM 100: simulated task failure (fault injection)"; r.Status != 500 || r.Reason != want {
		t.Fatalf("failed task: %d %q, want 500 %q", r.Status, r.Reason, want)
	}

	release := srv.HoldGuestLock(100)
	r = c.mustOK("POST", path, vals("cores", "4", "background_delay", "1"))
	upid := r.str(t)
	release()
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("task %s ended %s", upid, st)
	}
	r = c.mustOK("POST", path, vals("cores", "5"))
	if _, ok := ParseUPID(r.str(t)); !ok {
		t.Fatalf("without background_delay the answer is the task's UPID: %s", r.Data)
	}
}
