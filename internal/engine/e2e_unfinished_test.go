package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// TestGuestLeftLockedIsReportedAsUnfinished puts guests at declared VMIDs
// as a node crash leaves them in the middle of a create or a clone: a
// config holding only the lock. proxmops must say so, not report a
// conflict with a guest it cannot name.
func TestGuestLeftLockedIsReportedAsUnfinished(t *testing.T) {
	e, _ := lagEnv(t)
	for _, g := range []pvesim.GuestSpec{
		{VMID: 120, Node: "pve1", Config: map[string]string{"lock": "create"}},
		{VMID: 130, Node: "pve1", Config: map[string]string{"lock": "clone"}},
		{VMID: 201, Node: "pve1", Type: "lxc", Config: map[string]string{"lock": "create"}},
	} {
		if err := e.sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	e.write("vms/app-01.yaml", seedVMImage)
	e.write("vms/app-02.yaml", seedClone)
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	e.write("ct/dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"))
	p := e.plan(e.engine(engine.Options{}))
	for _, tc := range []struct {
		kind, name string
		want       string
	}{
		{engine.KindVirtualMachine, "app-01", "VMID 120 is locked (create) by an unfinished task"},
		{engine.KindVirtualMachine, "app-02", "VMID 130 is locked (clone) by an unfinished task"},
		{engine.KindContainer, "dns-01", "VMID 201 is locked (create) by an unfinished task"},
	} {
		a := p.Find(tc.kind, tc.name)
		if a == nil {
			t.Fatalf("%s/%s not planned", tc.kind, tc.name)
		}
		if a.Status != vocab.StatusProgressing || a.Conflicted() || a.Action != vocab.ActionNone || !strings.Contains(a.Reason, tc.want) {
			t.Errorf("%s/%s: %s %s conflict=%v: %s, want Progressing: %s", tc.kind, tc.name, a.Action, a.Status, a.Conflicted(), a.Reason, tc.want)
		}
		if strings.Contains(a.Reason, `""`) {
			t.Errorf("%s/%s names a guest without a name: %s", tc.kind, tc.name, a.Reason)
		}
	}
}

// TestFailedCreateAndCloneLeaveNothingBehind fails every task of an apply
// (--faults task-fail-rate=1): the failed create and clone remove their
// half-made guests, so the next apply creates them, with nothing locked and
// no conflict.
func TestFailedCreateAndCloneLeaveNothingBehind(t *testing.T) {
	e, _ := lagEnv(t)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:import/prebuilt.qcow2", Size: 2 << 30}); err != nil {
		t.Fatal(err)
	}
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	e.write("vms/app-02.yaml", seedClone)
	e.write("vms/app-04.yaml", seedVMVolume)
	e.sim.SetFaults(pvesim.Faults{TaskFailRate: 1})
	_, rep := e.apply(eng)
	var failed []string
	for _, r := range rep.Results {
		if r.Status == vocab.StatusFailed {
			failed = append(failed, r.Kind+"/"+r.Name+": "+r.Error)
		}
	}
	all := strings.Join(failed, "\n")
	for _, want := range []string{"unable to create VM 121 - simulated task failure", "clone failed: simulated task failure"} {
		if !strings.Contains(all, want) {
			t.Errorf("want a failure %q, got:\n%s", want, all)
		}
	}
	for _, vmid := range []int{121, 130} {
		if g, ok := e.sim.Guest(vmid); ok {
			t.Errorf("the failed task left guest %d: %v", vmid, g.Config)
		}
	}
	e.sim.SetFaults(pvesim.Faults{})
	e.converge(eng)
	e.assertInSync(eng)
}

// TestTemplateConversionCutShortIsFinished fails the conversion task of a
// template build after qemu-server wrote template: 1 and before its disk
// became a base volume (QemuServer.pm template_create): the next pass
// converts the disk, so that a linked clone of the template works.
func TestTemplateConversionCutShortIsFinished(t *testing.T) {
	e, _ := lagEnv(t)
	eng := e.engineWith(engine.Options{},
		"templates/debian-12-tpl.yaml", seedTemplate,
		"vms/app-03.yaml", seedLinkedClone,
	)
	e.sim.FailNextTask("qmtemplate")
	if _, rep := e.apply(eng); rep.Failed == 0 {
		t.Fatal("want the conversion to fail")
	}
	g := e.guest(9000)
	if g.Config["template"] != "1" || !strings.Contains(g.Config["scsi0"], "vm-9000-disk-0") {
		t.Fatalf("want a template with a VM disk: %v", g.Config)
	}
	p := e.plan(eng)
	assertPlanned(t, p, engine.KindTemplate, "debian-12-tpl", vocab.ActionUpdate, "scsi0")
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(9000); !strings.Contains(g.Config["scsi0"], "base-9000-disk-0") {
		t.Fatalf("template disk: %v", g.Config["scsi0"])
	}
	if _, ok := e.sim.Guest(131); !ok {
		t.Fatal("the linked clone was not made")
	}
}

// TestConvergeStopsOnALastingRefusal refuses every write the same way:
// Converge re-plans after failures, but stops once four passes in a row
// changed nothing and failed alike, well before its pass limit.
func TestConvergeStopsOnALastingRefusal(t *testing.T) {
	e, _ := lagEnv(t)
	eng := e.engineWith(engine.Options{},
		"vms/app-02.yaml", seedClone,
		"templates/debian-12-tpl.yaml", seedTemplate,
	)
	e.sim.SetFaults(pvesim.Faults{Classes: map[string]pvesim.FaultRates{"write": {ErrorRate: 1}}})
	p := e.plan(eng)
	rep, err := eng.Converge(context.Background(), e.desired(), p, nil, engine.ConvergeOptions{Wait: time.Millisecond, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passes != 4 || rep.Failed == 0 {
		t.Fatalf("%d passes, %d failed: want 4 passes ending failed", rep.Passes, rep.Failed)
	}
}

// TestConvergeStopsOnAGuestLeftLocked does not spend its passes on a guest
// a crash left locked: it stays in progress, alike, four passes in a row.
func TestConvergeStopsOnAGuestLeftLocked(t *testing.T) {
	e, _ := lagEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 130, Node: "pve1", Config: map[string]string{"lock": "clone"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/app-02.yaml", seedClone)
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	rep, err := eng.Converge(context.Background(), e.desired(), p, nil, engine.ConvergeOptions{Wait: time.Millisecond, MaxWait: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Passes > 5 || rep.Failed != 1 {
		t.Fatalf("%d passes, %d failed: want at most 5 passes, app-02 failed", rep.Passes, rep.Failed)
	}
	for _, r := range rep.Results {
		if r.Name == "app-02" && !strings.Contains(r.Error, "VMID 130 is locked (clone) by an unfinished task") {
			t.Errorf("app-02: %s", r.Error)
		}
	}
}
