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
	srv, c := newSim(t, Options{TaskSpeed: 1, Clock: clock, StatusInterval: -1})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/big.qcow2", Size: 20 << 30})
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
	waitSleepers(t, clock, 1, "create never slept")
	checkLocked("start of the task")
	clock.Advance(durCreate)
	// Now the disk is allocated and the image is being imported (about 100 s).
	waitSleepers(t, clock, 1, "import never slept")
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
		waitSleepers(t, clock, 2, op.name+" never waited for the lock")
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
	srv, c, clock := clockedSim(t)
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/gone.qcow2", Size: 1 << 30})
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100",
		"scsi0", "local-lvm:4", "scsi1", "local-lvm:0,import-from=local:import/gone.qcow2")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	// The import source disappears while the worker is starting.
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/storage/local/content/local:import/gone.qcow2", nil)
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
	waitSleepers(t, clock, 1, "second create never slept")
	clock.Advance(durCreate)
	if st := c.waitTask(again); st != "OK" {
		t.Fatalf("create again: %q", st)
	}
}

// TestQemuCloneLocks checks clone_vm's locking: a stopped source is locked
// shared, so clones run side by side while a config change of the source
// waits and times out; each target carries lock: clone until its task ends.
func TestQemuCloneLocks(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddGuest(t, srv, GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{
		"name": "tpl", "template": "1", "scsi0": "local-lvm:base-9000-disk-0,size=8G"}})
	clones := []struct {
		newid  int
		params url.Values
	}{
		{101, vals("newid", "101", "name", "linked")},
		{102, vals("newid", "102", "name", "full", "full", "1")},
		{103, vals("newid", "103", "name", "linked2")},
	}
	var upids []string
	for _, cl := range clones {
		upids = append(upids, c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", cl.params).str(t))
	}
	waitSleepers(t, clock, len(clones), "clones did not run side by side")
	for _, cl := range clones {
		cfg := c.mustOK("GET", "/nodes/pve1/qemu/"+itoa(cl.newid)+"/config", nil).obj(t)
		if cfg["lock"] != "clone" {
			t.Errorf("target %d during the clone: %v", cl.newid, cfg)
		}
		if res := resourceOf(c, cl.newid); res == nil || res["lock"] != "clone" {
			t.Errorf("target %d resource during the clone: %v", cl.newid, res)
		}
	}
	// The source carries no config lock, only the shared flock.
	if res := resourceOf(c, 9000); res["lock"] != nil {
		t.Errorf("source resource during the clones: %v", res)
	}
	put := make(chan apiResp, 1)
	go func() { put <- c.do("PUT", "/nodes/pve1/qemu/9000/config", vals("description", "x")) }()
	waitSleepers(t, clock, len(clones)+1, "config change never waited for the source lock")
	clock.Advance(lockTimeout)
	if r := <-put; r.Status != 500 || r.Reason != "can't lock file '/var/lock/qemu-server/lock-9000.conf' - got timeout" {
		t.Errorf("config change of a source being cloned: %d %q", r.Status, r.Reason)
	}
	for i := 0; i < 10; i++ {
		clock.Advance(time.Minute)
	}
	for i, upid := range upids {
		if st := c.waitTask(upid); st != "OK" {
			t.Fatalf("clone %d: %q", clones[i].newid, st)
		}
		cfg := c.mustOK("GET", "/nodes/pve1/qemu/"+itoa(clones[i].newid)+"/config", nil).obj(t)
		if cfg["lock"] != nil || cfg["name"] != clones[i].params.Get("name") {
			t.Errorf("clone %d after the task: %v", clones[i].newid, cfg)
		}
	}
	// The source lock is free again.
	if r := c.do("PUT", "/nodes/pve1/qemu/9000/config", vals("description", "x")); r.Status != 200 {
		t.Errorf("config change after the clones: %d %q", r.Status, r.Reason)
	}

	// A running source is locked exclusively: its config change waits too,
	// and a full clone with a TPM state is refused.
	mustAddGuest(t, srv, GuestSpec{VMID: 300, Node: "pve1", Running: true, Config: map[string]string{
		"scsi0": "local-lvm:vm-300-disk-0,size=8G"}})
	clone := c.mustOK("POST", "/nodes/pve1/qemu/300/clone", vals("newid", "301")).str(t)
	waitSleepers(t, clock, 1, "clone of a running VM did not start")
	go func() { put <- c.do("PUT", "/nodes/pve1/qemu/300/config", vals("description", "x")) }()
	waitSleepers(t, clock, 2, "config change never waited")
	clock.Advance(lockTimeout)
	if r := <-put; r.Status != 500 || r.Reason != "can't lock file '/var/lock/qemu-server/lock-300.conf' - got timeout" {
		t.Errorf("config change of a running source: %d %q", r.Status, r.Reason)
	}
	clock.Advance(time.Minute)
	if st := c.waitTask(clone); st != "OK" {
		t.Fatalf("clone of a running VM: %q", st)
	}
	mustAddGuest(t, srv, GuestSpec{VMID: 310, Node: "pve1", Running: true, Config: map[string]string{
		"scsi0": "local-lvm:vm-310-disk-0,size=8G", "tpmstate0": "local-lvm:vm-310-disk-1,size=4M,version=v2.0"}})
	if r := c.do("POST", "/nodes/pve1/qemu/310/clone", vals("newid", "311")); r.Status != 500 || r.Reason != "cannot clone TPM state while VM is running" {
		t.Errorf("full clone of a running VM with TPM: %d %q", r.Status, r.Reason)
	}
}

