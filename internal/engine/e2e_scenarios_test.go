package engine_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func changeFields(a *engine.Action) []string {
	var out []string
	for _, c := range a.Changes {
		out = append(out, c.Field)
	}
	return out
}

func TestHandMadeDriftIsCorrected(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)

	if err := e.sim.MutateGuest(120, func(c map[string]string) {
		c["cores"] = "4"
		c["memory"] = "4096"
		c["net0"] = strings.Replace(c["net0"], "bridge=vmbr0", "bridge=vmbr1", 1)
		c["ciuser"] = "root"
		c["tags"] = "managed-by-proxmops"
	}); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetGuestRunning(120, false); err != nil {
		t.Fatal(err)
	}
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app-01")
	if a.Action != vocab.ActionUpdate || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("drift not detected: %+v", a)
	}
	got := strings.Join(changeFields(a), ",")
	for _, f := range []string{"cores", "memory", "net0.bridge", "ciuser", "tags", "state"} {
		if !strings.Contains(got, f) {
			t.Errorf("change %s missing from %s", f, got)
		}
	}
	for _, c := range a.Changes {
		if c.Field == "cores" && (c.From != "4" || c.To != "2") {
			t.Errorf("cores change %v", c)
		}
	}
	// Each change names the manifest field it comes from as well as the
	// Proxmox key, so the UI aligns desired and observed.
	wantPath := map[string]string{"cores": "spec.cores", "memory": "spec.memory", "net0.bridge": "spec.net[0].bridge",
		"tags": "metadata.tags", "state": "spec.state"}
	for _, c := range a.Changes {
		if w, ok := wantPath[c.Field]; ok && c.Path != w {
			t.Errorf("change %s has path %q, want %q", c.Field, c.Path, w)
		}
		delete(wantPath, c.Field)
	}
	if len(wantPath) > 0 {
		t.Errorf("changes missing: %v", wantPath)
	}
	e.converge(eng)
	e.assertInSync(eng)
	g := e.guest(120)
	if g.Config["cores"] != "2" || !strings.Contains(g.Config["net0"], "bridge=vmbr0") || !g.Running {
		t.Fatalf("not corrected: %v running=%v", g.Config, g.Running)
	}
	// The MAC survived the NIC correction.
	if !strings.Contains(g.Config["net0"], "virtio=") {
		t.Fatalf("net0 lost its MAC: %s", g.Config["net0"])
	}
}

func TestDiskGrowthAndShrinkRefused(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.write("vms/app-01.yaml", strings.Replace(seedVMImage, "size: 20G", "size: 30G", 1))
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(120); !strings.Contains(g.Config["scsi0"], "size=30G") {
		t.Fatalf("disk not grown: %s", g.Config["scsi0"])
	}
	e.write("vms/app-01.yaml", seedVMImage) // back to 20G: a shrink
	p, rep := e.apply(eng)
	a := p.Find(engine.KindVirtualMachine, "app-01")
	if !strings.Contains(a.Reason, "shrinking disks is not supported") {
		t.Fatalf("shrink not refused in the plan: %+v", a)
	}
	if rep.Failed != 1 || !strings.Contains(rep.Results[0].Error, "shrinking disks is not supported") {
		t.Fatalf("shrink not refused on apply: %+v", rep.Results)
	}
	if g := e.guest(120); !strings.Contains(g.Config["scsi0"], "size=30G") {
		t.Fatalf("disk touched: %s", g.Config["scsi0"])
	}
}

func TestExtraDisksAndNICs(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.write("vms/app-01.yaml", strings.Replace(strings.Replace(seedVMImage,
		"      size: 20G\n", "      size: 20G\n    - storage: local-lvm\n      size: 5G\n      discard: true\n", 1),
		"    - bridge: vmbr0\n", "    - bridge: vmbr0\n    - bridge: vmbr0\n      tag: 30\n      firewall: true\n", 1))
	e.converge(eng)
	e.assertInSync(eng)
	g := e.guest(120)
	if !strings.Contains(g.Config["scsi1"], "size=5G") || !strings.Contains(g.Config["scsi1"], "discard=on") {
		t.Errorf("scsi1 %q", g.Config["scsi1"])
	}
	if !strings.Contains(g.Config["net1"], "tag=30") || !strings.Contains(g.Config["net1"], "firewall=1") {
		t.Errorf("net1 %q", g.Config["net1"])
	}
}

