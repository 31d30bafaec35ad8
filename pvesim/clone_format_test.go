package pvesim

import (
	"strings"
	"testing"
)

// A full clone without a format parameter keeps the source disk's format
// where the target storage takes it, and falls back to the storage's
// default where not (QemuServer.pm resolve_dst_disk_format, Storage.pm
// resolve_format_hint).
func TestFullCloneKeepsTheSourceFormatWhereTheStorageTakesIt(t *testing.T) {
	srv, c := newSim(t, Options{})
	if err := srv.SetStorage(StorageSpec{ID: "nfs-raw", Type: "nfs", Content: []string{"images"}, Shared: true, Path: "/mnt/pve/nfs-raw"}); err != nil {
		t.Fatal(err)
	}
	createVM(t, c, "140", "scsi1", "nfs-raw:1,format=qcow2")
	for _, tt := range []struct{ newid, storage, want string }{
		{"141", "", "nfs-raw:141/vm-141-disk-0.qcow2"},
		{"142", "local-lvm", "local-lvm:vm-142-disk-1"},
	} {
		p := vals("newid", tt.newid, "full", "1")
		if tt.storage != "" {
			p.Set("storage", tt.storage)
		}
		if st := c.task("POST", "/nodes/pve1/qemu/140/clone", p); st != "OK" {
			t.Fatalf("clone %s: %s", tt.newid, st)
		}
		conf := c.mustOK("GET", "/nodes/pve1/qemu/"+tt.newid+"/config", nil).obj(t)
		if disk, _ := conf["scsi1"].(string); !strings.HasPrefix(disk, tt.want+",") {
			t.Errorf("clone %s: scsi1 %q, want %s", tt.newid, disk, tt.want)
		}
	}
}
