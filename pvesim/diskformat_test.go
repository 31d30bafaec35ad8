package pvesim

import (
	"strings"
	"testing"
)

// A new disk's format= is the format vdisk_alloc allocates in; Proxmox keeps
// it only as the file extension and refuses what the storage cannot hold
// (qemu-server API2/Qemu.pm create_disks, pve-storage Plugin.pm and
// LvmThinPlugin.pm alloc_image).
func TestNewDiskFormatNamesTheVolumeOrIsRefused(t *testing.T) {
	_, c := newSim(t, Options{})
	cases := []struct {
		name, vmid, drive, status, scsi1 string
	}{
		{"raw on NFS", "170", "nfs-shared:1,format=raw", "OK", "nfs-shared:170/vm-170-disk-0.raw,size=1G"},
		{"vmdk on NFS", "171", "nfs-shared:1,format=vmdk", "OK", "nfs-shared:171/vm-171-disk-0.vmdk,size=1G"},
		{"default on NFS", "172", "nfs-shared:1", "OK", "nfs-shared:172/vm-172-disk-0.qcow2,size=1G"},
		{"raw on LVM-thin", "173", "local-lvm:1,format=raw", "OK", "local-lvm:vm-173-disk-1,size=1G"},
		{"qcow2 on LVM-thin", "174", "local-lvm:1,format=qcow2", "unsupported format 'qcow2'", ""},
		{"qed on NFS", "175", "nfs-shared:1,format=qed", "unable to parse volume filename 'vm-175-disk-0.qed'", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := vals("vmid", tc.vmid, "scsi0", "local-lvm:1", "scsi1", tc.drive)
			st := c.task("POST", "/nodes/pve1/qemu", p)
			if !strings.Contains(st, tc.status) {
				t.Fatalf("create: %q, want %q", st, tc.status)
			}
			if tc.scsi1 == "" {
				return
			}
			cfg := c.mustOK("GET", "/nodes/pve1/qemu/"+tc.vmid+"/config", nil).obj(t)
			if cfg["scsi1"] != tc.scsi1 {
				t.Fatalf("scsi1 = %v, want %s", cfg["scsi1"], tc.scsi1)
			}
		})
	}
}