func TestRunningCoresChangeIsPendingUnlessApplyModeReboot(t *testing.T) {
	e := newEnv(t)
	withoutReboot := strings.Replace(strings.Replace(seedVMImage, "  applyMode: reboot\n", "", 1), "name: app-01", "name: app-05", 1)
	withoutReboot = strings.Replace(withoutReboot, "vmid: 120", "vmid: 125", 1)
	e.write("vms/app-01.yaml", seedVMImage)
	e.write("vms/app-05.yaml", withoutReboot)
	eng := e.engine(engine.Options{})
	e.converge(eng)

	e.write("vms/app-01.yaml", strings.Replace(seedVMImage, "cores: 2", "cores: 4", 1))
	e.write("vms/app-05.yaml", strings.Replace(withoutReboot, "cores: 2", "cores: 4", 1))
	p := e.plan(eng)
	for _, name := range []string{"app-01", "app-05"} {
		a := p.Find(engine.KindVirtualMachine, name)
		if a.Action != vocab.ActionUpdate || !a.NeedsReboot {
			t.Fatalf("%s: %+v", name, a)
		}
	}
	e.converge(eng)

	// app-05: the change waits for a reboot, and the plan says so.
	if g := e.guest(125); g.Config["cores"] != "2" || g.Pending["cores"] != "4" {
		t.Fatalf("app-05 cores current %s pending %s", g.Config["cores"], g.Pending["cores"])
	}
	p = e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app-05")
	if a.Action != vocab.ActionNone || !a.NeedsReboot || a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "pending") {
		t.Fatalf("app-05 after apply: %+v", a)
	}
	// app-01 (applyMode: reboot) was rebooted: nothing pending.
	if g := e.guest(120); g.Config["cores"] != "4" || len(g.Pending) != 0 || !g.Running {
		t.Fatalf("app-01 cores %s pending %v running %v", g.Config["cores"], g.Pending, g.Running)
	}
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Status != vocab.StatusSynced {
		t.Fatalf("app-01: %+v", a)
	}
	// Switching app-05 to applyMode: reboot turns the pending change into a reboot.
	e.write("vms/app-05.yaml", strings.Replace(strings.Replace(withoutReboot, "cores: 2", "cores: 4", 1), "state: running", "applyMode: reboot\n  state: running", 1))
	p = e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-05"); a.Action != vocab.ActionReboot {
		t.Fatalf("app-05 with applyMode reboot: %+v", a)
	}
	e.converge(eng)
	e.assertInSync(eng)
}

func TestUnownedGuestIsConflictEvenWithPrune(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 120, Node: "pve1", Running: true,
		Config: map[string]string{"name": "someone-elses", "cores": "8", "memory": "8192", "scsi0": "local-lvm:vm-120-disk-0,size=8G"}}); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 300, Node: "pve2",
		Config: map[string]string{"name": "bystander", "cores": "1", "tags": "prod"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/app-01.yaml", seedVMImage)
	eng := e.engine(engine.Options{Prune: true})
	p, rep := e.apply(eng)
	a := p.Find(engine.KindVirtualMachine, "app-01")
	if !a.Conflicted() || a.Status != vocab.StatusConflict || a.Action != vocab.ActionNone || p.Summary.Conflict != 1 {
		t.Fatalf("not a conflict: %+v", a)
	}
	if !strings.Contains(a.Reason, "does not own") {
		t.Fatalf("reason %q", a.Reason)
	}
	if p.Summary.Delete != 0 || len(rep.Results) != 0 {
		t.Fatalf("something was to be done: %+v %+v", p.Summary, rep.Results)
	}
	g := e.guest(120)
	if g.Config["name"] != "someone-elses" || g.Config["cores"] != "8" || !g.Running {
		t.Fatalf("unowned guest touched: %v", g.Config)
	}
	if _, ok := e.sim.Guest(300); !ok {
		t.Fatal("unowned guest pruned")
	}
	b, err := p.JSON()
	if err != nil || !strings.Contains(string(b), `"status": "Conflict"`) || !strings.Contains(string(b), `"conflict": 1`) {
		t.Fatalf("plan JSON %s %v", b, err)
	}
	// A conflict is its status only: no action entry carries a flag beside it.
	if strings.Contains(string(b), `"conflict": true`) {
		t.Fatalf("plan JSON has a conflict flag besides the status: %s", b)
	}
}

