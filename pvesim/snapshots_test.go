package pvesim

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestRemoveSnapshotRelinksToParent(t *testing.T) {
	chain := func() *Guest {
		return &Guest{VMID: 100, Conf: map[string]string{"parent": "c"}, Snapshots: map[string]*Snapshot{
			"a": {Name: "a"}, "b": {Name: "b", Parent: "a"}, "c": {Name: "c", Parent: "b"},
		}}
	}
	tests := []struct {
		remove      string
		wantParents map[string]string // snapshot -> parent after removal
		wantCurrent string            // the state's parent ("" = none)
	}{
		{"b", map[string]string{"a": "", "c": "a"}, "c"},
		{"c", map[string]string{"a": "", "b": "a"}, "b"},
		{"a", map[string]string{"b": "", "c": "b"}, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.remove, func(t *testing.T) {
			g := chain()
			removeSnapshot(g, g.Snapshots[tt.remove])
			if _, still := g.Snapshots[tt.remove]; still || len(g.Snapshots) != 2 {
				t.Fatalf("snapshots after removing %s: %v", tt.remove, g.Snapshots)
			}
			for name, parent := range tt.wantParents {
				if got := g.Snapshots[name].Parent; got != parent {
					t.Errorf("%s's parent = %q, want %q", name, got, parent)
				}
			}
			if got := g.Conf["parent"]; got != tt.wantCurrent {
				t.Errorf("current parent = %q, want %q", got, tt.wantCurrent)
			}
		})
	}
	// Removing the only snapshot leaves the state without a parent.
	g := &Guest{VMID: 100, Conf: map[string]string{"parent": "only"}, Snapshots: map[string]*Snapshot{"only": {Name: "only"}}}
	removeSnapshot(g, g.Snapshots["only"])
	if _, ok := g.Conf["parent"]; ok || len(g.Snapshots) != 0 {
		t.Fatalf("conf %v snapshots %v", g.Conf, g.Snapshots)
	}
}

// The snapshot feature is checked on every volume of the current config as
// __snapshot_prepare does, with Proxmox's error text.
func TestSnapshotNeedsTheFeatureOnEveryVolume(t *testing.T) {
	srv, c := lxcSim(t, Options{})
	if err := srv.SetStorage(StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images", "rootdir"}}); err != nil {
		t.Fatal(err)
	}
	root := rootClient(t, srv)
	tests := []struct {
		name   string
		create func(vmid string)
		path   string
		want   string
	}{
		{"VM on LVM-thin", func(id string) { createVM(t, c, id) }, "qemu", "OK"},
		{"VM with a qcow2 disk on NFS", func(id string) { createVM(t, c, id, "scsi1", "nfs-shared:1") }, "qemu", "OK"},
		{"VM with a raw disk on NFS", func(id string) { createVM(t, c, id, "scsi1", "nfs-shared:1,format=raw") }, "qemu", "snapshot feature is not available"},
		{"VM with an ISO on dir storage", func(id string) { createVM(t, c, id, "ide0", "local:iso/debian.iso,media=cdrom") }, "qemu", "OK"},
		{"container on LVM-thin", func(id string) { createCT(t, c, id) }, "lxc", "OK"},
		{"container on ZFS", func(id string) { createCT(t, c, id, "rootfs", "tank:8") }, "lxc", "OK"},
		{"container on NFS", func(id string) { createCT(t, c, id, "rootfs", "nfs-shared:8") }, "lxc", "snapshot feature is not available"},
		{"container with a bind mount", func(id string) {
			p := vals("vmid", id, "ostemplate", testTemplate, "rootfs", "local-lvm:8", "mp0", "/mnt/data,mp=/data")
			mustTaskOK(t, root, "POST", "/nodes/pve1/lxc", p)
		}, "lxc", "snapshot feature is not available"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := strconv.Itoa(300 + i)
			tt.create(id)
			base := "/nodes/pve1/" + tt.path + "/" + id
			if st := c.task("POST", base+"/snapshot", vals("snapname", "proxmops-20261201T231500Z")); st != tt.want {
				t.Fatalf("snapshot: %q, want %q", st, tt.want)
			}
			n := len(c.mustOK("GET", base+"/snapshot", nil).list(t))
			if want := map[bool]int{true: 2, false: 1}[tt.want == "OK"]; n != want {
				t.Fatalf("%d entries in the snapshot list, want %d", n, want)
			}
			if cfg := c.mustOK("GET", base+"/config", nil).obj(t); cfg["lock"] != nil {
				t.Fatalf("lock left behind: %v", cfg["lock"])
			}
		})
	}
}

