package pvesim

import (
	"net/url"
	"slices"
	"testing"
)

// TestStorageContentDelete checks DELETE .../storage/{storage}/content/{volume}
// against pve-storage: the volume ID is checked at once; vdisk_free runs in
// an imgdel task, where a missing volume is no error, protected backups and
// base volumes of linked clones are refused, and LVM-thin refuses the open
// volume of a running guest while a stopped guest's volume goes.
func TestStorageContentDelete(t *testing.T) {
	srv, c := newSim(t, Options{})
	const backup = "local:backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst"
	for _, v := range []VolumeSpec{
		{Node: "pve1", VolID: "local:iso/a.iso", Size: 1 << 20},
		{Node: "pve1", VolID: backup, Size: 1 << 20},
	} {
		mustAddVolume(t, srv, v)
	}
	for _, g := range []GuestSpec{
		{VMID: 100, Node: "pve1", Running: true, Config: map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=8G", "scsi1": "local-lvm:vm-100-disk-1,size=1G"}},
		{VMID: 101, Node: "pve1", Config: map[string]string{"scsi0": "local-lvm:vm-101-disk-0,size=8G"}},
		{VMID: 102, Node: "pve1", Running: true, Config: map[string]string{"scsi0": "nfs-shared:102/vm-102-disk-0.qcow2,size=8G"}},
		{VMID: 103, Node: "pve1", Type: "lxc", Running: true, Config: map[string]string{"hostname": "ct", "rootfs": "local-lvm:vm-103-disk-0,size=4G"}},
		{VMID: 9000, Node: "pve1", Config: map[string]string{"template": "1", "scsi0": "local-lvm:base-9000-disk-0,size=8G"}},
	} {
		mustAddGuest(t, srv, g)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "9001"))
	// Protection: backups only.
	c.mustOK("PUT", "/nodes/pve1/storage/local/content/"+backup, vals("protected", "1"))
	for _, tt := range []struct{ path, reason string }{
		{"/nodes/pve1/storage/local/content/local:iso/a.iso", "only backups support attribute 'protected'"},
		{"/nodes/pve1/storage/local-lvm/content/local-lvm:vm-101-disk-0", "attribute 'protected' is not supported for storage type 'lvmthin'"},
	} {
		if r := c.do("PUT", tt.path, vals("protected", "1")); r.Status != 500 || r.Reason != tt.reason {
			t.Errorf("protect %s: %d %q, want %q", tt.path, r.Status, r.Reason, tt.reason)
		}
	}

	tests := []contentDeleteCase{
		{name: "storage mismatch", storage: "local", volume: "nostore:iso/x.iso", paramErr: "storage ID mismatch (nostore != local)\n"},
		{name: "storage does not exist", storage: "nostore", volume: "iso/x.iso", early: "storage 'nostore' does not exist"},
		{name: "unparsable LVM name", storage: "local-lvm", volume: "local-lvm:foo", early: "unable to parse lvm volume name 'foo'"},
		{name: "unparsable directory name", storage: "local", volume: "local:junk", early: "unable to parse directory volume name 'junk'"},
		{name: "missing file", storage: "local", volume: "local:iso/nope.iso", status: "OK", taskID: "local",
			logs: []string{"disk image '/var/lib/vz/template/iso/nope.iso' does not exist", "Removed volume 'local:iso/nope.iso'"}, gone: true},
		{name: "missing LVM volume", storage: "local-lvm", volume: "local-lvm:vm-100-disk-9", status: "OK", taskID: "100@local-lvm",
			logs: []string{"Removed volume 'local-lvm:vm-100-disk-9'"}, gone: true},
		{name: "protected backup", storage: "local", volume: backup, taskID: "100@local",
			status: "cannot remove protected volume 'backup/vzdump-qemu-100-2025_01_01-00_00_00.vma.zst' on 'local'"},
		{name: "disk of a running VM on LVM-thin", storage: "local-lvm", volume: "local-lvm:vm-100-disk-0", taskID: "100@local-lvm",
			status: "lvremove 'pve/vm-100-disk-0' error:   Logical volume pve/vm-100-disk-0 in use."},
		{name: "rootfs of a running container", storage: "local-lvm", volume: "local-lvm:vm-103-disk-0", taskID: "103@local-lvm",
			status: "lvremove 'pve/vm-103-disk-0' error:   Logical volume pve/vm-103-disk-0 in use."},
		{name: "base volume with a linked clone", storage: "local-lvm", volume: "local-lvm:base-9000-disk-0", taskID: "9000@local-lvm",
			status: "base volume 'base-9000-disk-0' is still in use by linked clones"},
		{name: "disk of a stopped VM", storage: "local-lvm", volume: "local-lvm:vm-101-disk-0", status: "OK", taskID: "101@local-lvm",
			logs: []string{"Removed volume 'local-lvm:vm-101-disk-0'"}, gone: true},
		{name: "file of a running VM", storage: "nfs-shared", volume: "nfs-shared:102/vm-102-disk-0.qcow2", status: "OK", taskID: "102@nfs-shared", gone: true},
		{name: "ISO", storage: "local", volume: "iso/a.iso", status: "OK", taskID: "local", gone: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wantContentDelete(t, newClient(t, srv), tt)
		})
	}
	// Proxmox leaves the stopped VM's config pointing at the removed volume.
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/101/config", nil).obj(t); cfg["scsi0"] != "local-lvm:vm-101-disk-0,size=8G" {
		t.Errorf("config of 101: %v", cfg)
	}
	contentDeleteWithDelayWaitsForTheTask(t, srv, c)
}