func TestPruneIsOptIn(t *testing.T) {
	e := newEnv(t)
	e.write("vms/app-01.yaml", seedVMImage)
	e.write("isos/debian-12.yaml", seedIso)
	e.converge(e.engine(engine.Options{}))
	e.remove("vms/app-01.yaml")
	e.remove("isos/debian-12.yaml")
	e.write("isos/other.yaml", strings.Replace(strings.Replace(seedIso, "name: debian-12", "name: other", 1), "debian-12-amd64-netinst.iso", "other.iso", 1))

	// Prune off: reported, left alone.
	off := e.engine(engine.Options{})
	p, _ := e.apply(off)
	a := p.Find(engine.KindVirtualMachine, "app-01")
	if a == nil || a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "prune is off") {
		t.Fatalf("prune off: %+v", a)
	}
	if _, ok := e.sim.Guest(120); !ok {
		t.Fatal("deleted with prune off")
	}
	// Prune on: the owned VM (running: stopped first) and ISO go.
	on := e.engine(engine.Options{Prune: true})
	p = e.plan(on)
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Action != vocab.ActionDelete {
		t.Fatalf("prune on: %+v", a)
	}
	if a := p.Find(engine.KindIso, "debian-12-amd64-netinst"); a == nil || a.Action != vocab.ActionDelete {
		t.Fatalf("owned ISO not pruned: %+v", p.Actions)
	}
	e.converge(on)
	if _, ok := e.sim.Guest(120); ok {
		t.Fatal("not deleted with prune on")
	}
	if vols := strings.Join(e.sim.Volumes("pve1", "local"), " "); strings.Contains(vols, "debian-12-amd64-netinst") || !strings.Contains(vols, "other.iso") {
		t.Fatalf("volumes after prune: %s", vols)
	}
	e.assertInSync(on)
}

func TestIsoChecksumChangeAndForeignVolume(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "isos/debian-12.yaml", seedIso)
	// A changed checksum: the ISO is fetched again (and verified).
	old := e.isoData
	e.isoData = append([]byte("v2"), old...)
	e.write("isos/debian-12.yaml", strings.Replace(seedIso, "ISOSUM", sha256hex(e.isoData), 1))
	p := e.plan(eng)
	a := p.Find(engine.KindIso, "debian-12")
	if a.Action != vocab.ActionUpdate || !strings.Contains(a.Reason, "checksum") {
		t.Fatalf("checksum change: %+v", a)
	}
	e.converge(eng)
	e.assertInSync(eng)

	// A wrong checksum fails the download with Proxmox's message.
	e.write("isos/bad.yaml", strings.Replace(strings.Replace(strings.Replace(seedIso, "name: debian-12", "name: bad", 1),
		"debian-12-amd64-netinst.iso", "bad.iso", 1), "ISOSUM", strings.Repeat("ab", 32), 1))
	_, rep := e.apply(eng)
	if rep.Failed != 1 || !strings.Contains(rep.Results[0].Error, "checksum") {
		t.Fatalf("bad checksum: %+v", rep.Results)
	}

	// An ISO proxmops did not download is a conflict, never replaced.
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:iso/manual.iso", Size: 10}); err != nil {
		t.Fatal(err)
	}
	e.remove("isos/bad.yaml")
	e.write("isos/manual.yaml", strings.Replace(strings.Replace(seedIso, "name: debian-12", "name: manual", 1), "debian-12-amd64-netinst.iso", "manual.iso", 1))
	p = e.plan(eng)
	if a := p.Find(engine.KindIso, "manual"); !a.Conflicted() {
		t.Fatalf("foreign ISO: %+v", a)
	}
}

