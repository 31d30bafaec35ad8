package pvesim

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

// migrateLogHas reports whether a migration log has a line ending in
// want (its lines start with a timestamp).
func migrateLogHas(lines []string, want string) bool {
	for _, l := range lines {
		if strings.HasSuffix(l, want) {
			return true
		}
	}
	return false
}

// TestQemuMigrateRefusesAsQmMigrate sends migrations Proxmox refuses at
// the call or in its qmigrate task, and checks the texts.
func TestQemuMigrateRefusesAsQmMigrate(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 3})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:iso/x.iso", Size: 1 << 20})
	createVM(t, c, "100")                                                                     // a local-lvm disk
	createVMWith(t, c, "101", "scsi0", "nfs-shared:4", "ide2", "local:iso/x.iso,media=cdrom") // local ISO
	createVMWith(t, c, "102", "scsi0", "nfs-shared:4", "hostpci0", "0000:01:00.0")
	createVMWith(t, c, "103", "scsi0", "nfs-shared:4", "ide2", "cdrom,media=cdrom")
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)

	at := func(path string, params ...string) apiResp { return c.do("POST", path, vals(params...)) }
	for _, tc := range []struct {
		name, path string
		params     []string
		status     int
		msg        string
	}{
		{"to itself", "/nodes/pve1/qemu/100/migrate", []string{"target", "pve1"}, 400, "Parameter verification failed."},
		{"to no node", "/nodes/pve1/qemu/100/migrate", []string{"target", "pve9"}, 500, "no such cluster node 'pve9'"},
		{"from the wrong node", "/nodes/pve2/qemu/100/migrate", []string{"target", "pve3"}, 500, "Configuration file 'nodes/pve2/qemu-server/100.conf' does not exist"},
		{"running without online", "/nodes/pve1/qemu/100/migrate", []string{"target", "pve2"}, 500, "can't migrate running VM without --online"},
	} {
		r := at(tc.path, tc.params...)
		if r.Status != tc.status || !strings.Contains(r.Message, tc.msg) {
			t.Errorf("%s: %d %q, want %d %q", tc.name, r.Status, r.Message, tc.status, tc.msg)
		}
	}

	for _, tc := range []struct {
		name   string
		vmid   string
		params []string
		logs   []string
	}{
		{"live with a local disk", "100", []string{"online", "1"}, []string{
			"can't migrate local disk 'local-lvm:vm-100-disk-0': can't live migrate attached local disks without with-local-disks option",
			"ERROR: migration aborted (duration 00:00:00): Problem found while scanning volumes - can't migrate VM - check log"}},
		{"local ISO", "101", nil, []string{"can't migrate local disk 'local:iso/x.iso': local cdrom image"}},
		{"host PCI device", "102", nil, []string{"ERROR: migration aborted (duration 00:00:00): can't migrate VM which uses local devices: hostpci0"}},
		{"host CD drive", "103", nil, []string{"can't migrate local cdrom drive"}},
	} {
		upid := c.mustOK("POST", "/nodes/pve1/qemu/"+tc.vmid+"/migrate", vals(append([]string{"target", "pve2"}, tc.params...)...)).str(t)
		if st := c.waitTask(upid); st != "migration aborted" {
			t.Errorf("%s: task ended %q, want migration aborted", tc.name, st)
		}
		if !strings.Contains(upid, ":qmigrate:"+tc.vmid+":") {
			t.Errorf("%s: UPID %s is no qmigrate task", tc.name, upid)
		}
		log := taskLog(c, upid)
		for _, want := range tc.logs {
			if !migrateLogHas(log, want) {
				t.Errorf("%s: log lacks %q:\n%s", tc.name, want, strings.Join(log, "\n"))
			}
		}
		if g, _ := srv.Guest(atoi(tc.vmid)); g.Node != "pve1" || g.Config["lock"] != "" {
			t.Errorf("%s: a refused migration left the VM on %s with lock %q", tc.name, g.Node, g.Config["lock"])
		}
	}
}