// A rollback keeps the guest's description and unused volumes
// (__snapshot_apply_config), stops a running guest and starts it only when
// asked; a snapshot's config holds no description of the guest.
func TestRollbackStopsTheGuestAndKeepsItsDescription(t *testing.T) {
	_, c := newSim(t, Options{})
	createVM(t, c, "170", "description", "old notes")
	base := "/nodes/pve1/qemu/170"
	mustTaskOK(t, c, "POST", base+"/status/start", nil)
	mustTaskOK(t, c, "POST", base+"/snapshot", vals("snapname", "s1", "description", "before change"))
	if sc := c.mustOK("GET", base+"/snapshot/s1/config", nil).obj(t); sc["description"] != "before change" {
		t.Fatalf("snapshot config description = %v", sc["description"])
	}
	c.mustOK("PUT", base+"/config", vals("description", "new notes", "name", "renamed"))
	list := c.mustOK("GET", base+"/snapshot", nil).list(t)
	if list[0]["vmstate"] != float64(0) || list[1]["parent"] != "s1" {
		t.Fatalf("list: %v", list)
	}
	mustTaskOK(t, c, "POST", base+"/snapshot/s1/rollback", nil)
	cfg := c.mustOK("GET", base+"/config", nil).obj(t)
	if cfg["description"] != "new notes" || cfg["name"] != "vm170" || cfg["parent"] != "s1" {
		t.Fatalf("after rollback: %v", cfg)
	}
	if st := c.mustOK("GET", base+"/status/current", nil).obj(t); st["status"] != "stopped" {
		t.Fatalf("status after rollback: %v", st["status"])
	}
	mustTaskOK(t, c, "POST", base+"/snapshot/s1/rollback", vals("start", "1"))
	if st := c.mustOK("GET", base+"/status/current", nil).obj(t); st["status"] != "running" {
		t.Fatalf("status after rollback with start: %v", st["status"])
	}
}

// Reserved names (API2/Qemu.pm snapshot, API2/LXC/Snapshot.pm snapshot) are
// refused before any task starts.
func TestSnapshotReservedNames(t *testing.T) {
	srv, c := lxcSim(t, Options{})
	_ = srv
	createVM(t, c, "180")
	createCT(t, c, "181")
	tests := []struct{ path, name, want string }{
		{"qemu/180", "current", "unable to use snapshot name 'current' (reserved name)"},
		{"qemu/180", "Pending", "unable to use snapshot name 'pending' (reserved name)"},
		{"lxc/181", "current", "unable to use snapshot name 'current' (reserved name)"},
		{"lxc/181", "vzdump", "unable to use snapshot name 'vzdump' (reserved name)"},
	}
	for _, tt := range tests {
		r := c.do("POST", "/nodes/pve1/"+tt.path+"/snapshot", vals("snapname", tt.name))
		if r.Status != 500 || r.Reason != tt.want {
			t.Errorf("%s %s: %d %q, want %q", tt.path, tt.name, r.Status, r.Reason, tt.want)
		}
	}
}

// ZFS rolls a dataset back to its most recent snapshot only
// (ZFSPoolPlugin.pm volume_rollback_is_possible).
func TestZFSRollbackOnlyToTheMostRecentSnapshot(t *testing.T) {
	srv, c := lxcSim(t, Options{Clock: NewFakeClock(time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC))})
	if err := srv.SetStorage(StorageSpec{ID: "tank", Type: "zfspool", Content: []string{"images", "rootdir"}}); err != nil {
		t.Fatal(err)
	}
	createCT(t, c, "190", "rootfs", "tank:8")
	base := "/nodes/pve1/lxc/190"
	for _, n := range []string{"first", "second"} {
		mustTaskOK(t, c, "POST", base+"/snapshot", vals("snapname", n))
	}
	vol := c.mustOK("GET", base+"/config", nil).obj(t)["rootfs"].(string)
	vol, _, _ = strings.Cut(vol, ",")
	if st := c.task("POST", base+"/snapshot/first/rollback", nil); st != "can't rollback, 'first' is not most recent snapshot on '"+vol+"'" {
		t.Fatalf("rollback to first: %s", st)
	}
	mustTaskOK(t, c, "POST", base+"/snapshot/second/rollback", nil)
}