func TestFailingTaskSurfacesItsError(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.sim.SetFaults(pvesim.Faults{TaskFailRate: 1})
	_, rep := e.apply(eng)
	if rep.Failed != 1 {
		t.Fatalf("%+v", rep.Results)
	}
	var te *pve.TaskError
	if !errors.As(rep.Results[0].Err, &te) || te.ExitStatus == "" || te.ExitStatus == "OK" {
		t.Fatalf("not a task error: %v", rep.Results[0].Err)
	}
	if !strings.Contains(rep.Results[0].Error, te.ExitStatus) {
		t.Fatalf("error %q lacks the exit status %q", rep.Results[0].Error, te.ExitStatus)
	}
	e.sim.SetFaults(pvesim.Faults{})
	e.converge(eng)
	e.assertInSync(eng)
}

func TestLockTimeoutIsAbsorbedByTheNextPass(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.write("vms/app-01.yaml", strings.Replace(seedVMImage, "size: 20G", "size: 25G", 1))
	e.sim.SetFaults(pvesim.Faults{LockTimeoutRate: 1})
	_, rep := e.apply(eng)
	if rep.Failed != 1 || !rep.Results[0].Retry || !pve.IsLockTimeout(rep.Results[0].Err) {
		t.Fatalf("lock timeout not reported as transient: %+v", rep.Results)
	}
	e.sim.SetFaults(pvesim.Faults{})
	e.converge(eng)
	e.assertInSync(eng)
}

func TestDroppedCreateIsNotRepeated(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "POST", Path: "/nodes/{node}/qemu"})
	_, rep := e.apply(eng)
	if rep.Failed != 1 || !pve.IsUnknownOutcome(rep.Results[0].Err) {
		t.Fatalf("want an unknown outcome, got %+v", rep.Results)
	}
	// The create the server received keeps running. Real Proxmox keeps
	// "lock: create" in the config until it ends (the engine then reports
	// the VM Progressing); the simulator drops that lock while it imports
	// the disk, so wait for the task as the daemon's next pass would.
	testwait.For(t, "the dropped create to finish", 10*time.Second, func() bool {
		g, ok := e.sim.Guest(120)
		return ok && g.Config["scsi0"] != "" && g.Config["lock"] == ""
	})
	// The next pass re-reads the cluster: the VM exists (owned, created
	// from the request that got no answer), so it is updated, not created.
	p := e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Action == vocab.ActionCreate {
		t.Fatalf("planned a second create: %+v", a)
	} else {
		t.Logf("second pass: %s %s %s %v", a.Action, a.Status, a.Reason, a.Changes)
	}
	e.converge(eng)
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Fatalf("create sent %d times", n)
	}
}

func TestBlockedDependents(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"templates/debian-12-tpl.yaml", strings.Replace(seedTemplate, "debian-12-genericcloud-amd64.qcow2", "missing.raw", 1),
		"vms/app-02.yaml", seedClone,
	)
	_, rep := e.apply(eng)
	var tpl, vm engine.Result
	for _, r := range rep.Results {
		switch r.Name {
		case "debian-12-tpl":
			tpl = r
		case "app-02":
			vm = r
		}
	}
	if tpl.Status != vocab.StatusFailed || vm.Status != vocab.StatusFailed || vm.Blocked != "Template/debian-12-tpl" {
		t.Fatalf("template %+v, vm %+v", tpl, vm)
	}
	if !strings.Contains(vm.Error, "blocked") {
		t.Fatalf("vm error %q", vm.Error)
	}
	if _, ok := e.sim.Guest(130); ok {
		t.Fatal("the clone ran although its template failed")
	}
}

