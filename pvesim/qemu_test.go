package pvesim

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
)

func TestQemuCreateReadBack(t *testing.T) {
	srv, c := newSim(t, Options{Seed: 7})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/debian-12.qcow2", Size: 2 << 30})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:iso/debian-12.iso", Size: 600 << 20})
	keys := url.QueryEscape("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host")
	keys = strings.ReplaceAll(keys, "+", "%20")
	st := c.task("POST", "/nodes/pve1/qemu", vals(
		"vmid", "120", "name", "app-01", "cores", "2", "memory", "2048", "onboot", "1", "agent", "1",
		"scsihw", "virtio-scsi-single", "tags", "prod;managed-by-proxmops;App",
		"scsi0", "local-lvm:0,import-from=local:import/debian-12.qcow2",
		"scsi1", "local-lvm:20", "ide2", "local-lvm:cloudinit", "ide0", "local:iso/debian-12.iso,media=cdrom",
		"net0", "virtio,bridge=vmbr0,tag=10", "ciuser", "admin", "cipassword", "pw", "sshkeys", keys,
		"ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1",
	))
	if st != "OK" {
		t.Fatalf("create: %s", st)
	}
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/120/config", nil).obj(t)
	want := map[string]any{
		"name": "app-01", "cores": float64(2), "memory": "2048", "onboot": float64(1), "agent": "1",
		"scsi0": "local-lvm:vm-120-disk-0,size=2G", "scsi1": "local-lvm:vm-120-disk-1,size=20G",
		"ide2": "local-lvm:vm-120-cloudinit,media=cdrom", "ide0": "local:iso/debian-12.iso,media=cdrom,size=600M",
		"tags": "app;managed-by-proxmops;prod", "cipassword": "**********", "sshkeys": keys, "ciuser": "admin",
		"ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1", "boot": "order=scsi0;ide0;net0",
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %#v, want %#v", k, cfg[k], v)
		}
	}
	if !regexp.MustCompile(`^virtio=BC:24:11:[0-9A-F]{2}:[0-9A-F]{2}:[0-9A-F]{2},bridge=vmbr0,tag=10$`).MatchString(cfg["net0"].(string)) {
		t.Errorf("net0 = %v", cfg["net0"])
	}
	if len(cfg["digest"].(string)) != 40 || !strings.HasPrefix(cfg["smbios1"].(string), "uuid=") || cfg["vmgenid"] == nil {
		t.Errorf("generated keys: %v", cfg)
	}
	// What was read back can be sent back unchanged without changing anything.
	digest := cfg["digest"].(string)
	c.mustOK("PUT", "/nodes/pve1/qemu/120/config", vals("net0", cfg["net0"].(string), "scsi1", cfg["scsi1"].(string)))
	if again := c.mustOK("GET", "/nodes/pve1/qemu/120/config", nil).obj(t); again["digest"] != digest {
		t.Errorf("restating the live form changed the config: %v", again)
	}
	// Next free id skips the taken one; a taken id given explicitly is refused.
	if id := c.mustOK("GET", "/cluster/nextid", nil).str(t); id != "100" {
		t.Errorf("nextid = %s", id)
	}
	if r := c.do("GET", "/cluster/nextid", vals("vmid", "120")); r.Status != 400 || r.Errors["vmid"] != "VM 120 already exists" {
		t.Errorf("nextid taken: %d %s", r.Status, r.Body)
	}
	res := c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(t)
	if len(res) != 1 || res[0]["tags"] != "app;managed-by-proxmops;prod" || res[0]["vmid"] != float64(120) || res[0]["id"] != "qemu/120" {
		t.Errorf("resources = %v", res)
	}
	if r := c.do("POST", "/nodes/pve1/qemu", vals("vmid", "120")); r.Status != 500 || r.Reason != "unable to create VM 120 - VM 120 already exists on node 'pve1'" {
		t.Errorf("duplicate create: %d %q", r.Status, r.Reason)
	}
}