// TestQemuMigrateMovesTheVMAndItsDisks migrates a running VM live with
// its local disk, and a stopped one offline: the config, the disks and the
// run state end on the target, and calls on the old node fail.
func TestQemuMigrateMovesTheVMAndItsDisks(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2})
	createVM(t, c, "100")
	createVMWith(t, c, "101", "scsi0", "nfs-shared:4", "ide2", "local-lvm:cloudinit")
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)

	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/migrate", vals("target", "pve2", "online", "1", "with-local-disks", "1")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("live migration: %s\n%s", st, strings.Join(taskLog(c, upid), "\n"))
	}
	log := taskLog(c, upid)
	for _, want := range []string{"starting migration of VM 100 to node 'pve2' (192.0.2.12)", "found local disk 'local-lvm:vm-100-disk-0' (attached)", "migration finished successfully (duration 00:00:00)"} {
		if !migrateLogHas(log, want) {
			t.Errorf("log lacks %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	st := c.mustOK("GET", "/nodes/pve2/qemu/100/status/current", nil).obj(t)
	if st["status"] != "running" {
		t.Errorf("after a live migration the VM is %v on pve2", st["status"])
	}
	if r := c.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Status != 500 || !strings.Contains(r.Message, "nodes/pve1/qemu-server/100.conf' does not exist") {
		t.Errorf("config on the old node: %d %s", r.Status, r.Message)
	}
	vols := c.mustOK("GET", "/nodes/pve2/storage/local-lvm/content", nil).list(t)
	if len(vols) != 1 || vols[0]["volid"] != "local-lvm:vm-100-disk-0" {
		t.Errorf("pve2's local-lvm holds %v, want the moved disk", vols)
	}
	if vols := srv.Volumes("pve1", "local-lvm"); len(vols) != 1 || vols[0] != "local-lvm:vm-101-cloudinit" {
		t.Errorf("pve1's local-lvm holds %v, want VM 101's cloud-init drive only", vols)
	}

	upid = c.mustOK("POST", "/nodes/pve1/qemu/101/migrate", vals("target", "pve2", "online", "1")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("offline migration: %s\n%s", st, strings.Join(taskLog(c, upid), "\n"))
	}
	if log := taskLog(c, upid); !migrateLogHas(log, "found generated disk 'local-lvm:vm-101-cloudinit' (in current VM config)") {
		t.Errorf("offline log: %s", strings.Join(log, "\n"))
	}
	if g, _ := srv.Guest(101); !strings.HasPrefix(g.Config["ide2"], "local-lvm:vm-101-cloudinit") || len(srv.Volumes("pve2", "local-lvm")) != 2 {
		t.Errorf("VM 101's cloud-init drive %q; pve2's local-lvm %v", g.Config["ide2"], srv.Volumes("pve2", "local-lvm"))
	}
	res := c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(t)
	for _, r := range res {
		if r["node"] != "pve2" {
			t.Errorf("/cluster/resources lists %v on %v", r["vmid"], r["node"])
		}
	}
}

// TestQemuMigratePrecondition reads GET .../migrate.
func TestQemuMigratePrecondition(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 3})
	createVM(t, c, "100", "serial0", "socket")
	if err := srv.MutateGuest(100, func(conf map[string]string) { conf["parallel0"] = "/dev/parport0" }); err != nil {
		t.Fatal(err)
	}
	if err := srv.SetStorage(StorageSpec{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, Nodes: []string{"pve1", "pve2"}}); err != nil {
		t.Fatal(err)
	}
	got := c.mustOK("GET", "/nodes/pve1/qemu/100/migrate", nil).obj(t)
	if got["running"] != float64(0) {
		t.Errorf("running = %v", got["running"])
	}
	if a := got["allowed_nodes"].([]any); len(a) != 1 || a[0] != "pve2" {
		t.Errorf("allowed_nodes = %v, want [pve2]", a)
	}
	na := got["not_allowed_nodes"].(map[string]any)
	if n3, ok := na["pve3"].(map[string]any); !ok || n3["unavailable_storages"].([]any)[0] != "local-lvm" {
		t.Errorf("not_allowed_nodes = %v", na)
	}
	if lr := got["local_resources"].([]any); len(lr) != 1 || lr[0] != "parallel0" {
		t.Errorf("local_resources = %v, want [parallel0]", lr)
	}
	if ld := got["local_disks"].([]any); len(ld) != 1 || ld[0].(map[string]any)["volid"] != "local-lvm:vm-100-disk-0" {
		t.Errorf("local_disks = %v", ld)
	}
}

