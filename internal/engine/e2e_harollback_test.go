package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// The plan says what the HA stack does with a shutdown: a VM still running
// at the timeout is stopped hard (PVEVM.pm shutdown sets forceStop), a
// container is not forced (PVECT.pm). A VM that ignores the shutdown ends
// stopped all the same.
func TestHAShutdownPlanSaysWhatTheHAStackDoes(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vm.yaml", strings.Replace(haVM, "STATE", "running", 1))
	e.haAdd("vm:150", "started")
	if err := e.sim.SetGuestIgnoresShutdown(150, true); err != nil {
		t.Fatal(err)
	}
	e.write("vm.yaml", strings.Replace(haVM, "STATE", "stopped", 1))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "ha-app")
	want := "HA-managed as vm:150: the HA stack is asked for a shutdown and the guest is awaited; the HA stack stops a VM still running at the shutdown timeout hard (forceStop)"
	if a == nil || !strings.Contains(a.Reason, want) || strings.Contains(planText(p), "never a hard stop") {
		t.Fatalf("the plan does not say the HA stack forces the VM's shutdown:\n%s", planText(p))
	}
	e.converge(eng)
	if e.guest(150).Running {
		t.Fatal("the VM that ignores shutdowns still runs: the HA stack's forceStop is missing")
	}
	if tasks := strings.Join(e.taskTypes("pve1", "150"), ","); !strings.Contains(tasks, "hastop") || strings.Contains(tasks, "qmstop") {
		t.Fatalf("tasks %s: want the HA stack's forced shutdown, no status/stop", tasks)
	}
}

// A rollback of an HA-managed guest: Proxmox stops the guest and rolls its
// volumes back under lock "rollback", and the HA stack's LRM would start
// it meanwhile and fail on the lock. proxmops sets the HA resource to
// ignored for the rollback and restores its state after: no start fails,
// the guest runs again, and the HA stack manages it as before.
func TestRollbackOfHAManagedGuestKeepsTheLRMAway(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	withSnapshots := func(cores string) string {
		return strings.Replace(strings.Replace(haVM, "STATE", "running", 1), "  cores: 1\n", "  cores: "+cores+"\n  applyMode: reboot\n  snapshots:\n    beforeChange: true\n", 1)
	}
	e.write("vm.yaml", withSnapshots("1"))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	e.haAdd("vm:150", "started")
	e.write("vm.yaml", withSnapshots("2"))
	e.converge(eng)

	list, err := eng.GuestSnapshots(ctx, e.desired(), engine.KindVirtualMachine, "ha-app")
	if err != nil || list.HA != "vm:150" || len(list.Snapshots) != 1 {
		t.Fatalf("GuestSnapshots: %+v %v", list, err)
	}
	var steps []string
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "ha-app", "", func(m string) { steps = append(steps, m) }); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(steps, "\n"), "setting the HA resource vm:150 to ignored for the rollback") {
		t.Fatalf("progress does not say the HA resource is set aside: %v", steps)
	}
	var tasks []map[string]any
	if err := e.client.Get(ctx, "nodes/pve1/tasks", pve.NewParams().Set("vmid", "150").Set("typefilter", "qmstart").Set("limit", "0"), &tasks); err != nil {
		t.Fatal(err)
	}
	for _, tk := range tasks {
		if tk["status"] != "OK" {
			t.Fatalf("a start failed during the rollback (%v): the HA stack raced it", tk["status"])
		}
	}
	if st := e.haRequested("vm:150"); st != "started" {
		t.Fatalf("requested HA state after the rollback %q, want started", st)
	}
	e.waitHA("vm:150", func(st string) bool { return st == "started" })
	if g := e.guest(150); !g.Running || g.Config["cores"] != "1" {
		t.Fatalf("after the rollback: running %v, cores %q", g.Running, g.Config["cores"])
	}
}
