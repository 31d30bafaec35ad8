package export_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/pvesim"
)

// What a manifest cannot say as it is becomes a NOTE, and the tree still
// validates: a cloud-init drive without settings, an IDE
// disk, a CD-ROM off proxmops' slot, a container without a hostname.
func TestExportNotesWhatItCannotSay(t *testing.T) {
	c := newCluster(t)
	for _, g := range []pvesim.GuestSpec{
		{VMID: 105, Node: "pve1", Config: map[string]string{"name": "legacy-105", "scsi0": "local-lvm:vm-105-disk-0,size=4G", "ide1": "local-lvm:vm-105-disk-1,size=1G",
			"ide2": "local-lvm:vm-105-cloudinit,media=cdrom", "ide3": "local:iso/debian.iso,media=cdrom", "boot": "order=scsi0"}},
		{VMID: 205, Node: "pve1", Type: "lxc", Config: map[string]string{"rootfs": "local-lvm:vm-205-disk-0,size=2G", "unprivileged": "1"}},
	} {
		if err := c.sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	res := export1(t, c, export.Options{VMIDs: "105,205"})
	vm, ct := file(t, res, "vms/legacy-105.yaml"), file(t, res, "containers/ct205.yaml")
	for _, want := range []string{"NOTE: disk ide1", "NOTE: ide3 holds local:iso/debian.iso", "cloudInit: {}"} {
		if !strings.Contains(vm, want) {
			t.Errorf("vms/legacy-105.yaml lacks %q:\n%s", want, vm)
		}
	}
	if !strings.Contains(ct, "NOTE: the container has no hostname: the plan sets it to ct205") {
		t.Errorf("containers/ct205.yaml:\n%s", ct)
	}
	issues, err := res.Check(context.Background(), c.client)
	if err != nil || len(issues) != 2 || !strings.Contains(strings.Join(issues, "\n"), "hostname:  -> ct205") {
		t.Fatalf("check: %v\n%s", err, strings.Join(issues, "\n"))
	}
}
