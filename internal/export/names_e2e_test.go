package export_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A VM's or template's manifest name is its Proxmox name, so an export
// never writes a manifest that renames a guest: a VM or template whose
// name is not a manifest name, is missing, or is shared within its kind
// (here across nodes), is refused with the reason; a container keeps its hostname in
// spec.hostname beside a derived manifest name; a linked clone of a
// refused template names its base volume. What is written plans the
// adoption alone (no name or hostname change), and after the sync every
// guest keeps its name.
func TestExportNeverWritesAManifestThatRenames(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/nodes/pve1/qemu", "vmid", "100", "name", "web", "scsi0", "local-lvm:2")
	c.call("POST", "/nodes/pve2/qemu", "vmid", "101", "name", "web", "scsi0", "local-lvm:2")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "102", "name", "Db.Example", "scsi0", "local-lvm:2")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "103", "name", "db", "scsi0", "local-lvm:2")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "104", "scsi0", "local-lvm:2")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "9001", "name", "Base.TPL", "scsi0", "nfs-shared:2", "boot", "order=scsi0")
	c.call("POST", "/nodes/pve1/qemu/9001/template")
	c.call("POST", "/nodes/pve1/qemu/9001/clone", "newid", "140", "name", "app-03")
	if err := c.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: ctTemplate, Size: 120 << 20}); err != nil {
		t.Fatal(err)
	}
	c.call("POST", "/nodes/pve1/lxc", "vmid", "200", "hostname", "db", "ostemplate", ctTemplate, "rootfs", "local-lvm:2")
	c.call("POST", "/nodes/pve1/lxc", "vmid", "201", "hostname", "Cache.Example", "ostemplate", ctTemplate, "rootfs", "local-lvm:2")

	res := export1(t, c, export.Options{All: true})
	wantFiles(t, res, "containers/cache-example.yaml containers/db.yaml vms/app-03.yaml vms/db.yaml")
	want := map[string]string{"VMID 100 ": `2 guests of kind VirtualMachine are named "web" (VMID 100 on pve1, VMID 101 on pve2)`,
		"VMID 101 ": `named "web"`, "VMID 102 ": `its name "Db.Example" is not a manifest name`, "VMID 104 ": "has no name", "VMID 9001 ": `its name "Base.TPL" is not a manifest name`}
	if len(res.Refused) != len(want) {
		t.Errorf("refused: %q", res.Refused)
	}
	for _, r := range res.Refused {
		id := r[:strings.Index(r, "(")]
		if w, ok := want[id]; !ok || !strings.Contains(r, w) {
			t.Errorf("refused %q, want it to say %q", r, w)
		}
	}
	if y := file(t, res, "containers/cache-example.yaml"); !strings.Contains(y, "hostname: Cache.Example") {
		t.Errorf("the container's hostname:\n%s", y)
	}
	if y := file(t, res, "vms/app-03.yaml"); strings.Contains(y, "fromTemplate") || !strings.Contains(y, "source: nfs-shared:9001/base-9001-disk-0") {
		t.Errorf("the clone of the refused template:\n%s", y)
	}

	var tgz bytes.Buffer
	if err := res.WriteTarGz(&tgz, "x/", time.Unix(0, 0)); err != nil {
		t.Fatal(err)
	}
	if list := tarFile(t, tgz.Bytes(), "x/"+export.NotExportedFile); strings.Count(list, "\nVMID ") != len(want) || !strings.Contains(list, "Db.Example") {
		t.Errorf("the archive's %s:\n%s", export.NotExportedFile, list)
	}

	set, err := res.Load()
	if err != nil {
		t.Fatal(err)
	}
	d := engine.DesiredFromSet(set, nil)
	eng := engine.New(c.client, engine.Options{})
	p, err := eng.Plan(context.Background(), d, "export")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Actions) != 4 {
		t.Fatalf("actions: %d", len(p.Actions))
	}
	for _, a := range p.Actions {
		if !a.Adopt || a.Action != vocab.ActionUpdate || len(a.Changes) != 1 || a.Changes[0].Field != "tags" {
			t.Errorf("%s/%s: want the adoption alone, got %s %q %+v", a.Kind, a.Name, a.Action, a.Reason, a.Changes)
		}
	}
	if issues, err := res.Check(context.Background(), c.client); err != nil || len(issues) != 0 {
		t.Errorf("check: %v %q", err, issues)
	}
	if _, err := eng.Apply(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	if p, err = eng.Plan(context.Background(), d, "export"); err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if a.Status != vocab.StatusSynced {
			t.Errorf("after the sync %s/%s: %s %q", a.Kind, a.Name, a.Status, a.Reason)
		}
	}
	if n := c.config(103, "qemu")["name"]; n != "db" {
		t.Errorf("VM 103 renamed to %q", n)
	}
	if h := c.config(201, "lxc")["hostname"]; h != "Cache.Example" {
		t.Errorf("container 201 renamed to %q", h)
	}
}

// tarFile reads one file of a tar.gz archive ("" when it is not there).
func tarFile(t *testing.T, tgz []byte, name string) string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(tgz))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err != nil {
			return ""
		}
		if h.Name == name {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			return string(b)
		}
	}
}