// On LVM and the file storages with snapshot-as-volume-chain, a disk is
// qcow2 by default (get_formats) and rolls back to its most recent snapshot
// only (Plugin.pm and LVMPlugin.pm volume_rollback_is_possible, naming the
// volume name); without the option a dir disk is raw.
func TestVolumeChainRollbackOnlyToTheMostRecentSnapshot(t *testing.T) {
	srv, c := newSim(t, Options{Clock: NewFakeClock(time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC))})
	for _, st := range []StorageSpec{
		{ID: "thick", Type: "lvm", Content: []string{"images"}, VolumeChain: true},
		{ID: "chain", Type: "dir", Path: "/mnt/chain", Content: []string{"images"}, VolumeChain: true, Format: "qcow2"},
		{ID: "plain", Type: "dir", Path: "/mnt/plain", Content: []string{"images"}},
	} {
		if err := srv.SetStorage(st); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct{ vmid, disk, wantVol string }{
		{"201", "thick:1", "thick:vm-201-disk-0.qcow2"},
		{"202", "chain:1", "chain:202/vm-202-disk-0.qcow2"},
	}
	for _, tt := range tests {
		t.Run(tt.disk, func(t *testing.T) {
			mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", tt.vmid, "scsi0", tt.disk))
			base := "/nodes/pve1/qemu/" + tt.vmid
			vol, _, _ := strings.Cut(c.mustOK("GET", base+"/config", nil).obj(t)["scsi0"].(string), ",")
			if vol != tt.wantVol {
				t.Fatalf("scsi0 = %s, want %s", vol, tt.wantVol)
			}
			for _, n := range []string{"first", "second"} {
				mustTaskOK(t, c, "POST", base+"/snapshot", vals("snapname", n))
			}
			_, volname, _ := strings.Cut(vol, ":")
			if st := c.task("POST", base+"/snapshot/first/rollback", nil); st != "can't rollback, 'first' is not most recent snapshot on '"+volname+"'" {
				t.Fatalf("rollback to first: %s", st)
			}
			mustTaskOK(t, c, "POST", base+"/snapshot/second/rollback", nil)
		})
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "203", "scsi0", "plain:1"))
	if got := c.mustOK("GET", "/nodes/pve1/qemu/203/config", nil).obj(t)["scsi0"].(string); !strings.HasPrefix(got, "plain:203/vm-203-disk-0.raw,") {
		t.Fatalf("a disk on a dir storage without format: %s", got)
	}
	if err := srv.SetStorage(StorageSpec{ID: "thick", Type: "lvm", Content: []string{"images"}}); err != nil {
		t.Fatal(err)
	}
	if st := c.task("POST", "/nodes/pve1/qemu", vals("vmid", "204", "scsi0", "thick:1,format=qcow2")); !strings.Contains(st, "snapshot-as-volume-chain option need to be enabled to use qcow2 format") {
		t.Fatalf("qcow2 on LVM without volume chains: %s", st)
	}
}

// A snapshot queued behind a destroy holding the guest's lock fails as
// AbstractConfig.pm __snapshot_prepare does (lock_config, then
// load_config): the configuration file is gone, nothing is snapshotted.
func TestASnapshotQueuedBehindADestroyFindsNoConfiguration(t *testing.T) {
	for _, typ := range []string{"qemu", "lxc"} {
		t.Run(typ, func(t *testing.T) {
			srv, c, clock := clockedSim(t)
			mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Type: typ, Config: map[string]string{"name": "db"}})
			destroy := c.mustOK("DELETE", "/nodes/pve1/"+typ+"/100", nil).str(t)
			waitSleepers(t, clock, 1, "the destroy did not start")
			snap := c.mustOK("POST", "/nodes/pve1/"+typ+"/100/snapshot", vals("snapname", "before")).str(t)
			waitSleepers(t, clock, 2, "the snapshot did not wait for the lock")
			clock.Advance(2 * time.Second) // the destroy's second, within the lock's 10 s
			if st := c.waitTask(destroy); st != "OK" {
				t.Fatalf("destroy: %s", st)
			}
			if st := c.waitTask(snap); !strings.Contains(st, "Configuration file 'nodes/pve1/") || !strings.Contains(st, "/100.conf' does not exist") {
				t.Fatalf("snapshot behind the destroy: %q, want the missing configuration file", st)
			}
		})
	}
}