func TestSyncAnnotations(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	manual := strings.Replace(seedVMImage, "  tags: [prod, app]\n", "  tags: [prod, app]\n  annotations:\n    proxmops.dev/sync: manual\n", 1)
	e.write("vms/app-01.yaml", strings.Replace(manual, "cores: 2", "cores: 3", 1))
	p, rep := e.apply(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Action != vocab.ActionUpdate || rep.Failed != 0 || rep.Skipped != 1 {
		t.Fatalf("manual: %+v %+v", a, rep)
	}
	if g := e.guest(120); g.Config["cores"] != "2" {
		t.Fatal("manual resource changed")
	}
	disabled := strings.Replace(manual, "sync: manual", "sync: disabled", 1)
	e.write("vms/app-01.yaml", strings.Replace(disabled, "cores: 2", "cores: 3", 1))
	p = e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Action != vocab.ActionNone || a.Status != vocab.StatusUnknown {
		t.Fatalf("disabled: %+v", a)
	}
}

func TestPlanRequestsPerPass(t *testing.T) {
	e, clock := lagEnv(t)
	eng := e.convergedEngine(engine.Options{},
		"vms/app-01.yaml", seedVMImage,
		"isos/debian-12.yaml", seedIso,
	)
	for i := 0; i < 20; i++ {
		if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 1000 + i, Node: "pve2", Config: map[string]string{"name": "other", "cores": "1"}}); err != nil {
			t.Fatal(err)
		}
	}
	requests := func() int64 {
		t.Helper()
		before := e.client.Stats()
		p, err := eng.Plan(context.Background(), e.desired(), "x")
		if err != nil {
			t.Fatal(err)
		}
		got := e.client.Stats().Sub(before).Total()
		if got != p.Stats.Requests {
			t.Fatalf("%d requests, stats say %+v", got, p.Stats)
		}
		return got
	}
	// pvestatd has not reported the new VM yet: its power state is read
	// from status/current. 1 cluster/resources + 1 owned guest's config + 1
	// status + 1 storage listing; the unowned guests cost nothing.
	if got := requests(); got != 4 {
		t.Fatalf("%d requests before the status report, want 4", got)
	}
	// Once reported: 1 cluster/resources + 1 owned guest + 1 storage listing.
	clock.Advance(pvesim.DefaultStatusInterval)
	if got := requests(); got != 3 {
		t.Fatalf("%d requests after the status report, want 3", got)
	}
}

