package engine_test

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// A task whose log has no line yet (here: a start waiting for the guest's
// lock) is answered with one "no content" line, as Proxmox does
// (pve-common Tools.pm dump_logfile_by_filehandle): the client reads it as
// no line at all, so that a reader following the log from where it left
// off still reads the real first line once it is written.
func TestAnEmptyTaskLogReadsAsNoLineAndItsFirstLineIsStillRead(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TaskSpeed = 1 }) // the start waits up to 10 s for the held lock
	ctx := context.Background()
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 150, Node: "pve1", Config: map[string]string{"name": "waiting"}}); err != nil {
		t.Fatal(err)
	}
	release := e.sim.HoldGuestLock(150)
	upid, err := e.client.QemuStart(ctx, "pve1", 150)
	if err != nil {
		t.Fatal(err)
	}
	for _, start := range []int{0, 3} {
		lines, err := e.client.TaskLog(ctx, upid, start, 50)
		if err != nil || len(lines) != 0 {
			t.Fatalf("the log of a task with no line yet, from %d: %+v %v", start, lines, err)
		}
	}
	release()
	if _, err := e.client.WaitTask(ctx, upid, nil); err != nil {
		t.Fatal(err)
	}
	lines, err := e.client.TaskLog(ctx, upid, 0, 50)
	if err != nil || len(lines) == 0 || lines[0].N != 1 || lines[0].T == "no content" {
		t.Fatalf("the log once written: %+v %v", lines, err)
	}
}
