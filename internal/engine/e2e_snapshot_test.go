package engine_test

import (
	"context"
	"errors"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const snapVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: snappy
  node: pve1
spec:
  vmid: 330
  cores: CORES
  memory: 512
  disks:
    - storage: STORAGE
      size: 2G
  net:
    - bridge: vmbr0
  state: STATE
  snapshots:
    beforeChange: true
    keep: 2
`

func snapVMYAML(cores, storage, state string) string {
	r := strings.NewReplacer("CORES", cores, "STORAGE", storage, "STATE", state)
	return r.Replace(snapVM)
}

func snapshotNames(t *testing.T, e *env, typ string, vmid int) (own, other []pve.GuestSnapshot) {
	t.Helper()
	list, err := e.client.Snapshots(context.Background(), typ, "pve1", vmid)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list {
		switch {
		case s.Name == "current":
		case strings.HasPrefix(s.Name, engine.SnapshotPrefix):
			own = append(own, s)
		default:
			other = append(other, s)
		}
	}
	return own, other
}

// Before each change of an owned guest with snapshots.beforeChange the
// plan shows the snapshot step and the apply takes it, described with the
// commit and the change; proxmops keeps its newest `keep` snapshots and
// never touches one a person took. A start alone takes none.
func TestSnapshotsBeforeChangePrunedToKeep(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vm.yaml", snapVMYAML("1", "local-lvm", "stopped"))
	ctx := context.Background()
	e.mustApply(eng)
	if own, _ := snapshotNames(t, e, "qemu", 330); len(own) != 0 {
		t.Fatalf("a create took snapshots: %v", own)
	}
	upid, err := e.client.CreateSnapshot(ctx, "qemu", "pve1", 330, "by-hand", "a person's snapshot")
	if err == nil {
		_, err = e.client.WaitTask(ctx, upid, nil)
	}
	if err != nil {
		t.Fatal(err)
	}

	for i, cores := range []string{"2", "3", "4"} {
		e.write("vm.yaml", snapVMYAML(cores, "local-lvm", "stopped"))
		p := e.plan(eng)
		text := planText(p)
		a := p.Find(engine.KindVirtualMachine, "snappy")
		if a.Action != vocab.ActionUpdate || len(a.Changes) == 0 || a.Changes[0].Field != "snapshot" ||
			!strings.Contains(text, "+ snapshot: proxmops-<UTC time> before the change (keeps the newest 2 of proxmops' snapshots)") {
			t.Fatalf("change %d: the plan does not show the snapshot step:\n%s", i, text)
		}
		e.mustApply(eng)
		own, other := snapshotNames(t, e, "qemu", 330)
		want := min(i+1, 2)
		if len(own) != want || len(other) != 1 || other[0].Name != "by-hand" {
			t.Fatalf("after change %d: proxmops snapshots %v (want %d), others %v", i, own, want, other)
		}
		newest := own[0]
		for _, s := range own {
			if s.SnapTime > newest.SnapTime || s.SnapTime == newest.SnapTime && s.Name > newest.Name {
				newest = s
			}
		}
		if !strings.Contains(newest.Description, "before the update of VirtualMachine/snappy (cores)") || !strings.Contains(newest.Description, "for commit test") {
			t.Fatalf("snapshot description %q", newest.Description)
		}
		if cfg, _ := e.client.QemuConfig(ctx, "pve1", 330, false); cfg["cores"] != cores {
			t.Fatalf("cores %q after change %d", cfg["cores"], i)
		}
	}
	e.requireInSync(eng)

	// A start is no change of the guest: no snapshot.
	e.write("vm.yaml", snapVMYAML("4", "local-lvm", "running"))
	before, _ := snapshotNames(t, e, "qemu", 330)
	e.mustApply(eng)
	after, _ := snapshotNames(t, e, "qemu", 330)
	if len(after) != len(before) || after[0].Name != before[0].Name {
		t.Fatalf("a start took a snapshot: %v -> %v", before, after)
	}
}

// rootPut changes a guest's config as root@pam logged in with a password
// (a person adding a bind mount, which an API token may not).
func rootPut(t *testing.T, e *env, path string, form url.Values) {
	t.Helper()
	resp := rootRequest(t, e, "PUT", path, form)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("PUT %s: %s", path, resp.Status)
	}
}

const snapCT = `apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: snapct
  node: pve1
spec:
  vmid: 331
  template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
  cores: CORES
  rootfs:
    storage: STORAGE
    size: 2G
  net:
    - bridge: vmbr0
      ip: dhcp
  snapshots:
    beforeChange: true
`

// A guest Proxmox cannot snapshot (a raw VM disk or a container volume on
// NFS, a bind mount) is refused in the plan before anything happens, with
// the reason; the simulator refuses the snapshot itself as Proxmox does,
// so applying the change blindly would fail after the fact.
func TestUnsnapshottableGuestRefusedInThePlan(t *testing.T) {
	tests := []struct {
		name, kind, typ string
		vmid            int
		manifest        func(cores string) string
		tweak           func(t *testing.T, e *env)
		wantNote        string
		wantReason      string
	}{
		{"VM with a raw disk added on NFS by hand", engine.KindVirtualMachine, "qemu", 330,
			func(c string) string { return snapVMYAML(c, "local-lvm", "stopped") },
			func(t *testing.T, e *env) {
				upid, err := e.client.QemuSetConfigAsync(context.Background(), "pve1", 330, pve.NewParams().Set("scsi1", "nfs-shared:1,format=raw"))
				if err == nil {
					_, err = e.client.WaitTask(context.Background(), upid, nil)
				}
				if err != nil {
					t.Fatal(err)
				}
			}, "", "scsi1 (nfs-shared:330/vm-330-disk-0.raw) is a raw volume on nfs storage, which snapshots qcow2 only"},
		{"container on NFS", engine.KindContainer, "lxc", 331,
			func(c string) string { return strings.NewReplacer("CORES", c, "STORAGE", "nfs-shared").Replace(snapCT) },
			nil, "rootfs on nfs-shared would be a raw volume on nfs storage",
			"rootfs (nfs-shared:331/vm-331-disk-0.raw) is a raw volume on nfs storage"},
		{"container with a bind mount added by hand", engine.KindContainer, "lxc", 331,
			func(c string) string { return strings.NewReplacer("CORES", c, "STORAGE", "local-lvm").Replace(snapCT) },
			func(t *testing.T, e *env) {
				rootPut(t, e, "/nodes/pve1/lxc/331/config", url.Values{"mp0": {"/mnt/data,mp=/data"}})
			}, "", "mp0 is a bind or device mount of /mnt/data, which Proxmox never snapshots"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.sim.AddVolume(pvesimVolume("local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst")); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			e.write("g.yaml", tt.manifest("1"))
			eng := e.engine(engine.Options{})
			p := e.plan(eng)
			for _, a := range p.Actions {
				noted := strings.Contains(a.Reason, "note: snapshots.beforeChange cannot work for this guest: "+tt.wantNote)
				if a.Action != vocab.ActionCreate || noted != (tt.wantNote != "") {
					t.Fatalf("create: want a note %q (or none when empty):\n%s", tt.wantNote, planText(p))
				}
			}
			e.mustApply(eng)
			if tt.tweak != nil {
				tt.tweak(t, e)
			}
			// Proxmox itself refuses the snapshot.
			upid, err := e.client.CreateSnapshot(ctx, tt.typ, "pve1", tt.vmid, "probe", "")
			if err == nil {
				_, err = e.client.WaitTask(ctx, upid, nil)
			}
			if err == nil || !strings.Contains(err.Error(), "snapshot feature is not available") {
				t.Fatalf("simulator snapshot: %v", err)
			}

			e.write("g.yaml", tt.manifest("2"))
			p = e.plan(eng)
			var a *engine.Action
			for _, x := range p.Actions {
				if x.Kind == tt.kind {
					a = x
				}
			}
			if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, tt.wantReason) || !strings.Contains(a.Reason, "not applied: snapshots.beforeChange") {
				t.Fatalf("change: want a refusal naming %q:\n%s", tt.wantReason, planText(p))
			}
			_, rep := e.apply(eng)
			if rep.Failed != 1 {
				t.Fatalf("apply: %+v", rep)
			}
			var cores string
			if tt.typ == "qemu" {
				cfg, _ := e.client.QemuConfig(ctx, "pve1", tt.vmid, false)
				cores = cfg["cores"]
			} else {
				cores = lxcConfig(t, e, "pve1", tt.vmid)["cores"]
			}
			if cores != "1" {
				t.Fatalf("the change was applied anyway: cores %q", cores)
			}
		})
	}
}

// Rollback goes back to the newest proxmops snapshot by default (or a
// named one), stops and restarts a running guest as Proxmox requires, and
// leaves the guest OutOfSync against Git; with sync manual nothing
// re-applies it, with auto the next apply does (after a new snapshot).
func TestRollbackToProxmopsSnapshot(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vm.yaml", snapVMYAML("1", "local-lvm", "running"))
	ctx := context.Background()
	e.mustApply(eng)
	// A change to a running VM's cores waits for a reboot: use reboot mode.
	withReboot := func(cores string) string {
		return strings.Replace(snapVMYAML(cores, "local-lvm", "running"), "  state: running\n", "  state: running\n  applyMode: reboot\n", 1)
	}
	e.write("vm.yaml", withReboot("2"))
	e.mustApply(eng)
	e.requireInSync(eng)
	own, _ := snapshotNames(t, e, "qemu", 330)
	if len(own) != 1 {
		t.Fatalf("snapshots %v", own)
	}

	list, err := eng.GuestSnapshots(ctx, e.desired(), engine.KindVirtualMachine, "snappy")
	if err != nil || len(list.Snapshots) != 1 || !list.Snapshots[0].Proxmops || list.Current != own[0].Name || !list.Running {
		t.Fatalf("GuestSnapshots: %+v %v", list, err)
	}
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", "nope", nil); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("rollback to a missing snapshot: %v", err)
	}
	var steps []string
	res, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", "", func(m string) { steps = append(steps, m) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Snapshot != own[0].Name || !res.Started || res.SyncPolicy != vocab.SyncAuto || !strings.Contains(res.Next, "next pass re-applies") {
		t.Fatalf("result %+v", res)
	}
	if len(steps) == 0 || !strings.Contains(steps[0], "Proxmox stops the running guest first") {
		t.Fatalf("progress %v", steps)
	}
	g := e.guest(330)
	if !g.Running || g.Config["cores"] != "1" {
		t.Fatalf("after rollback: running %v, cores %q", g.Running, g.Config["cores"])
	}
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "snappy")
	if a.Status != vocab.StatusOutOfSync || a.Action == vocab.ActionNone {
		t.Fatalf("after rollback the plan must show the difference:\n%s", planText(p))
	}

	// Manual sync: reported, not re-applied.
	manual := strings.Replace(withReboot("2"), "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/sync: manual\n", 1)
	e.write("vm.yaml", manual)
	res, err = eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", own[0].Name, nil)
	if err != nil || res.SyncPolicy != vocab.SyncManual || !strings.Contains(res.Next, "leaves it as rolled back") {
		t.Fatalf("manual rollback: %+v %v", res, err)
	}
	_, rep := e.apply(eng)
	if rep.Applied != 0 || e.guest(330).Config["cores"] != "1" {
		t.Fatalf("manual sync re-applied the manifest: %+v", rep)
	}

	// Auto sync: the next apply re-applies it, after a new snapshot.
	e.write("vm.yaml", withReboot("2"))
	e.mustApply(eng)
	if e.guest(330).Config["cores"] != "2" {
		t.Fatal("auto sync did not re-apply the manifest")
	}
	if own, _ := snapshotNames(t, e, "qemu", 330); len(own) != 2 {
		t.Fatalf("re-apply after rollback: snapshots %v", own)
	}
}

// Rollback refuses guests proxmops does not own and kinds without
// snapshots.
func TestRollbackRefusals(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vm.yaml", snapVMYAML("1", "local-lvm", "stopped"))
	ctx := context.Background()
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", "", nil); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("rollback of a guest not created yet: %v", err)
	}
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 330, Node: "pve1", Config: map[string]string{"name": "snappy"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", "", nil); !errors.Is(err, api.ErrNotOwned) {
		t.Fatalf("rollback of a guest proxmops does not own: %v", err)
	}
	if _, err := eng.GuestSnapshots(ctx, e.desired(), engine.KindIso, "x"); !errors.Is(err, api.ErrInvalid) {
		t.Fatalf("snapshots of an Iso: %v", err)
	}
}

// The snapshot step needs VM.Snapshot on the guest: a token without it gets
// the change refused in the plan, nothing half done; the settings' list of
// needs names it for a guest with snapshots.beforeChange.
func TestSnapshotStepNeedsVMSnapshot(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut("VM.Snapshot") })
	e.write("vm.yaml", snapVMYAML("1", "local-lvm", "stopped"))
	eng := e.engine(engine.Options{})
	e.mustApply(eng)
	e.write("vm.yaml", snapVMYAML("2", "local-lvm", "stopped"))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "snappy")
	if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, "the API token lacks VM.Snapshot on /vms/330, needed to take and prune snapshots before the change") {
		t.Fatalf("want a privilege refusal:\n%s", planText(p))
	}
	found := false
	for _, n := range engine.PrivilegeNeeds(e.desired()) {
		found = found || n.Privilege == "VM.Snapshot" && n.Path == "/vms/330"
	}
	if !found {
		t.Fatalf("PrivilegeNeeds lacks VM.Snapshot: %+v", engine.PrivilegeNeeds(e.desired()))
	}
}

// A provisioning re-run is a change: the snapshot before it keeps the
// provisioning record of the state it saves, and a rollback puts that
// record back in the guest's description (Proxmox keeps the current
// description), so the plan wants the newer provisioning again instead of
// trusting the rolled-back guest.
func TestSnapshotBeforeProvisioningRerunAndRollbackRestoresItsRecord(t *testing.T) {
	p := newProvEnv(t)
	ctx := context.Background()
	p.writeRepo("files/broker.conf", "listener 1883\n")
	p.writeRepo("lib/broker/setup.sh", "echo setup ran\n")
	manifest := strings.ReplaceAll(brokerCT, "PORT", strconv.Itoa(p.port)) + "  snapshots:\n    beforeChange: true\n"
	p.write("broker.yaml", manifest)
	if r := p.applyOne(engine.KindContainer, "broker"); r.Status != vocab.StatusSynced {
		t.Fatalf("create: %+v", r)
	}
	if own, _ := snapshotNames(t, p.env, "lxc", 310); len(own) != 0 {
		t.Fatalf("the create and its first provisioning took snapshots: %v", own)
	}
	first := lxcConfig(t, p.env, "pve1", 310)["description"]

	p.writeRepo("files/broker.conf", "listener 8883\n")
	plan := p.plan(p.eng)
	a := plan.Find(engine.KindContainer, "broker")
	if a.Action != vocab.ActionUpdate || a.Changes[0].Field != "snapshot" {
		t.Fatalf("re-provisioning without a snapshot step:\n%s", planText(plan))
	}
	if r := p.applyOne(engine.KindContainer, "broker"); r.Status != vocab.StatusSynced {
		t.Fatalf("re-provision: %+v", r)
	}
	own, _ := snapshotNames(t, p.env, "lxc", 310)
	firstRecord := first[strings.Index(first, "proxmops-provisioned:"):]
	if len(own) != 1 || !strings.Contains(own[0].Description, "before the update of Container/broker (provision)") ||
		!strings.HasSuffix(own[0].Description, "\n"+firstRecord) {
		t.Fatalf("snapshot %+v, want the first record %q", own, firstRecord)
	}
	p.assertInSync(p.eng)

	if _, err := p.eng.Rollback(ctx, p.desired(), engine.KindContainer, "broker", "", nil); err != nil {
		t.Fatal(err)
	}
	if got := lxcConfig(t, p.env, "pve1", 310)["description"]; got != first {
		t.Fatalf("description after rollback %q, want %q", got, first)
	}
	a = p.plan(p.eng).Find(engine.KindContainer, "broker")
	if a.Status != vocab.StatusOutOfSync || !strings.Contains(a.Reason, "provision: inputs changed (files /etc/mosquitto/conf.d/proxmops.conf)") {
		t.Fatalf("after rollback: %s %s: %s", a.Action, a.Status, a.Reason)
	}
}
