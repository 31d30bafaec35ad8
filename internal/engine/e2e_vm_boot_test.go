package engine_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const installerVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: debian-install
  node: pve1
spec:
  vmid: 400
  cores: 2
  memory: 2048
  iso: debian-12
  disks:
    - slot: virtio0
      storage: local-lvm
      size: 16G
  net:
    - bridge: vmbr0
  applyMode: reboot
  state: running
`

func findChange(a *engine.Action, field string) *vocab.Change {
	for i := range a.Changes {
		if a.Changes[i].Field == field {
			return &a.Changes[i]
		}
	}
	return nil
}

// QEMU runs with -boot strict=on: the installer's ISO boots only if its
// drive is in the boot order, after the blank disk.
func TestInstallerISOIsInTheBootOrder(t *testing.T) {
	e, eng := withManifests(t, engine.Options{Concurrency: 2},
		"isos/debian-12.yaml", seedIso,
		"vms/installer.yaml", installerVM,
	)

	p := e.plan(eng)
	if c := findChange(p.Find(engine.KindVirtualMachine, "debian-install"), "boot"); c == nil || c.To != "order=virtio0;ide0" {
		t.Fatalf("create plan boot row = %+v", c)
	}
	e.converge(eng)
	e.assertInSync(eng)
	g := e.guest(400)
	if g.Config["boot"] != "order=virtio0;ide0" {
		t.Errorf("boot = %q", g.Config["boot"])
	}
	if g.KVM == nil || !slices.Equal(g.KVM.BootOrder, []string{"virtio0", "ide0"}) {
		t.Fatalf("the VM boots from %+v, want virtio0 then the ISO on ide0", g.KVM)
	}

	// Someone drops the ISO from the order: the plan shows it as a field
	// row, the apply puts it back and reboots onto it.
	if err := e.sim.MutateGuest(400, func(conf map[string]string) { conf["boot"] = "order=virtio0;net0" }); err != nil {
		t.Fatal(err)
	}
	p = e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "debian-install")
	if c := findChange(a, "boot"); a.Action != vocab.ActionUpdate || c == nil || c.From != "order=virtio0;net0" || c.To != "order=virtio0;ide0" {
		t.Fatalf("drift plan: %s %v", a.Action, a.Changes)
	}
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(400); g.Config["boot"] != "order=virtio0;ide0" || g.KVM == nil || !slices.Equal(g.KVM.BootOrder, []string{"virtio0", "ide0"}) {
		t.Errorf("after the fix: boot %q, booted with %+v", g.Config["boot"], g.KVM)
	}
}

// An ISO declared on an existing VM joins its order (Proxmox appends a new
// CD-ROM to the order itself; the engine's order must agree with it).
func TestISOAddedToAnExistingVMBoots(t *testing.T) {
	e := newEnv(t)
	e.write("isos/debian-12.yaml", seedIso)
	noISO := strings.Replace(installerVM, "  iso: debian-12\n", "", 1)
	e.write("vms/installer.yaml", noISO)
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(400); g.Config["boot"] != "order=virtio0" {
		t.Fatalf("boot without ISO = %q", g.Config["boot"])
	}
	e.write("vms/installer.yaml", installerVM)
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(400); g.KVM == nil || !slices.Equal(g.KVM.BootOrder, []string{"virtio0", "ide0"}) {
		t.Errorf("booted with %+v, config %v", g.KVM, g.Config)
	}
}

// A template built without cpu runs kvm64: a clone declaring
// x86-64-v2-AES must get it set.
func TestCloneOfTemplateWithoutCPUGetsTheDeclaredCPU(t *testing.T) {
	e := newEnv(t)
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	e.write("vms/app.yaml", `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-05
  node: pve1
spec:
  vmid: 150
  fromTemplate: debian-12-tpl
  cpu: x86-64-v2-AES
  state: running
`)
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)
	e.assertInSync(eng)
	if tpl := e.guest(9000); tpl.Config["cpu"] != "" {
		t.Fatalf("the template has cpu %q; the test needs one without", tpl.Config["cpu"])
	}
	g := e.guest(150)
	if g.Config["cpu"] != "x86-64-v2-AES" {
		t.Errorf("clone cpu = %q, want x86-64-v2-AES", g.Config["cpu"])
	}
	if g.KVM == nil || g.KVM.CPU != "x86-64-v2-AES" {
		t.Errorf("the clone runs %+v", g.KVM)
	}
}

// A clone of a template whose legacy boot letters put the CD-ROM first
// ("dcn" and bootdisk) gets an explicit order; Proxmox drops bootdisk with
// it, and the plan settles. Legacy "cdn" boots the bootdisk first: it is
// left alone.
func TestLegacyBootOrderIsConverted(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 9100, Node: "pve1", Config: map[string]string{
		"name": "legacy-tpl", "template": "1", "boot": "dcn", "bootdisk": "scsi0",
		"scsi0": "local-lvm:base-9100-disk-0,size=4G", "ide2": "none,media=cdrom",
		"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/a.yaml", `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: from-legacy
  node: pve1
spec:
  vmid: 160
  fromTemplate: legacy-tpl
  state: running
`)
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)
	e.assertInSync(eng)
	g := e.guest(160)
	if g.Config["boot"] != "order=scsi0" || g.Config["bootdisk"] != "" {
		t.Errorf("boot %q bootdisk %q", g.Config["boot"], g.Config["bootdisk"])
	}
	if g.KVM == nil || !slices.Equal(g.KVM.BootOrder, []string{"scsi0"}) {
		t.Errorf("booted with %+v", g.KVM)
	}
}

func TestLegacyDiskFirstBootOrderIsLeftAlone(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 9100, Node: "pve1", Config: map[string]string{
		"name": "legacy-tpl", "template": "1", "boot": "cdn", "bootdisk": "scsi0",
		"scsi0": "local-lvm:base-9100-disk-0,size=4G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	e.write("vms/a.yaml", "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: from-legacy\n  node: pve1\nspec:\n  vmid: 160\n  fromTemplate: legacy-tpl\n")
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)
	e.assertInSync(eng)
	if g := e.guest(160); g.Config["boot"] != "cdn" {
		t.Errorf("boot %q", g.Config["boot"])
	}
}
