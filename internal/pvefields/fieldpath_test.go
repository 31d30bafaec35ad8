package pvefields

import (
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

func TestChangePathsComeFromTheManifestFields(t *testing.T) {
	vm := &manifest.VirtualMachine{Spec: manifest.VirtualMachineSpec{
		Disks: []manifest.Disk{{Slot: "scsi0"}, {Slot: "virtio1"}},
		Net:   []manifest.NIC{{Slot: "net0"}, {Slot: "net3"}}, // a slot set by hand is not the index
	}}
	ct := &manifest.Container{Spec: manifest.ContainerSpec{
		Mountpoints: []manifest.Mountpoint{{Slot: "mp2"}},
		Net:         []manifest.ContainerNIC{{Slot: "net0"}},
	}}
	vnet := &manifest.SdnVnet{Spec: manifest.SdnVnetSpec{Zone: "z1"}}
	tests := []struct {
		r     manifest.Resource
		field string
		want  string
	}{
		{vm, "cores", "spec.cores"}, // from the embedded hardware struct
		{vm, "memory", "spec.memory"},
		{vm, "net3", "spec.net[1]"},
		{vm, "net3.bridge", "spec.net[1].bridge"},
		{vm, "net3.nosuchkey", "spec.net[1]"},
		{vm, "virtio1.size", "spec.disks[1].size"},
		{vm, "tags", "metadata.tags"},
		{vm, "net1", ""}, // no such entry
		{vm, "boot", ""}, // derived by the engine, no manifest field
		{ct, "mp2.storage", "spec.mountpoints[0].storage"},
		{ct, "net0.tag", "spec.net[0].tag"},
		{ct, "rootfs.size", "spec.rootfs"},
		{ct, "unprivileged", "spec.unprivileged"},
		{vnet, "zone", "spec.zone"},
		{vnet, "alias", "spec.alias"},
	}
	for _, tt := range tests {
		if got := PathsOf(tt.r).Path(tt.field); got != tt.want {
			t.Errorf("%s %q: %q, want %q", tt.r.Kind(), tt.field, got, tt.want)
		}
	}
	var none *Paths
	if none.Path("cores") != "" {
		t.Error("a resource only on the cluster has no manifest paths")
	}
}
