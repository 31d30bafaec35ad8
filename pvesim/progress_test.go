package pvesim

import (
	"regexp"
	"slices"
	"testing"
)

func TestRenderBytesIsProxmoxFormat(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		p    int
		want string
	}{{0, 1, "0.0 B"}, {1023, 1, "1023.0 B"}, {1024, 1, "1.0 KiB"}, {2 << 30, 1, "2.0 GiB"}, {3 << 29, 2, "1.50 GiB"}} {
		if got := renderBytes(tc.v, tc.p); got != tc.want {
			t.Errorf("renderBytes(%d, %d) = %q, want %q", tc.v, tc.p, got, tc.want)
		}
	}
}

// Proxmox prints the progress of a disk import and of a full clone in the
// task log (qemu-server QemuImage.pm convert; BlockJob.pm mirror monitor):
// clients read the percent from there.
func TestImportAndFullCloneLogTheirProgress(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/big.qcow2", Size: 2 << 30})
	upid := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "130", "scsi0", "local-lvm:0,import-from=local:import/big.qcow2")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("create: %s", st)
	}
	offline := regexp.MustCompile(`^transferred \d+\.\d (B|KiB|MiB|GiB) of 2\.0 GiB \((\d+\.\d\d)%\)$`)
	var pcts []string
	for _, l := range taskLog(c, upid) {
		if m := offline.FindStringSubmatch(l); m != nil {
			pcts = append(pcts, m[2])
		}
	}
	if len(pcts) < 2 || pcts[len(pcts)-1] != "100.00" {
		t.Fatalf("import progress lines: %q in %q", pcts, taskLog(c, upid))
	}

	// A full clone of the stopped VM: qemu-img convert's lines.
	clone := c.mustOK("POST", "/nodes/pve1/qemu/130/clone", vals("newid", "131", "full", "1")).str(t)
	if st := c.waitTask(clone); st != "OK" {
		t.Fatalf("clone: %s", st)
	}
	if log := taskLog(c, clone); !slices.Contains(log, "transferred 2.0 GiB of 2.0 GiB (100.00%)") {
		t.Fatalf("clone log: %q", log)
	}
	// Of a running one: the block mirror's, per drive.
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/130/status/start", nil)
	clone = c.mustOK("POST", "/nodes/pve1/qemu/130/clone", vals("newid", "132", "full", "1")).str(t)
	if st := c.waitTask(clone); st != "OK" {
		t.Fatalf("clone: %s", st)
	}
	mirror := regexp.MustCompile(`^drive-scsi0: transferred 2\.0 GiB of 2\.0 GiB \(100\.00%\) in \d+s$`)
	found := false
	for _, l := range taskLog(c, clone) {
		found = found || mirror.MatchString(l)
	}
	if !found {
		t.Fatalf("running clone log: %q", taskLog(c, clone))
	}
}
