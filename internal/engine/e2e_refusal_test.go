package engine_test

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func vmManifest(name, node, vmid, body string) string {
	return `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: ` + name + `
  node: ` + node + `
spec:
  vmid: ` + vmid + `
  cores: 1
  memory: 512
` + body
}

// What Proxmox would refuse and the observation shows is planned as a Failed
// create with Proxmox's reason: never applied, the plan has changes, the
// apply reports the failure.
func TestForeseeableRefusalsArePlannedAsFailures(t *testing.T) {
	e := newEnv(t)
	if err := e.sim.SetStorage(pvesim.StorageSpec{ID: "fast", Type: "lvmthin", Content: []string{"images", "rootdir"}, Nodes: []string{"pve2"}}); err != nil {
		t.Fatal(err)
	}
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	e.write("templates/shared-tpl.yaml", strings.NewReplacer("debian-12-tpl", "shared-tpl", "9000", "9002", "local-lvm", "nfs-shared").Replace(seedTemplate))
	eng := e.engine(engine.Options{Concurrency: 2})
	e.converge(eng)

	tests := []struct {
		file, kind, name, yaml, want string
	}{
		{"vms/a.yaml", engine.KindVirtualMachine, "full-clone-local", vmManifest("full-clone-local", "pve2", "301",
			"  fromTemplate: debian-12-tpl\n  disks:\n    - storage: local-lvm\n"), "can't clone to non-shared storage 'local-lvm'"},
		{"vms/b.yaml", engine.KindVirtualMachine, "clone-no-disk-other-node", vmManifest("clone-no-disk-other-node", "pve2", "302",
			"  fromTemplate: debian-12-tpl\n"), "can't clone VM to node 'pve2' (VM uses local storage)"},
		{"vms/c.yaml", engine.KindVirtualMachine, "clone-to-shared", vmManifest("clone-to-shared", "pve3", "303",
			"  fromTemplate: debian-12-tpl\n  disks:\n    - storage: nfs-shared\n"), "can't clone VM to node 'pve3' (VM uses local storage)"},
		{"vms/d.yaml", engine.KindVirtualMachine, "no-node", vmManifest("no-node", "pve9", "304",
			"  disks:\n    - storage: local-lvm\n      size: 4G\n"), "node pve9 does not exist; the cluster has pve1, pve2, pve3"},
		{"vms/e.yaml", engine.KindVirtualMachine, "disk-on-dir", vmManifest("disk-on-dir", "pve1", "305",
			"  disks:\n    - storage: local\n      size: 4G\n"), "storage 'local' does not support vm images"},
		{"vms/f.yaml", engine.KindVirtualMachine, "disk-elsewhere", vmManifest("disk-elsewhere", "pve1", "306",
			"  disks:\n    - storage: fast\n      size: 4G\n"), "storage 'fast' is not available on node 'pve1'"},
		{"vms/g.yaml", engine.KindVirtualMachine, "disk-nowhere", vmManifest("disk-nowhere", "pve1", "307",
			"  disks:\n    - storage: nope\n      size: 4G\n"), "storage 'nope' does not exist or is disabled"},
		{"vms/h.yaml", engine.KindVirtualMachine, "import-to-lvm", vmManifest("import-to-lvm", "pve1", "308",
			"  image:\n    source: FILES/images/x.qcow2\n    storage: local-lvm\n  disks:\n    - storage: local-lvm\n"), "can't upload to storage type 'lvmthin', not a file based storage!"},
		{"isos/i.yaml", engine.KindIso, "iso-on-lvm", `apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: iso-on-lvm
spec:
  source: FILES/isos/x.iso
  node: pve1
  storage: local-lvm
`, "can't upload to storage type 'lvmthin', not a file based storage!"},
		{"cts/j.yaml", engine.KindContainer, "ct-on-dir", `apiVersion: proxmops.dev/v1
kind: Container
metadata:
  name: ct-on-dir
  node: pve1
spec:
  vmid: 309
  rootfs:
    storage: local
    size: 4G
  template: local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst
`, "storage 'local' does not support container directories"},
		{"cttpls/k.yaml", engine.KindContainerTemplate, "tpl-on-lvm", `apiVersion: proxmops.dev/v1
kind: ContainerTemplate
metadata:
  name: tpl-on-lvm
spec:
  node: pve1
  appliance: debian-12-standard_12.7-1_amd64.tar.zst
  storage: local-lvm
`, "storage 'local-lvm' does not support templates"},
	}
	for _, tt := range tests {
		e.write(tt.file, tt.yaml)
	}
	// Allowed: a clone on the template's node, and a clone of a template on
	// shared storage to another node.
	e.write("vms/ok1.yaml", vmManifest("same-node", "pve1", "310", "  fromTemplate: debian-12-tpl\n"))
	e.write("vms/ok2.yaml", vmManifest("shared-other-node", "pve2", "311", "  fromTemplate: shared-tpl\n"))

	p := e.plan(eng)
	for _, tt := range tests {
		a := p.Find(tt.kind, tt.name)
		if a == nil {
			t.Errorf("%s: not planned", tt.name)
			continue
		}
		if a.Status != vocab.StatusFailed || a.Action != vocab.ActionCreate || a.Reason != tt.want {
			t.Errorf("%s: planned %s %s %q, want a failed create: %q", tt.name, a.Action, a.Status, a.Reason, tt.want)
		}
	}
	for _, name := range []string{"same-node", "shared-other-node"} {
		if a := p.Find(engine.KindVirtualMachine, name); a == nil || a.Status != vocab.StatusOutOfSync || !a.Runnable() {
			t.Errorf("%s is refused: %+v", name, a)
		}
	}
	if !p.HasChanges() {
		t.Error("a plan with refused resources says it has no changes")
	}
	rep, err := eng.Apply(t.Context(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, r := range rep.Results {
		if r.Status == vocab.StatusFailed {
			failed[r.Name] = r.Error
		}
	}
	for _, tt := range tests {
		if failed[tt.name] != tt.want {
			t.Errorf("%s: apply reported %q, want %q", tt.name, failed[tt.name], tt.want)
		}
	}
	if rep.Failed != len(tests) || rep.Applied != 2 {
		t.Errorf("apply: %d applied, %d failed, want 2 and %d: %v", rep.Applied, rep.Failed, len(tests), failed)
	}
	for _, vmid := range []int{301, 302, 303, 304, 305, 306, 307, 308, 309} {
		if _, ok := e.sim.Guest(vmid); ok {
			t.Errorf("guest %d was created", vmid)
		}
	}
	if g := e.guest(311); g.Node != "pve2" {
		t.Errorf("the shared clone is on %s", g.Node)
	}
}

// A new disk on a storage Proxmox would refuse fails the plan of an
// existing VM; nothing of the update is sent.
func TestRefusedNewDiskFailsTheUpdate(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{Concurrency: 2}, "vms/a.yaml", vmManifest("app", "pve1", "320", "  disks:\n    - storage: local-lvm\n      size: 4G\n"))
	twoDisks := vmManifest("app", "pve1", "320", "  disks:\n    - storage: local-lvm\n      size: 4G\n    - storage: local\n      size: 4G\n")
	e.write("vms/a.yaml", strings.Replace(twoDisks, "cores: 1", "cores: 2", 1))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "app")
	if a.Status != vocab.StatusFailed || a.Action != vocab.ActionUpdate || a.Reason != "storage 'local' does not support vm images" || a.Runnable() {
		t.Fatalf("planned %s %s %q", a.Action, a.Status, a.Reason)
	}
	rep, err := eng.Apply(t.Context(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Failed != 1 {
		t.Errorf("apply: %+v", rep.Results)
	}
	if g := e.guest(320); g.Config["cores"] != "1" || g.Config["scsi1"] != "" {
		t.Errorf("the refused update was applied: %v", g.Config)
	}
}