// TestQemuTemplate checks template's checks and that it takes no
// "lock: template": template: 1 is written first, then the disks turn into
// base volumes.
func TestQemuTemplate(t *testing.T) {
	srv, c, clock := clockedSim(t)
	for _, g := range []GuestSpec{
		{VMID: 100, Node: "pve1", Config: map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=8G", "scsi1": "local-lvm:vm-100-disk-1,size=2G"}},
		{VMID: 101, Node: "pve1", Running: true, Config: map[string]string{"scsi0": "local-lvm:vm-101-disk-0,size=8G"}},
		{VMID: 102, Node: "pve1", Config: map[string]string{"scsi0": "local-lvm:vm-102-disk-0,size=8G", "lock": "backup"}},
		{VMID: 103, Node: "pve1", Config: map[string]string{"scsi0": "local-lvm:vm-103-disk-0,size=8G"}},
	} {
		mustAddGuest(t, srv, g)
	}
	srv.mu.Lock()
	srv.state.Guests[103].Snapshots["before"] = &Snapshot{Name: "before", Conf: copyConf(srv.state.Guests[103].Conf)}
	srv.mu.Unlock()

	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/template", vals("disk", "scsi1")).str(t)
	waitSleepers(t, clock, 1, "template never slept")
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["lock"] != nil || cfg["template"] != float64(1) {
		t.Fatalf("during the template task: %v", cfg)
	}
	clock.Advance(durTemplate)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("template: %q", st)
	}
	cfg = c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t)
	if cfg["scsi1"] != "local-lvm:base-100-disk-1,size=2G" || cfg["scsi0"] != "local-lvm:vm-100-disk-0,size=8G" || cfg["template"] != float64(1) {
		t.Fatalf("after converting one disk: %v", cfg)
	}
	// A template may convert its remaining disks one by one, but not itself again.
	upid = c.mustOK("POST", "/nodes/pve1/qemu/100/template", vals("disk", "scsi0")).str(t)
	clock.WaitForWaiters(1, 5*time.Second)
	clock.Advance(durTemplate)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("template scsi0: %q", st)
	}
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t); cfg["scsi0"] != "local-lvm:base-100-disk-0,size=8G" {
		t.Fatalf("after converting scsi0: %v", cfg)
	}
	for _, tt := range []struct {
		vmid   string
		params url.Values
		reason string
	}{
		{"100", nil, "you can't convert a template to a template"},
		{"101", nil, "you can't convert a VM to template if VM is running"},
		{"102", nil, "VM is locked (backup)"},
		{"103", nil, "unable to create template, because VM contains snapshots"},
	} {
		if r := c.do("POST", "/nodes/pve1/qemu/"+tt.vmid+"/template", tt.params); r.Status != 500 || r.Reason != tt.reason {
			t.Errorf("template %s: %d %q, want %q", tt.vmid, r.Status, r.Reason, tt.reason)
		}
	}
}
