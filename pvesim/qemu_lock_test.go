package pvesim

import (
	"net/url"
	"testing"
	"time"
)

// resourceOf returns a guest's entry in /cluster/resources.
func resourceOf(c *client, vmid int) map[string]any {
	c.t.Helper()
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(c.t) {
		if e["vmid"] == float64(vmid) {
			return e
		}
	}
	return nil
}

// TestQemuCreateKeepsLockCreate follows a create that imports a 20 GiB
// image: the config holds only "lock: create" until the task ends, other
// operations fail early on the lock or wait for the flock and time out,
// and the finished config has no lock.
func TestQemuCreateKeepsLockCreate(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv := startSim(t, Options{TaskSpeed: 1, Clock: clock})
	c := newClient(t, srv)
	if err := srv.AddVolume(VolumeSpec{Node: "pve1", VolID: "local:import/big.qcow2", Size: 20 << 30}); err != nil {
		t.Fatal(err)
	}
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "name", "web", "cores", "2",
		"scsi0", "local-lvm:0,import-from=local:import/big.qcow2", "net0", "virtio,bridge=vmbr0")).str(t)

	checkLocked := func(stage string) {
		t.Helper()
		cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
		if cfg["lock"] != "create" || len(cfg) != 2 || cfg["digest"] == nil {
			t.Fatalf("%s: config %v, want only lock: create and digest", stage, cfg)
		}
		if res := resourceOf(c, 100); res == nil || res["lock"] != "create" || res["status"] != "stopped" {
			t.Fatalf("%s: resource %v", stage, res)
		}
	}
	// Before the worker runs its first step, the config file exists with the lock.
	if !clock.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("create never slept")
	}
	checkLocked("start of the task")
	clock.Advance(durCreate)
	// Now the disk is allocated and the image is being imported (about 100 s).
	if !clock.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("import never slept")
	}
	checkLocked("during the import")
	vols := c.mustOK("GET", "/nodes/pve1/storage/local-lvm/content", nil).list(t)
	if len(vols) != 1 || vols[0]["volid"] != "local-lvm:vm-100-disk-0" {
		t.Fatalf("volumes during the import: %v", vols)
	}

	const lockErr = "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"
	ops := []struct {
		name, method, path string
		params             url.Values
		// early is the synchronous 500 answer; "" means a task that waits
		// for the flock and fails with lockErr.
		early string
	}{
		{"PUT config", "PUT", "/nodes/pve1/qemu/100/config", vals("cores", "4"), "VM is locked (create)"},
		{"POST config", "POST", "/nodes/pve1/qemu/100/config", vals("cores", "4"), "VM is locked (create)"},
		{"resize", "PUT", "/nodes/pve1/qemu/100/resize", vals("disk", "scsi0", "size", "+1G"), ""},
		{"start", "POST", "/nodes/pve1/qemu/100/status/start", nil, ""},
		{"destroy", "DELETE", "/nodes/pve1/qemu/100", nil, ""},
	}
	for _, op := range ops {
		r := c.do(op.method, op.path, op.params)
		if op.early != "" {
			if r.Status != 500 || r.Reason != op.early {
				t.Fatalf("%s during create: %d %q, want 500 %q", op.name, r.Status, r.Reason, op.early)
			}
			continue
		}
		if r.Status != 200 {
			t.Fatalf("%s during create: %d %q", op.name, r.Status, r.Reason)
		}
		if !clock.WaitForWaiters(2, 5*time.Second) {
			t.Fatalf("%s never waited for the lock", op.name)
		}
		clock.Advance(lockTimeout)
		if st := c.waitTask(r.str(t)); st != lockErr {
			t.Fatalf("%s during create: %q, want %q", op.name, st, lockErr)
		}
	}
	checkLocked("after the refused operations")

	for i := 0; i < 20 && !isDone(srv, create); i++ {
		clock.WaitForWaiters(1, time.Second)
		clock.Advance(10 * time.Second)
	}
	if st := c.waitTask(create); st != "OK" {
		t.Fatalf("create: %q", st)
	}
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["lock"] != nil || cfg["scsi0"] != "local-lvm:vm-100-disk-0,size=20G" || cfg["name"] != "web" || cfg["cores"] != float64(2) {
		t.Fatalf("config after create: %v", cfg)
	}
	if res := resourceOf(c, 100); res["lock"] != nil || res["name"] != "web" {
		t.Fatalf("resource after create: %v", res)
	}
}

// TestQemuCreateFailureRemovesGuest makes the import fail after the first
// disk was allocated: the allocated volume is freed and the guest is gone.
func TestQemuCreateFailureRemovesGuest(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv := startSim(t, Options{TaskSpeed: 1, Clock: clock})
	c := newClient(t, srv)
	if err := srv.AddVolume(VolumeSpec{Node: "pve1", VolID: "local:import/gone.qcow2", Size: 1 << 30}); err != nil {
		t.Fatal(err)
	}
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100",
		"scsi0", "local-lvm:4", "scsi1", "local-lvm:0,import-from=local:import/gone.qcow2")).str(t)
	if !clock.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("create never slept")
	}
	// The import source disappears while the worker is starting.
	if st := c.task("DELETE", "/nodes/pve1/storage/local/content/local:import/gone.qcow2", nil); st != "OK" {
		t.Fatalf("delete source: %s", st)
	}
	clock.Advance(durCreate)
	want := "unable to create VM 100 - cannot import from 'local:import/gone.qcow2' - could not get size of local:import/gone.qcow2"
	if st := c.waitTask(create); st != want {
		t.Fatalf("create: %q, want %q", st, want)
	}
	if r := c.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Status != 500 || r.Reason != "Configuration file 'nodes/pve1/qemu-server/100.conf' does not exist" {
		t.Fatalf("config after failed create: %d %q", r.Status, r.Reason)
	}
	if vols := c.mustOK("GET", "/nodes/pve1/storage/local-lvm/content", nil).list(t); len(vols) != 0 {
		t.Fatalf("volumes left behind: %v", vols)
	}
	if res := resourceOf(c, 100); res != nil {
		t.Fatalf("guest still listed: %v", res)
	}
	// The VMID is free again.
	again := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100")).str(t)
	if !clock.WaitForWaiters(1, 5*time.Second) {
		t.Fatal("second create never slept")
	}
	clock.Advance(durCreate)
	if st := c.waitTask(again); st != "OK" {
		t.Fatalf("create again: %q", st)
	}
}
