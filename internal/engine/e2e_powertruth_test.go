package engine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A guest's power state as /cluster/resources gives it is pvestatd's last
// report, up to 10 seconds old; start, stop and reboot are decided from
// the guest's own status/current, in the plan and again right before the
// call. Proxmox refuses the wrong call: a start of a running guest ("VM
// 150 already running", "CT 250 already running"), a reboot or a stop of a
// stopped container and a reboot of a stopped VM ("VM 150 not running").

const (
	truthVM = webVM + `  cores: CORES
  memory: 512
  applyMode: reboot
  state: STATE
`
	truthCT = dnsCT + `  cores: 1
  memory: 512
  rootfs:
    storage: local-lvm
    size: 8G
  nameserver: NAMESERVER
  template: debian-12-standard
  applyMode: reboot
  state: STATE
`
)

// truthGuests are one owned VM and one owned container, as the manifests
// above declare them (cores 1, nameserver 9.9.9.9).
func truthGuests(t *testing.T, e *env, running bool) {
	t.Helper()
	for _, g := range []pvesim.GuestSpec{
		{VMID: 150, Node: "pve1", Running: running, Config: map[string]string{
			"name": "web", "cores": "1", "memory": "512", "tags": engine.OwnerTag}},
		{VMID: 250, Node: "pve1", Type: "lxc", Running: running, Config: map[string]string{
			"hostname": "dns", "cores": "1", "memory": "512", "rootfs": "local-lvm:vm-250-disk-0,size=8G",
			"nameserver": "9.9.9.9", "ostype": "debian", "unprivileged": "1", "tags": engine.OwnerTag}},
	} {
		if err := e.sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
}

func writeTruth(e *env, state, cores, nameserver string) {
	e.write("web.yaml", strings.NewReplacer("STATE", state, "CORES", cores).Replace(truthVM))
	e.write("dns.yaml", strings.NewReplacer("STATE", state, "NAMESERVER", nameserver).Replace(truthCT))
}

// TestStaleRunningIsNotRebooted stops both guests by hand right after
// pvestatd reported them running, then changes a field that waits for a
// restart of a running guest: the plan must see them stopped (the change
// applies directly, no reboot) and start them, as the manifests ask.
func TestStaleRunningIsNotRebooted(t *testing.T) {
	for _, cached := range []bool{false, true} {
		t.Run(map[bool]string{false: "without a read cache", true: "with a read cache"}[cached], func(t *testing.T) {
			e, clock := lagEnv(t)
			truthGuests(t, e, true)
			writeTruth(e, "running", "1", "9.9.9.9")
			opts := engine.Options{}
			if cached {
				opts.Reads = engine.NewReadCache(time.Hour, clock.Now)
			}
			eng := e.engine(opts)
			clock.Advance(pvesim.DefaultStatusInterval)
			e.assertInSync(eng)

			// Changes that wait for a restart of a running guest, while
			// the guests really run: the power state is confirmed without
			// another round (the cache takes one of its own to read the
			// guests it served).
			writeTruth(e, "running", "2", "1.1.1.1")
			rounds := map[bool]int{false: 1, true: 2}[cached]
			if p := e.plan(eng); p.Stats.Rounds != rounds || !findKey(p, "VirtualMachine/web").NeedsReboot {
				t.Fatalf("running guests: %d rounds, want %d:\n%s", p.Stats.Rounds, rounds, planText(p))
			}
			writeTruth(e, "running", "1", "9.9.9.9")

			for _, id := range []int{150, 250} {
				if err := e.sim.SetGuestRunning(id, false); err != nil {
					t.Fatal(err)
				}
			}
			if res := resourcesByVMID(t, e); res[150].Status != "running" || res[250].Status != "running" {
				t.Fatalf("want the stale running: %+v", res)
			}
			writeTruth(e, "running", "2", "1.1.1.1")
			p := e.plan(eng)
			for _, k := range []string{"VirtualMachine/web", "Container/dns"} {
				a := findKey(p, k)
				if a == nil || a.Action != vocab.ActionUpdate || a.NeedsReboot || !hasChange(a, "state", "stopped", "running") {
					t.Fatalf("%s: want an update that starts the stopped guest, no reboot:\n%s", k, planText(p))
				}
			}
			e.converge(eng)
			if g := e.guest(150); !g.Running || g.Config["cores"] != "2" {
				t.Errorf("VM 150: running %v cores %q", g.Running, g.Config["cores"])
			}
			if g := e.guest(250); !g.Running || g.Config["nameserver"] != "1.1.1.1" {
				t.Errorf("CT 250: running %v nameserver %q", g.Running, g.Config["nameserver"])
			}
		})
	}
}

// TestPowerIsReadAgainBeforeActing applies a plan made before someone
// changed the guests' power by hand (a plan shown, then confirmed; a
// daemon's plan applied after an earlier action): no start of a guest that
// runs now, no stop of one that is stopped, no reboot of a stopped one.
func TestPowerIsReadAgainBeforeActing(t *testing.T) {
	tests := []struct {
		name           string
		startRunning   bool
		state          string
		cores, ns      string
		thenRunning    bool
		wantAction     vocab.Action
		wantRunningNow bool
	}{
		{"a start planned, started by hand meanwhile", false, "running", "1", "9.9.9.9", true, vocab.ActionUpdate, true},
		{"a stop planned, stopped by hand meanwhile", true, "stopped", "1", "9.9.9.9", false, vocab.ActionUpdate, false},
		{"a reboot planned, stopped by hand meanwhile: started instead", true, "running", "2", "1.1.1.1", false, vocab.ActionUpdate, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			truthGuests(t, e, tt.startRunning)
			writeTruth(e, tt.state, tt.cores, tt.ns)
			eng := e.engine(engine.Options{})
			p := e.plan(eng)
			for _, k := range []string{"VirtualMachine/web", "Container/dns"} {
				if a := findKey(p, k); a == nil || a.Action != tt.wantAction {
					t.Fatalf("%s: want %s:\n%s", k, tt.wantAction, planText(p))
				}
			}
			for _, id := range []int{150, 250} {
				if err := e.sim.SetGuestRunning(id, tt.thenRunning); err != nil {
					t.Fatal(err)
				}
			}
			rep, err := eng.Apply(context.Background(), p, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range rep.Results {
				if r.Status != vocab.StatusSynced {
					t.Errorf("%s/%s: %s %s", r.Kind, r.Name, r.Status, r.Error)
				}
			}
			for _, id := range []int{150, 250} {
				if g := e.guest(id); g.Running != tt.wantRunningNow {
					t.Errorf("guest %d running %v, want %v", id, g.Running, tt.wantRunningNow)
				}
			}
			e.assertInSync(eng)
		})
	}
}

func findKey(p *engine.Plan, key string) *engine.Action {
	for _, a := range p.Actions {
		if a.Key() == key {
			return a
		}
	}
	return nil
}

func hasChange(a *engine.Action, field, from, to string) bool {
	for _, c := range a.Changes {
		if c.Field == field && c.From == from && c.To == to {
			return true
		}
	}
	return false
}

// TestNoSecondStartWhileOneRuns plans while a start task runs for the VM
// and a shutdown task for the container (a start whose answer was lost, a
// shutdown asked for by hand): status/current still reads the old state,
// and a second start or stop would fail on Proxmox, so both wait for the
// next pass; once the tasks end, the guests are in sync.
func TestNoSecondStartWhileOneRuns(t *testing.T) {
	clock := pvesim.NewFakeClock(time.Unix(1_780_000_000, 0))
	e := newEnvWith(t, func(o *pvesim.Options) { o.Clock, o.TaskSpeed, o.StatusInterval = clock, 1, -1 })
	truthGuests(t, e, false)
	if err := e.sim.SetGuestRunning(250, true); err != nil {
		t.Fatal(err)
	}
	writeTruth(e, "running", "1", "9.9.9.9")
	e.write("dns.yaml", strings.NewReplacer("STATE", "stopped", "NAMESERVER", "9.9.9.9").Replace(truthCT))
	ctx := context.Background()
	start, err := e.client.QemuStart(ctx, "pve1", 150)
	if err != nil {
		t.Fatal(err)
	}
	shutdown, err := e.client.LxcShutdown(ctx, "pve1", 250, 60, false)
	if err != nil {
		t.Fatal(err)
	}
	if !clock.WaitForWaiters(2, 5*time.Second) {
		t.Fatal("the tasks never slept")
	}
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	for _, k := range []string{"VirtualMachine/web", "Container/dns"} {
		if a := findKey(p, k); a == nil || a.Action != vocab.ActionNone || a.Status != vocab.StatusProgressing {
			t.Fatalf("%s: want it left to the running task:\n%s", k, planText(p))
		}
	}
	clock.Advance(time.Minute)
	for _, upid := range []string{start, shutdown} {
		if st, err := e.client.WaitTask(ctx, upid, nil); err != nil || !st.Succeeded() {
			t.Fatalf("task %s: %+v %v", upid, st, err)
		}
	}
	e.assertInSync(eng)
}

// TestCloneSourceIsFoundByItsConfiguredName renames two templates by hand
// (golden becomes golden-old, silver becomes golden) before pvestatd's
// next report: /cluster/resources still names them as before, and a clone
// of golden must come from the template named so now.
func TestCloneSourceIsFoundByItsConfiguredName(t *testing.T) {
	e, clock := lagEnv(t)
	for _, g := range []pvesim.GuestSpec{
		{VMID: 800, Node: "pve1", Config: map[string]string{"name": "golden", "template": "1", "scsi0": "local-lvm:base-800-disk-0,size=4G", "ostype": "l26"}},
		{VMID: 801, Node: "pve1", Config: map[string]string{"name": "silver", "template": "1", "scsi0": "local-lvm:base-801-disk-0,size=4G", "ostype": "l26"}},
	} {
		if err := e.sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	clock.Advance(pvesim.DefaultStatusInterval)
	e.sim.MutateGuest(800, func(conf map[string]string) { conf["name"] = "golden-old" })
	e.sim.MutateGuest(801, func(conf map[string]string) { conf["name"] = "golden" })
	if res := resourcesByVMID(t, e); res[800].Name != "golden" || res[801].Name != "silver" {
		t.Fatalf("want the stale names: %+v", res)
	}
	e.write("vms/app-06.yaml", cloneOfGolden)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	a := findKey(p, "VirtualMachine/app-06")
	if a == nil || a.Action != vocab.ActionCreate || !strings.Contains(planText(p), "template golden (801)") {
		t.Fatalf("want a clone of 801, now named golden:\n%s", planText(p))
	}
	e.converge(eng)
	if g := e.guest(131); !strings.Contains(g.Config["scsi0"], "vm-131-disk-0") {
		t.Fatalf("clone: %+v", g.Config)
	}
}