func TestQemuCreateRefusals(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:iso/x.iso", Size: 1 << 20})
	wantParamErrors(t, c, "/nodes/pve1/qemu", []paramErrorCase{
		{"import needs size 0", vals("vmid", "130", "scsi0", "local-lvm:8,import-from=local:iso/x.iso"), "scsi0", "'import-from' requires special syntax - use <storage ID>:0,import-from=<source>"},
		{"import from iso", vals("vmid", "130", "scsi0", "local-lvm:0,import-from=local:iso/x.iso"), "scsi0", "local:iso/x.iso has wrong type 'iso' - needs to be 'images' or 'import'"},
		{"iso without cdrom media", vals("vmid", "130", "ide2", "local:iso/x.iso"), "ide2", "explicit 'media=cdrom' is required for iso images"},
		{"disk on iso storage", vals("vmid", "130", "scsi0", "local:8"), "storage", "storage 'local' does not support vm images"},
	})
}

func createVM(t *testing.T, c *client, vmid string, extra ...string) {
	t.Helper()
	p := vals(append([]string{"vmid", vmid, "name", "vm" + vmid, "cores", "1", "memory", "1024", "scsi0", "local-lvm:8", "net0", "virtio,bridge=vmbr0"}, extra...)...)
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", p)
}

func TestQemuPendingOnRunningGuest(t *testing.T) {
	srv, c := newSim(t, Options{})
	createVM(t, c, "140")
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/140/status/start", nil)
	c.mustOK("PUT", "/nodes/pve1/qemu/140/config", vals("cores", "4", "memory", "4096", "name", "renamed", "onboot", "1", "ciuser", "ops"))
	cur := c.mustOK("GET", "/nodes/pve1/qemu/140/config", vals("current", "1")).obj(t)
	if cur["cores"] != float64(1) || cur["memory"] != "1024" || cur["name"] != "renamed" || cur["onboot"] != float64(1) || cur["ciuser"] != "ops" {
		t.Fatalf("current config = %v", cur)
	}
	withPending := c.mustOK("GET", "/nodes/pve1/qemu/140/config", nil).obj(t)
	if withPending["cores"] != float64(4) || withPending["memory"] != "4096" {
		t.Fatalf("config with pending = %v", withPending)
	}
	pending := c.mustOK("GET", "/nodes/pve1/qemu/140/pending", nil).list(t)
	found := false
	for _, e := range pending {
		if e["key"] == "cores" {
			found = e["value"] == float64(1) && e["pending"] == float64(4)
		}
	}
	if !found {
		t.Fatalf("pending = %v", pending)
	}
	// A pending delete, then revert it.
	c.mustOK("PUT", "/nodes/pve1/qemu/140/config", vals("delete", "cores"))
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/140/config", nil).obj(t); cfg["cores"] != nil {
		t.Fatalf("cores should be pending delete: %v", cfg)
	}
	c.mustOK("PUT", "/nodes/pve1/qemu/140/config", vals("revert", "cores"))
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/140/config", nil).obj(t); cfg["cores"] != float64(1) {
		t.Fatalf("after revert: %v", cfg)
	}
	c.mustOK("PUT", "/nodes/pve1/qemu/140/config", vals("cores", "4"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/140/status/reboot", nil)
	if cur := c.mustOK("GET", "/nodes/pve1/qemu/140/config", vals("current", "1")).obj(t); cur["cores"] != float64(4) || cur["memory"] != "4096" {
		t.Fatalf("reboot did not apply pending: %v", cur)
	}
	if p := c.mustOK("GET", "/nodes/pve1/qemu/140/pending", nil).list(t); len(p) == 0 || p[0]["pending"] != nil {
		t.Fatalf("pending after reboot: %v", p)
	}
	r := c.do("PUT", "/nodes/pve1/qemu/140/config", vals("ciuser", "x", "delete", "ciuser"))
	if r.Status != 400 || r.Errors["delete"] != "you can't use '-ciuser' and -delete ciuser' at the same time" {
		t.Fatalf("set+delete: %d %s", r.Status, r.Body)
	}
	r = c.do("PUT", "/nodes/pve1/qemu/140/config", vals("delete", "nosuchkey"))
	if r.Status != 400 || r.Errors["delete"] != "unknown option 'nosuchkey'" {
		t.Fatalf("delete unknown: %d %s", r.Status, r.Body)
	}
	r = c.do("DELETE", "/nodes/pve1/qemu/140", vals("purge", "1"))
	if r.Status != 500 || r.Reason != "VM 140 is running - destroy failed" {
		t.Fatalf("delete running: %d %q", r.Status, r.Reason)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/140/status/stop", nil)
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/qemu/140", vals("purge", "1", "destroy-unreferenced-disks", "1"))
	if vols := srv.Volumes("pve1", "local-lvm"); len(vols) != 0 {
		t.Fatalf("volumes left: %v", vols)
	}
}

func TestQemuResizeTemplateClone(t *testing.T) {
	_, c := newSim(t, Options{})
	createVM(t, c, "150", "ide2", "local-lvm:cloudinit", "tags", "golden")
	mustTaskOK(t, c, "PUT", "/nodes/pve1/qemu/150/resize", vals("disk", "scsi0", "size", "+2G"))
	mustTaskOK(t, c, "PUT", "/nodes/pve1/qemu/150/resize", vals("disk", "scsi0", "size", "12G"))
	if st := c.task("PUT", "/nodes/pve1/qemu/150/resize", vals("disk", "scsi0", "size", "4G")); st != "shrinking disks is not supported" {
		t.Fatalf("shrink: %s", st)
	}
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/150/config", nil).obj(t); cfg["scsi0"] != "local-lvm:vm-150-disk-0,size=12G" {
		t.Fatalf("after resize: %v", cfg["scsi0"])
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/150/template", nil)
	cfg := c.mustOK("GET", "/nodes/pve1/qemu/150/config", nil).obj(t)
	if cfg["scsi0"] != "local-lvm:base-150-disk-0,size=12G" || cfg["template"] != float64(1) || cfg["ide2"] != "local-lvm:vm-150-cloudinit,media=cdrom" {
		t.Fatalf("template: %v", cfg)
	}
	if st := c.task("POST", "/nodes/pve1/qemu/150/status/start", nil); st != "you can't start a vm if it's a template" {
		t.Fatalf("start template: %s", st)
	}
	if r := c.do("POST", "/nodes/pve1/qemu/150/clone", vals("newid", "151", "storage", "nfs-shared", "full", "0")); r.Status != 500 || r.Reason != "parameter 'storage' not allowed for linked clones" {
		t.Fatalf("linked clone with storage: %d %q", r.Status, r.Reason)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/150/clone", vals("newid", "151", "name", "linked"))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/150/clone", vals("newid", "152", "name", "full", "full", "1", "storage", "nfs-shared"))
	linked := c.mustOK("GET", "/nodes/pve1/qemu/151/config", nil).obj(t)
	full := c.mustOK("GET", "/nodes/pve1/qemu/152/config", nil).obj(t)
	// The full clone keeps the raw source's format, which NFS takes
	// (resolve_dst_disk_format), over the storage's qcow2 default.
	if linked["scsi0"] != "local-lvm:vm-151-disk-0,size=12G" || full["scsi0"] != "nfs-shared:152/vm-152-disk-0.raw,size=12G" {
		t.Fatalf("clone disks: %v / %v", linked["scsi0"], full["scsi0"])
	}
	if linked["name"] != "linked" || linked["tags"] != "golden" || linked["template"] != nil || linked["net0"] == cfg["net0"] || linked["smbios1"] == cfg["smbios1"] || linked["vmgenid"] == cfg["vmgenid"] {
		t.Fatalf("clone config: %v", linked)
	}
	if linked["ide2"] != "local-lvm:vm-151-cloudinit,media=cdrom" {
		t.Fatalf("clone cloud-init: %v", linked["ide2"])
	}
	if r := c.do("POST", "/nodes/pve1/qemu/151/clone", vals("newid", "153", "full", "0")); r.Status != 500 || r.Reason != "Linked clone feature is not supported for 'local-lvm:vm-151-disk-0' (scsi0)" {
		t.Fatalf("linked clone of a VM: %d %q", r.Status, r.Reason)
	}
	if r := c.do("POST", "/nodes/pve1/qemu/150/clone", vals("newid", "151")); r.Status != 500 || r.Reason != "unable to create VM 151: config file already exists" {
		t.Fatalf("clone onto existing: %d %q", r.Status, r.Reason)
	}
}

func TestQemuSnapshots(t *testing.T) {
	_, c := newSim(t, Options{})
	createVM(t, c, "160")
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/160/snapshot", vals("snapname", "before", "description", "first"))
	c.mustOK("PUT", "/nodes/pve1/qemu/160/config", vals("cores", "8"))
	list := c.mustOK("GET", "/nodes/pve1/qemu/160/snapshot", nil).list(t)
	if len(list) != 2 || list[0]["name"] != "before" || list[1]["name"] != "current" || list[1]["parent"] != "before" {
		t.Fatalf("snapshots: %v", list)
	}
	if st := c.task("POST", "/nodes/pve1/qemu/160/snapshot", vals("snapname", "before")); st != "snapshot name 'before' already used" {
		t.Fatalf("duplicate snapshot: %s", st)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/160/snapshot/before/rollback", nil)
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/160/config", nil).obj(t); cfg["cores"] != float64(1) || cfg["parent"] != "before" {
		t.Fatalf("after rollback: %v", cfg)
	}
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/qemu/160/snapshot/before", nil)
	if st := c.task("DELETE", "/nodes/pve1/qemu/160/snapshot/before", nil); st != "snapshot 'before' does not exist" {
		t.Fatalf("delete missing snapshot: %s", st)
	}
}

// TestQemuPowerAnswersFollowTheRunState: qemu-server refuses a start of a
// running VM in the task (PVE/QemuServer.pm vm_start: "VM 100 already
// running"), a reboot or reset of a stopped one before any task
// (API2/Qemu.pm vm_reboot, vm_reset: "VM 100 not running"), and ends a
// stop or shutdown of a stopped VM at once, OK, whatever its lock
// (_do_vm_stop returns before it loads the config).
func TestQemuPowerAnswersFollowTheRunState(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Running: true, Config: map[string]string{"name": "a"}})
	base := "/nodes/pve1/qemu/100"
	if st := c.task("POST", base+"/status/start", nil); st != "VM 100 already running" {
		t.Errorf("start of a running VM: %s", st)
	}
	if err := srv.SetGuestRunning(100, false); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"/status/reboot", "/status/reset"} {
		if r := c.do("POST", base+p, nil); r.Status != 500 || r.Reason != "VM 100 not running" {
			t.Errorf("%s of a stopped VM: %d %q", p, r.Status, r.Reason)
		}
	}
	srv.MutateGuest(100, func(conf map[string]string) { conf["lock"] = "backup" })
	for _, p := range []string{"/status/stop", "/status/shutdown"} {
		if st := c.task("POST", base+p, nil); st != "OK" {
			t.Errorf("%s of a stopped, locked VM: %s", p, st)
		}
	}
}

// The cloud-init password is masked as API2/Qemu.pm masks it: vm_config
// when it is true in Perl's sense, vm_pending the current value as ten
// asterisks and a pending one with a trailing space.
func TestCloudInitPasswordIsMaskedAsProxmoxMasksIt(t *testing.T) {
	g := &Guest{VMID: 100, Type: "qemu", Conf: map[string]string{"cipassword": "old"}, Pending: map[string]string{"cipassword": "new"}}
	var entry map[string]any
	for _, e := range qemuPendingJSON(g) {
		if e["key"] == "cipassword" {
			entry = e
		}
	}
	if entry["value"] != "**********" || entry["pending"] != "********** " {
		t.Fatalf("pending entry %v, want the value masked and the pending one masked with a trailing space", entry)
	}
	for conf, want := range map[string]any{"secret": "**********", "0": "0", "": ""} {
		got := qemuConfigJSON(&Guest{VMID: 100, Type: "qemu", Conf: map[string]string{"cipassword": conf}}, true)["cipassword"]
		if got != want {
			t.Errorf("config with cipassword %q reads %v, want %v", conf, got, want)
		}
	}
}