func TestOneShotDeleteChecksOwnership(t *testing.T) {
	e := newEnv(t)
	e.write("vms/app-01.yaml", strings.Replace(seedVMImage, "cloudInit:\n    user: debian\n    sshKeys:\n      - SSHKEY\n    ip: dhcp\n    nameserver: 1.1.1.1\n",
		"userData: |\n    #cloud-config\n    hostname: app-01\n", 1))
	e.write("isos/debian-12.yaml", seedIso)
	eng := e.engine(engine.Options{})
	e.converge(eng)
	seed := e.guest(120).Config["ide0"]
	if !strings.Contains(seed, "proxmops-cidata-120-") {
		t.Fatalf("no seed attached: %v", e.guest(120).Config)
	}
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 150, Node: "pve1", Config: map[string]string{"name": "db"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/db.yaml", strings.Replace(strings.Replace(seedVMImage, "name: app-01", "name: db", 1), "vmid: 120", "vmid: 150", 1))
	ctx := context.Background()
	if _, err := eng.Delete(ctx, e.desired(), engine.KindVirtualMachine, "db", nil); !errors.Is(err, engine.ErrNotOwned) {
		t.Fatalf("deleting an unowned guest: %v", err)
	}
	if _, ok := e.sim.Guest(150); !ok {
		t.Fatal("unowned guest deleted")
	}
	rep, err := eng.Delete(ctx, e.desired(), engine.KindVirtualMachine, "app-01", nil)
	if err != nil || rep.Applied != 1 {
		t.Fatalf("delete app-01: %v %+v", err, rep)
	}
	if _, ok := e.sim.Guest(120); ok {
		t.Fatal("app-01 still exists")
	}
	if strings.Contains(strings.Join(e.sim.Volumes("pve1", "local"), " "), "proxmops-cidata-120-") {
		t.Fatal("the VM's cloud-init seed was left behind")
	}
	rep, err = eng.Delete(ctx, e.desired(), engine.KindIso, "debian-12", nil)
	if err != nil || rep.Applied != 1 {
		t.Fatalf("delete iso: %v %+v", err, rep)
	}
	if strings.Contains(strings.Join(e.sim.Volumes("pve1", "local"), " "), "debian-12-amd64-netinst.iso") {
		t.Fatal("ISO still there")
	}
	if _, err := eng.Delete(ctx, e.desired(), engine.KindIso, "debian-12", nil); !errors.Is(err, engine.ErrNothingToDelete) {
		t.Fatalf("second delete: %v", err)
	}
}

func TestUserDataChangeReprovisionsTheSeed(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/web01.yaml", seedUserData)
	first := e.guest(140).Config["ide0"]
	e.write("vms/web01.yaml", strings.Replace(seedUserData, "web01.scm", "web02.scm", 1))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "web01")
	if a.Action != vocab.ActionUpdate || !a.NeedsReboot || !strings.Contains(strings.Join(changeFields(a), ","), "userData") {
		t.Fatalf("userData change: %+v", a)
	}
	before := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/status/reboot")
	e.converge(eng)
	e.assertInSync(eng)
	second := e.guest(140).Config["ide0"]
	if second == first || !strings.Contains(second, "proxmops-cidata-140-") {
		t.Fatalf("seed not replaced: %s -> %s", first, second)
	}
	vols := strings.Join(e.sim.Volumes("pve1", "local"), " ")
	if strings.Contains(vols, strings.Split(strings.TrimPrefix(first, "local:iso/"), ",")[0]) {
		t.Fatalf("old seed left behind: %s", vols)
	}
	if e.sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/status/reboot") != before+1 {
		t.Fatal("the VM was not rebooted to read the new seed (applyMode: reboot)")
	}
}

func TestPasswordByReference(t *testing.T) {
	e := newEnv(t)
	t.Setenv("APP01_PASSWORD", "s3cret-pass")
	e.write("vms/app-01.yaml", strings.Replace(seedVMImage, "    user: debian\n", "    user: debian\n    passwordFrom:\n      env: APP01_PASSWORD\n", 1))
	eng := e.engine(engine.Options{})
	e.converge(eng)
	if pw := e.guest(120).Config["cipassword"]; pw == "" || pw == "s3cret-pass" {
		t.Fatalf("cipassword %q: want the stored (hashed) password", pw)
	}
	e.assertInSync(eng)
	t.Setenv("APP01_PASSWORD", "")
	os.Unsetenv("APP01_PASSWORD")
	p := e.plan(eng)
	if a := p.Find(engine.KindVirtualMachine, "app-01"); a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "APP01_PASSWORD") {
		t.Fatalf("missing secret: %+v", a)
	}
}

func TestConvergeReplansAfterALostAnswer(t *testing.T) {
	convergeAfterLostCreate(t, 0)
}

// TestConvergeRetriesAFailedReread loses a create's answer and then makes
// the re-read of the cluster before the second pass fail more often than
// the client retries a GET: `proxmops apply` must wait and read again, not
// give up with the cluster half done (the demo's fault runs met this).
func TestConvergeRetriesAFailedReread(t *testing.T) {
	convergeAfterLostCreate(t, 4) // the first try and the client's three retries
}

