package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// lagEnv is a simulated cluster on a fake clock with Proxmox's 10 s status
// cycle: /cluster/resources only learns of a change when the test moves
// the clock on.
func lagEnv(t *testing.T) (*env, *pvesim.FakeClock) {
	t.Helper()
	clock := pvesim.NewFakeClock(time.Unix(1_780_000_000, 0))
	e := newEnvWith(t, func(o *pvesim.Options) {
		o.Clock, o.TaskSpeed, o.StatusInterval = clock, 0, pvesim.DefaultStatusInterval
	})
	return e, clock
}

// TestStatusLagIsNotTrusted applies a template and a clone, then plans
// again before pvestatd has reported either: the plan must be in sync (no
// conversion of the finished template, no start of the running VM),
// because name, status and template come from the guests' own config and
// status.
func TestStatusLagIsNotTrusted(t *testing.T) {
	e, clock := lagEnv(t)
	eng := e.convergedEngine(engine.Options{},
		"templates/debian-12-tpl.yaml", seedTemplate,
		"vms/app-02.yaml", seedClone,
	)
	if res := resourcesByVMID(t, e); res[130].Status != "unknown" || res[9000].Status != "unknown" {
		t.Fatalf("the lag is off: %+v", res)
	}
	e.assertInSync(eng)

	// After a report, someone starts a VM proxmops saw stopped: until the
	// next report /cluster/resources still says stopped.
	clock.Advance(pvesim.DefaultStatusInterval)
	e.assertInSync(eng)
	if err := e.sim.SetGuestRunning(130, false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(pvesim.DefaultStatusInterval)
	if err := e.sim.SetGuestRunning(130, true); err != nil {
		t.Fatal(err)
	}
	if res := resourcesByVMID(t, e); res[130].Status != "stopped" {
		t.Fatalf("resources say %q, want the stale stopped", res[130].Status)
	}
	e.assertInSync(eng)
}

// TestCloneOfATemplateNotReportedYet clones a template someone has just
// made (not declared, so found by name): /cluster/resources does not name
// it before pvestatd's next report.
func TestCloneOfATemplateNotReportedYet(t *testing.T) {
	e, _ := lagEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 800, Node: "pve1", Config: map[string]string{
		"name": "golden", "template": "1", "scsi0": "local-lvm:base-800-disk-0,size=4G", "ostype": "l26"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/app-06.yaml", cloneOfGolden)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-06"); a.Action != vocab.ActionCreate || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("app-06: %s %s: %s", a.Action, a.Status, a.Reason)
	}
	e.converge(eng)
	if g := e.guest(131); g.Config["name"] != "app-06" {
		t.Fatalf("clone: %+v", g)
	}
	e.assertInSync(eng)
}

func resourcesByVMID(t *testing.T, e *env) map[int]struct{ Status, Name string } {
	t.Helper()
	res, err := e.client.ClusterResources(context.Background(), "vm")
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]struct{ Status, Name string }{}
	for _, r := range res {
		out[int(r.VMID)] = struct{ Status, Name string }{r.Status, r.Name}
	}
	return out
}

// cloneOfGolden is a stopped VM cloned from the template named golden,
// whichever VMID carries that name when the plan is made.
const cloneOfGolden = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-06
  node: pve1
spec:
  vmid: 131
  fromTemplate: golden
  cores: 1
  memory: 512
  state: stopped
`
