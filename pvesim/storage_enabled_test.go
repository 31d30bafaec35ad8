package pvesim

import (
	"strings"
	"testing"
)

// A storage limited to some nodes (storage.cfg "nodes") or disabled is
// refused where pve-storage's storage_check_enabled runs: disk allocation,
// clone, upload and download-url; /cluster/resources lists it only on the
// nodes where it is enabled.
func TestStorageNotEnabledOnANodeIsRefused(t *testing.T) {
	srv, c := newSim(t, Options{Seed: 5})
	if err := srv.SetStorage(StorageSpec{ID: "fast", Type: "lvmthin", Content: []string{"images", "rootdir"}, Nodes: []string{"pve2"}}); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetStorage(StorageSpec{ID: "old", Type: "dir", Path: "/mnt/old", Content: []string{"iso", "images"}, Disable: true}); err != nil {
		t.Fatal(err)
	}
	mustAddGuest(t, srv, GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{
		"name": "tpl", "template": "1", "scsi0": "local-lvm:base-9000-disk-0,size=2G"}})

	listed := map[string]bool{}
	for _, r := range c.mustOK("GET", "/cluster/resources", vals("type", "storage")).list(t) {
		listed[r["id"].(string)] = true
	}
	for id, want := range map[string]bool{"storage/pve2/fast": true, "storage/pve1/fast": false, "storage/pve1/old": false, "storage/pve1/local-lvm": true} {
		if listed[id] != want {
			t.Errorf("/cluster/resources lists %s: %v, want %v", id, listed[id], want)
		}
	}

	taskLog := func(upid string) string {
		var lines []string
		for _, l := range c.mustOK("GET", "/nodes/pve1/tasks/"+upid+"/log", nil).list(t) {
			lines = append(lines, l["t"].(string))
		}
		return strings.Join(lines, "\n")
	}
	// A create allocating on a storage not available on its node fails in
	// the worker (vdisk_alloc -> activate_storage).
	upid := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "fast:4")).str(t)
	if st := c.waitTask(upid); !strings.Contains(st, "storage 'fast' is not available on node 'pve1'") {
		t.Errorf("create on fast from pve1: %s\n%s", st, taskLog(upid))
	}
	if _, ok := srv.Guest(100); ok {
		t.Error("the failed create left a guest")
	}

	tests := []struct {
		name, method, path string
		params             []string
		want               string
	}{
		{"clone to a storage not on this node", "POST", "/nodes/pve1/qemu/9000/clone",
			[]string{"newid", "101", "full", "1", "storage", "fast"}, "storage 'fast' is not available on node 'pve1'"},
		{"clone to a disabled storage", "POST", "/nodes/pve1/qemu/9000/clone",
			[]string{"newid", "101", "full", "1", "storage", "old"}, "storage 'old' is disabled"},
		{"clone of a local VM to another node", "POST", "/nodes/pve1/qemu/9000/clone",
			[]string{"newid", "101", "target", "pve2"}, "can't clone VM to node 'pve2' (VM uses local storage)"},
		{"clone to a shared storage missing on the target", "POST", "/nodes/pve1/qemu/9000/clone",
			[]string{"newid", "101", "full", "1", "target", "pve2", "storage", "local-lvm"}, "can't clone to non-shared storage 'local-lvm'"},
		{"download to a disabled storage", "POST", "/nodes/pve1/storage/old/download-url",
			[]string{"content", "iso", "filename", "x.iso", "url", "http://127.0.0.1:1/x.iso"}, "storage 'old' is disabled"},
	}
	for _, tt := range tests {
		r := c.do(tt.method, tt.path, vals(tt.params...))
		if r.Status != 500 || r.Reason != tt.want {
			t.Errorf("%s: %d %q, want 500 %q", tt.name, r.Status, r.Reason, tt.want)
		}
	}
	// On its own node the storage works.
	if st := c.task("POST", "/nodes/pve2/qemu", vals("vmid", "102", "scsi0", "fast:4")); st != "OK" {
		t.Errorf("create on fast from pve2: %s", st)
	}
}
