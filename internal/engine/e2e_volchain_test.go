package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/pvesim"
)

// A new disk gets its storage's default format as storage.cfg sets it
// (get_formats): raw on a dir storage without "format", qcow2 on LVM with
// snapshot-as-volume-chain. The create's note on snapshots says so.
func TestCreateNoteOnSnapshotsFollowsTheStoragesDefaultFormat(t *testing.T) {
	tests := []struct {
		name     string
		storage  pvesim.StorageSpec
		wantNote string // "" for none
	}{
		{"LVM with volume chains makes qcow2", pvesim.StorageSpec{ID: "thick", Type: "lvm", Content: []string{"images"}, VolumeChain: true}, ""},
		{"dir without format makes raw", pvesim.StorageSpec{ID: "plain", Type: "dir", Path: "/mnt/plain", Content: []string{"images"}},
			"disk scsi0 on plain would be a raw volume on dir storage, which snapshots qcow2 only"},
		{"dir with format qcow2", pvesim.StorageSpec{ID: "plain", Type: "dir", Path: "/mnt/plain", Content: []string{"images"}, Format: "qcow2"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if err := e.sim.SetStorage(tt.storage); err != nil {
				t.Fatal(err)
			}
			e.write("vm.yaml", snapVMYAML("1", tt.storage.ID, "stopped"))
			eng := e.engine(engine.Options{})
			p := e.plan(eng)
			a := p.Find(engine.KindVirtualMachine, "snappy")
			noted := strings.Contains(a.Reason, "note: snapshots.beforeChange cannot work")
			if noted != (tt.wantNote != "") || !strings.Contains(a.Reason, tt.wantNote) {
				t.Fatalf("want note %q (none when empty), plan:\n%s", tt.wantNote, planText(p))
			}
			e.mustApply(eng)
			// What Proxmox does agrees with the note.
			ctx := context.Background()
			upid, err := e.client.CreateSnapshot(ctx, "qemu", "pve1", 330, "probe", "")
			if err == nil {
				_, err = e.client.WaitTask(ctx, upid, nil)
			}
			if (err != nil) != (tt.wantNote != "") {
				t.Fatalf("snapshot on %s: %v", tt.storage.ID, err)
			}
		})
	}
}

// On a storage that rolls a volume back to its most recent snapshot only
// (LVM with snapshot-as-volume-chain here), the snapshot list says which
// snapshots cannot be rolled back to and why, and a rollback to one is
// refused before Proxmox is asked.
func TestRollbackOnVolumeChainStorageOnlyToTheNewestSnapshot(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.sim.SetStorage(pvesim.StorageSpec{ID: "thick", Type: "lvm", Content: []string{"images"}, VolumeChain: true}); err != nil {
		t.Fatal(err)
	}
	e.write("vm.yaml", snapVMYAML("1", "thick", "stopped"))
	eng := e.engine(engine.Options{})
	e.mustApply(eng)
	for _, cores := range []string{"2", "3"} {
		e.write("vm.yaml", snapVMYAML(cores, "thick", "stopped"))
		e.mustApply(eng)
	}
	list, err := eng.GuestSnapshots(ctx, e.desired(), engine.KindVirtualMachine, "snappy")
	if err != nil || len(list.Snapshots) != 2 {
		t.Fatalf("GuestSnapshots: %+v %v", list, err)
	}
	newest, older := list.Snapshots[0], list.Snapshots[1]
	if newest.RollbackBlocked != "" {
		t.Fatalf("the newest snapshot is blocked: %q", newest.RollbackBlocked)
	}
	want := "scsi0 (thick:vm-330-disk-0.qcow2) is on lvm (snapshot-as-volume-chain) storage thick, which rolls a volume back to its most recent snapshot only, and " + newest.Name + " is newer"
	if !strings.Contains(older.RollbackBlocked, want) {
		t.Fatalf("older snapshot: blocked %q, want %q", older.RollbackBlocked, want)
	}
	// Refused up front: Proxmox's task ("can't rollback, ...") never runs.
	_, err = eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", older.Name, nil)
	if !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "can't rollback") {
		t.Fatalf("rollback to the older snapshot: %v", err)
	}
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "snappy", newest.Name, nil); err != nil {
		t.Fatalf("rollback to the newest snapshot: %v", err)
	}
	if got := e.guest(330).Config["cores"]; got != "2" {
		t.Fatalf("after rollback cores %q, want 2", got)
	}
}