// contentDeleteCase is a DELETE of one volume and what it answers.
type contentDeleteCase struct {
	name, storage, volume string
	// early is a synchronous 500 answer, paramErr a 400 one for "volume";
	// otherwise the task ends with status.
	early, paramErr, status, taskID string
	logs                            []string
	gone                            bool // the volume no longer exists afterwards
}

// wantContentDelete deletes tt's volume and checks the answer, the imgdel
// task and whether the volume is gone afterwards.
func wantContentDelete(t *testing.T, c *client, tt contentDeleteCase) {
	path := "/nodes/pve1/storage/" + tt.storage + "/content/" + url.PathEscape(tt.volume)
	r := c.do("DELETE", path, nil)
	if tt.paramErr != "" {
		if r.Status != 400 || r.Errors["volume"] != tt.paramErr {
			t.Fatalf("%d %q %v, want 400 with volume: %q", r.Status, r.Reason, r.Errors, tt.paramErr)
		}
		return
	}
	if tt.early != "" {
		if r.Status != 500 || r.Reason != tt.early {
			t.Fatalf("%d %q, want 500 %q", r.Status, r.Reason, tt.early)
		}
		return
	}
	if r.Status != 200 {
		t.Fatalf("%d %q", r.Status, r.Reason)
	}
	upid := r.str(t)
	if info, _ := ParseUPID(upid); info.Type != "imgdel" || info.ID != tt.taskID {
		t.Errorf("task %s, want imgdel with id %s", upid, tt.taskID)
	}
	if st := c.waitTask(upid); st != tt.status {
		t.Fatalf("exit status %q, want %q", st, tt.status)
	}
	lines := taskLog(c, upid)
	for _, want := range tt.logs {
		if !slices.Contains(lines, want) {
			t.Errorf("log %q lacks %q", lines, want)
		}
	}
	volid := tt.volume
	if tt.storage == "local" && volid == "iso/a.iso" {
		volid = "local:iso/a.iso"
	}
	info := c.do("GET", "/nodes/pve1/storage/"+tt.storage+"/content/"+url.PathEscape(volid), nil)
	if gone := info.Status != 200; gone != tt.gone {
		t.Errorf("volume gone: %v, want %v (%d %q)", gone, tt.gone, info.Status, info.Reason)
	}
}

// contentDeleteWithDelayWaitsForTheTask: the call answers null on success,
// the exit status as a 500 on failure.
func contentDeleteWithDelayWaitsForTheTask(t *testing.T, srv *Server, c *client) {
	if r := c.do("DELETE", "/nodes/pve1/storage/local-lvm/content/local-lvm:vm-100-disk-1", vals("delay", "5")); r.Status != 500 ||
		r.Reason != "lvremove 'pve/vm-100-disk-1' error:   Logical volume pve/vm-100-disk-1 in use." {
		t.Errorf("delay, failing: %d %q", r.Status, r.Reason)
	}
	if err := srv.SetGuestRunning(100, false); err != nil {
		t.Fatal(err)
	}
	if r := c.mustOK("DELETE", "/nodes/pve1/storage/local-lvm/content/local-lvm:vm-100-disk-1", vals("delay", "5")); string(r.Data) != "null" {
		t.Errorf("delay, succeeding: %s", r.Body)
	}
}