// convergeAfterLostCreate drops the answer to a VM's create, fails the next
// rereadFailures cluster reads, and checks that converging still ends in
// sync with the create sent once.
func convergeAfterLostCreate(t *testing.T, rereadFailures int) {
	t.Helper()
	e, eng := withManifests(t, engine.Options{}, "vms/app-01.yaml", seedVMImage)
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "POST", Path: "/nodes/{node}/qemu"})
	p := e.plan(eng)
	for range rereadFailures {
		e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "GET", Path: "/cluster/resources"})
	}
	// The wait outlasts the lost create's task (about 120 ms here): the
	// simulator drops "lock: create" while it imports the disk, where
	// Proxmox keeps it and the engine would report the VM in progress.
	rep, err := eng.Converge(context.Background(), e.desired(), p, nil, engine.ConvergeOptions{Passes: 5, Wait: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 0 || rep.Applied != 1 {
		t.Fatalf("not converged: %+v", rep.Results)
	}
	e.assertInSync(eng)
	if n := e.sim.RequestCountFor("POST", "/nodes/{node}/qemu"); n != 1 {
		t.Fatalf("create sent %d times", n)
	}
}

// TestPassesConvergeUnderFaults runs passes the way the daemon does while
// the simulator answers 5% of requests with errors and drops 5% of
// connections after processing them: every pass re-reads the cluster, so
// the manifests converge and nothing is ever created twice.
func TestPassesConvergeUnderFaults(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"templates/debian-12-tpl.yaml", seedTemplate,
		"vms/app-01.yaml", seedVMImage,
		"vms/app-02.yaml", seedClone,
		"vms/app-03.yaml", seedLinkedClone,
		"isos/debian-12.yaml", seedIso,
	)
	rates := pvesim.FaultRates{ErrorRate: 0.05, DropRate: 0.05}
	e.sim.SetFaults(pvesim.Faults{FaultRates: rates})
	converged := false
	for pass := 0; pass < 15 && !converged; pass++ {
		p, err := eng.Plan(context.Background(), e.desired(), "faults")
		if err != nil {
			continue // the cluster read itself failed: the next pass tries again
		}
		if !p.HasChanges() {
			converged = true
			break
		}
		if _, err := eng.Apply(context.Background(), p, nil); err != nil {
			t.Fatal(err)
		}
		e.sim.WaitIdle() // the tasks of lost answers finish before the next pass reads
	}
	e.sim.SetFaults(pvesim.Faults{})
	if !converged {
		e.converge(eng)
	}
	e.assertInSync(eng)
	// Exactly the declared guests exist.
	for _, id := range []int{9000, 120, 130, 131} {
		e.guest(id)
	}
	res, err := e.client.ClusterResources(context.Background(), "vm")
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d guests on the cluster, want 4: %+v", len(res), res)
	}
}

func TestTemplateDriftIsReportedNotChanged(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{},
		"templates/debian-12-tpl.yaml", seedTemplate,
		"vms/app-03.yaml", seedLinkedClone,
	)
	e.write("templates/debian-12-tpl.yaml", strings.Replace(seedTemplate, "cores: 2", "cores: 4", 1))
	p, rep := e.apply(eng)
	a := p.Find(engine.KindTemplate, "debian-12-tpl")
	if a.Action != vocab.ActionNone || a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "cannot be changed in place") {
		t.Fatalf("template drift: %+v", a)
	}
	if len(a.Changes) != 1 || a.Changes[0].Field != "cores" || a.Changes[0].From != "2" || a.Changes[0].To != "4" {
		t.Fatalf("changes %+v", a.Changes)
	}
	if len(rep.Results) != 0 || e.guest(9000).Config["cores"] != "2" {
		t.Fatalf("template touched: %+v", rep.Results)
	}
	// The linked clone is untouched and still in sync.
	if a := p.Find(engine.KindVirtualMachine, "app-03"); a.Status != vocab.StatusSynced {
		t.Fatalf("clone: %+v", a)
	}
}