// TestLxcMigrateRestartMode migrates a running container: refused without
// restart, then shut down, moved and started on the target.
func TestLxcMigrateRestartMode(t *testing.T) {
	_, c := lxcSim(t, Options{Nodes: 2})
	createCT(t, c, "200")
	c.task("POST", "/nodes/pve1/lxc/200/status/start", nil)
	if r := c.do("POST", "/nodes/pve1/lxc/200/migrate", vals("target", "pve2")); r.Status != 500 || strings.TrimSpace(r.Message) != "can't migrate running container without --online or --restart" {
		t.Errorf("running without restart: %d %q", r.Status, r.Message)
	}
	upid := c.mustOK("POST", "/nodes/pve1/lxc/200/migrate", vals("target", "pve2", "online", "1")).str(t)
	if st := c.waitTask(upid); st != "migration aborted" {
		t.Errorf("online: %s", st)
	}
	if log := taskLog(c, upid); !migrateLogHas(log, "migration aborted (duration 00:00:00): lxc live migration is currently not implemented") {
		t.Errorf("online log: %s", strings.Join(log, "\n"))
	}
	upid = c.mustOK("POST", "/nodes/pve1/lxc/200/migrate", vals("target", "pve2", "restart", "1")).str(t)
	if !strings.Contains(upid, ":vzmigrate:200:") {
		t.Errorf("UPID %s", upid)
	}
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("restart migration: %s\n%s", st, strings.Join(taskLog(c, upid), "\n"))
	}
	log := taskLog(c, upid)
	for _, want := range []string{"shutdown CT 200", "starting migration of CT 200 to node 'pve2' (192.0.2.12)", "found local volume 'local-lvm:vm-200-disk-0' (in current VM config)", "start container on target node"} {
		if !migrateLogHas(log, want) {
			t.Errorf("log lacks %q:\n%s", want, strings.Join(log, "\n"))
		}
	}
	if st := c.mustOK("GET", "/nodes/pve2/lxc/200/status/current", nil).obj(t); st["status"] != "running" {
		t.Errorf("on pve2 the container is %v", st["status"])
	}
}

// TestMigrateNeedsVMMigrate checks the privilege.
func TestMigrateNeedsVMMigrate(t *testing.T) {
	srv, c := newSim(t, Options{TokenPrivileges: []string{"VM.Audit", "VM.PowerMgmt"}})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a"}})
	r := c.do("POST", "/nodes/pve1/qemu/100/migrate", vals("target", "pve2"))
	if r.Status != 403 || strings.TrimSpace(r.Message) != "Permission check failed (/vms/100, VM.Migrate)" {
		t.Errorf("%d %q", r.Status, r.Message)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// createVMWith is createVM with some of its parameters replaced.
func createVMWith(t *testing.T, c *client, vmid string, kv ...string) {
	t.Helper()
	p := vals("vmid", vmid, "name", "vm"+vmid, "memory", "512", "scsi0", "local-lvm:8", "net0", "virtio,bridge=vmbr0")
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", p)
}

// TestHAManagedMigrateGoesThroughTheHAStack: a migration of an HA-managed
// VM is a hamigrate request; the HA stack then migrates it live as
// root@pam.
func TestHAManagedMigrateGoesThroughTheHAStack(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2})
	createVMWith(t, c, "100", "scsi0", "nfs-shared:4")
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "vm:100", "state", "started"))
	if g, _ := srv.Guest(100); !g.Running {
		t.Fatal("the HA stack did not start the VM")
	}
	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/migrate", vals("target", "pve2", "online", "1")).str(t)
	if !strings.Contains(upid, ":hamigrate:100:") {
		t.Fatalf("UPID %s is no hamigrate task", upid)
	}
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("hamigrate: %s", st)
	}
	if log := taskLog(c, upid); !slices.Contains(log, "Requesting HA migration for VM 100 to node pve2") {
		t.Errorf("log: %v", log)
	}
	g, _ := srv.Guest(100)
	if g.Node != "pve2" || !g.Running {
		t.Errorf("VM 100 on %s, running %v; want pve2, running", g.Node, g.Running)
	}
	var migrated bool
	for _, task := range c.mustOK("GET", "/nodes/pve1/tasks", vals("typefilter", "qmigrate")).list(t) {
		migrated = migrated || task["user"] == "root@pam" && task["status"] == "OK"
	}
	if !migrated {
		t.Error("no qmigrate task by root@pam on pve1")
	}
}

// TestQemuMigrateForceIsRootsOnly: force is refused to a token and lets
// root@pam migrate a VM with a host device.
func TestQemuMigrateForceIsRootsOnly(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2, RootPassword: "hunter2"})
	createVMWith(t, c, "102", "scsi0", "nfs-shared:4", "hostpci0", "0000:01:00.0")
	r := c.do("POST", "/nodes/pve1/qemu/102/migrate", vals("target", "pve2", "force", "1"))
	if r.Status != 400 || r.Errors["force"] != "Only root may use this option." {
		t.Errorf("force by a token: %d %v", r.Status, r.Errors)
	}
	root := rootClient(t, srv)
	upid := root.mustOK("POST", "/nodes/pve1/qemu/102/migrate", vals("target", "pve2", "force", "1")).str(t)
	if st := root.waitTask(upid); st != "OK" {
		t.Fatalf("forced migration: %s\n%s", st, strings.Join(taskLog(root, upid), "\n"))
	}
	if log := taskLog(root, upid); !migrateLogHas(log, "migrating VM which uses local devices") {
		t.Errorf("log: %s", strings.Join(log, "\n"))
	}
	if g, _ := srv.Guest(102); g.Node != "pve2" {
		t.Errorf("VM 102 on %s", g.Node)
	}
}
