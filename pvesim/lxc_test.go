package pvesim

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

const (
	testTemplate = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
	testSSHKey   = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl me@host"
)

// lxcSim is a simulator with a container template on pve1.
func lxcSim(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	if opts.RootPassword == "" {
		opts.RootPassword = "hunter2"
	}
	srv := startSim(t, opts)
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: testTemplate, Size: 120 << 20})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:iso/debian.iso", Size: 600 << 20})
	return srv, newClient(t, srv)
}

// rootClient logs in as root@pam with the password (not a token).
func rootClient(t *testing.T, srv *Server) *client {
	t.Helper()
	c := newClient(t, srv)
	c.header.Del("Authorization")
	tk := c.mustOK("POST", "/access/ticket", vals("username", "root@pam", "password", "hunter2")).obj(t)
	c.header.Set("Cookie", "PVEAuthCookie="+url.QueryEscape(tk["ticket"].(string)))
	c.header.Set("CSRFPreventionToken", tk["CSRFPreventionToken"].(string))
	return c
}

// createCT creates a container with the common options plus extra ones.
func createCT(t *testing.T, c *client, vmid string, extra ...string) {
	t.Helper()
	p := vals("vmid", vmid, "ostemplate", testTemplate, "rootfs", "local-lvm:8",
		"net0", "name=eth0,bridge=vmbr0,ip=10.0.0.5/24,gw=10.0.0.1")
	for i := 0; i+1 < len(extra); i += 2 {
		p.Set(extra[i], extra[i+1])
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/lxc", p)
}

func TestLxcCreateReadBack(t *testing.T) {
	srv, c := lxcSim(t, Options{Seed: 3, StatusInterval: -1})
	createCT(t, c, "200", "hostname", "web-01", "mp0", "local-lvm:4,mp=/data,backup=1",
		"ssh-public-keys", testSSHKey+"\n", "password", "s3cret", "features", "nesting=1",
		"nameserver", "1.1.1.1,8.8.8.8", "searchdomain", "example.com", "tags", "web;Managed-By-Proxmops", "memory", "1024",
		"onboot", "1", "cores", "2")
	cfg := c.mustOK("GET", "/nodes/pve1/lxc/200/config", nil).obj(t)
	want := map[string]any{
		"hostname": "web-01", "rootfs": "local-lvm:vm-200-disk-0,size=8G", "mp0": "local-lvm:vm-200-disk-1,mp=/data,backup=1,size=4G",
		"unprivileged": float64(1), "features": "nesting=1", "nameserver": "1.1.1.1 8.8.8.8", "searchdomain": "example.com",
		"tags": "managed-by-proxmops;web", "memory": float64(1024), "swap": float64(512), "ostype": "debian", "arch": "amd64",
		"onboot": float64(1), "cores": float64(2),
	}
	for k, v := range want {
		if cfg[k] != v {
			t.Errorf("%s = %#v, want %#v", k, cfg[k], v)
		}
	}
	if !regexp.MustCompile(`^name=eth0,bridge=vmbr0,gw=10\.0\.0\.1,hwaddr=BC:24:11(:[0-9A-F]{2}){3},ip=10\.0\.0\.5/24,type=veth$`).MatchString(cfg["net0"].(string)) {
		t.Errorf("net0 = %v", cfg["net0"])
	}
	for _, secret := range []string{"password", "ssh-public-keys", "lock"} {
		if _, ok := cfg[secret]; ok {
			t.Errorf("%s is in the config: %v", secret, cfg)
		}
	}
	if d, _ := cfg["digest"].(string); len(d) != 40 {
		t.Errorf("digest %v", cfg["digest"])
	}
	// The volumes exist on the storage, owned by the container.
	vols := strings.Join(srv.Volumes("pve1", "local-lvm"), " ")
	if vols != "local-lvm:vm-200-disk-0 local-lvm:vm-200-disk-1" {
		t.Errorf("local-lvm holds %s", vols)
	}
	// Restating what was read back changes nothing.
	c.mustOK("PUT", "/nodes/pve1/lxc/200/config", vals("net0", cfg["net0"].(string), "mp0", cfg["mp0"].(string)))
	if again := c.mustOK("GET", "/nodes/pve1/lxc/200/config", nil).obj(t); again["digest"] != cfg["digest"] {
		t.Errorf("restating the read-back form changed the config: %v", again)
	}
	res := c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(t)
	if len(res) != 1 || res[0]["id"] != "lxc/200" || res[0]["type"] != "lxc" || res[0]["name"] != "web-01" ||
		res[0]["maxdisk"] != float64(8<<30) || res[0]["maxmem"] != float64(1024<<20) || res[0]["tags"] != "managed-by-proxmops;web" {
		t.Errorf("resources = %v", res)
	}
	list := c.mustOK("GET", "/nodes/pve1/lxc", nil).list(t)
	if len(list) != 1 || list[0]["type"] != "lxc" || list[0]["status"] != "stopped" || list[0]["vmid"] != float64(200) {
		t.Errorf("lxc list = %v", list)
	}
	st := c.mustOK("GET", "/nodes/pve1/lxc/200/status/current", nil).obj(t)
	if st["status"] != "stopped" || st["name"] != "web-01" || st["cpus"] != float64(2) {
		t.Errorf("status = %v", st)
	}
	// Defaults of a minimal create: hostname CT<vmid>, a 4 GiB rootfs on
	// the default storage (here given), 512 MiB memory and swap.
	// A bare size is not a volume id: check_volume_access lets only
	// root@pam (not even its token) pass it (pve-container LXC.pm
	// check_ct_modify_config_perm).
	if r := c.do("POST", "/nodes/pve1/lxc", vals("vmid", "201", "ostemplate", testTemplate, "storage", "local-lvm", "rootfs", "3")); r.Status != 500 || r.Reason != "Only root can pass arbitrary filesystem paths." {
		t.Errorf("bare size with a token: %d %q", r.Status, r.Reason)
	}
	createCT(t, rootClient(t, srv), "201", "storage", "local-lvm", "rootfs", "3")
	cfg = c.mustOK("GET", "/nodes/pve1/lxc/201/config", nil).obj(t)
	if cfg["hostname"] != "CT201" || cfg["rootfs"] != "local-lvm:vm-201-disk-0,size=3G" || cfg["memory"] != float64(512) {
		t.Errorf("defaults: %v", cfg)
	}
	if r := c.do("POST", "/nodes/pve1/lxc", vals("vmid", "201", "ostemplate", testTemplate, "rootfs", "local-lvm:1")); r.Status != 500 || r.Reason != "CT 201 already exists on node 'pve1'" {
		t.Errorf("duplicate: %d %q", r.Status, r.Reason)
	}
}

func TestLxcCreateRefusals(t *testing.T) {
	srv, c := lxcSim(t, Options{})
	tests := []paramsCase{
		{"ostemplate required", vals("vmid", "300"), 400, "Parameter verification failed.",
			map[string]string{"ostemplate": "property is missing and it is not optional"}},
		{"short password", vals("vmid", "300", "ostemplate", testTemplate, "password", "abc"), 400, "Parameter verification failed.",
			map[string]string{"password": "value must be at least 5 characters long"}},
		{"net without name=", vals("vmid", "300", "ostemplate", testTemplate, "net0", "eth0,bridge=vmbr0"), 400, "Parameter verification failed.",
			map[string]string{"net0": "invalid format - value without key, but schema does not define a default key\n"}},
		{"mount point index out of range", vals("vmid", "300", "ostemplate", testTemplate, "mp256", "local-lvm:1,mp=/x"), 400, "Parameter verification failed.",
			map[string]string{"mp256": "property is not defined in schema and the schema does not allow additional properties"}},
		{"mount point without path", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "mp0", "local-lvm:1"), 400, "Parameter verification failed.",
			map[string]string{"mp0": "invalid format - format error\nmp0.mp: property is missing and it is not optional\n"}},
		{"iso as template", vals("vmid", "300", "ostemplate", "local:iso/debian.iso", "rootfs", "local-lvm:1"), 500,
			"unable to use volume local:iso/debian.iso - content type needs to be 'vztmpl'", nil},
		{"default storage without rootdir", vals("vmid", "300", "ostemplate", testTemplate), 400, "Parameter verification failed.",
			map[string]string{"storage": "storage 'local' does not support container directories"}},
		{"rootfs on iso storage", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local:8"), 400, "Parameter verification failed.",
			map[string]string{"storage": "storage 'local' does not support container directories"}},
		{"unknown storage", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "nope:8"), 500, "storage 'nope' does not exist", nil},
		{"mount point without rootfs", vals("vmid", "300", "ostemplate", testTemplate, "mp0", "local-lvm:1,mp=/x"), 500,
			"mount points configured, but 'rootfs' not set - aborting", nil},
		{"bad ssh key", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "ssh-public-keys", "ssh-rsa notbase64 x"), 500,
			"SSH public key validation error", nil},
		{"bind mount with a token", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "mp0", "/mnt/data,mp=/data"), 403,
			"Permission check failed (mount point type bind is only allowed for root@pam)", nil},
		{"device mount with a token", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "mp0", "/dev/sdb,mp=/data"), 403,
			"Permission check failed (mount point type device is only allowed for root@pam)", nil},
		{"features beyond nesting with a token", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "features", "nesting=1,keyctl=1"), 403,
			"Permission check failed (changing feature flags (except nesting) is only allowed for root@pam)", nil},
		{"features of a privileged container", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "unprivileged", "0", "features", "nesting=1"), 403,
			"Permission check failed (changing feature flags for privileged container is only allowed for root@pam)", nil},
		{"device passthrough with a token", vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "dev0", "/dev/ttyUSB0"), 403,
			"Permission check failed (configuring device passthrough is only allowed for root@pam)", nil},
		{"invalid device path", vals("vmid", "300", "ostemplate", testTemplate, "dev0", "/tmp/x"), 400, "Parameter verification failed.",
			map[string]string{"dev0": "invalid format - format error\ndev0.path: invalid format - /tmp/x is not a valid device path\n\n"}},
		{"unknown pool", vals("vmid", "300", "ostemplate", testTemplate, "pool", "nope"), 403, "Permission check failed (pool 'nope' does not exist)", nil},
		{"password given as boolean", vals("vmid", "300", "ostemplate", testTemplate, "unprivileged", "true"), 400, "Parameter verification failed.",
			map[string]string{"unprivileged": "type check ('boolean') failed - got 'true'"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.do("POST", "/nodes/pve1/lxc", tt.params).want(t, tt.status, tt.reason, tt.errors)
			if _, exists := srv.Guest(300); exists {
				t.Errorf("a refused create left CT 300 behind")
			}
		})
	}
	// A template that is not on the storage fails the task and leaves nothing.
	upid := c.mustOK("POST", "/nodes/pve1/lxc", vals("vmid", "301", "ostemplate", "local:vztmpl/missing.tar.zst", "rootfs", "local-lvm:1")).str(t)
	if st := c.waitTask(upid); st != "unable to create CT 301 - can't find file 'local:vztmpl/missing.tar.zst'" {
		t.Errorf("missing template: %q", st)
	}
	if _, exists := srv.Guest(301); exists || len(srv.Volumes("pve1", "local-lvm")) != 0 {
		t.Errorf("failed create left state: %v", srv.Volumes("pve1", "local-lvm"))
	}
	// root@pam logged in with its password may bind mount, pass devices and set any feature.
	root := rootClient(t, srv)
	st := root.task("POST", "/nodes/pve1/lxc", vals("vmid", "302", "ostemplate", testTemplate, "rootfs", "local-lvm:1",
		"mp0", "/mnt/data,mp=/data", "features", "nesting=1,keyctl=1", "dev0", "/dev/ttyUSB0,mode=0660"))
	if st != "OK" {
		t.Fatalf("root create: %s", st)
	}
	cfg := root.mustOK("GET", "/nodes/pve1/lxc/302/config", nil).obj(t)
	if cfg["mp0"] != "/mnt/data,mp=/data" || cfg["dev0"] != "/dev/ttyUSB0,mode=0660" || cfg["features"] != "nesting=1,keyctl=1" {
		t.Errorf("root config: %v", cfg)
	}
	// The UPID names the token's user for token calls and root@pam for tickets.
	if info, _ := ParseUPID(upid); info.Type != "vzcreate" || info.ID != "301" || info.User != testTokenID {
		t.Errorf("upid %s", upid)
	}
}

func TestLxcConfigPendingAndHotplug(t *testing.T) {
	srv, c := lxcSim(t, Options{Seed: 5})
	createCT(t, c, "200", "hostname", "app", "nameserver", "1.1.1.1")
	base := "/nodes/pve1/lxc/200"
	lxcStoppedContainerAppliesConfigAtOnce(t, c, base)
	lxcRunningContainerHotplugsAndKeepsTheRestPending(t, c, base)
	digest := lxcRebootAppliesWhatWasPending(t, c, srv, base)
	lxcRefusedConfigUpdatesLeaveTheConfig(t, c, base, digest)
	lxcReplacedMountPointsFreeTheirVolumeAndUpdatesWaitForTheLock(t, c, srv, base, digest)
}

// The steps of TestLxcConfigPendingAndHotplug, in order on container 200
// (base is its API path).

// lxcStoppedContainerAppliesConfigAtOnce: stopped, everything applies at
// once; then it starts.
func lxcStoppedContainerAppliesConfigAtOnce(t *testing.T, c *client, base string) {
	c.mustOK("PUT", base+"/config", vals("memory", "2048", "searchdomain", "a.example b.example"))
	if p := c.mustOK("GET", base+"/pending", nil).list(t); hasPending(p) {
		t.Errorf("stopped container kept pending values: %v", p)
	}
	mustTaskOK(t, c, "POST", base+"/status/start", nil)
	if r := c.do("POST", base+"/status/start", nil); r.Status != 500 || r.Reason != "CT 200 already running" {
		t.Errorf("second start: %d %q", r.Status, r.Reason)
	}
}

// lxcRunningContainerHotplugsAndKeepsTheRestPending: running, hostname,
// cores, memory, NICs and new mount points change live; the nameserver
// waits for the next start.
func lxcRunningContainerHotplugsAndKeepsTheRestPending(t *testing.T, c *client, base string) {
	c.mustOK("PUT", base+"/config", vals("hostname", "app2", "cores", "2", "memory", "4096", "nameserver", "9.9.9.9",
		"net1", "name=eth1,bridge=vmbr0,ip=dhcp", "mp1", "local-lvm:2,mp=/srv"))
	cur := c.mustOK("GET", base+"/config", vals("current", "1")).obj(t)
	if cur["hostname"] != "app2" || cur["cores"] != float64(2) || cur["memory"] != float64(4096) || cur["nameserver"] != "1.1.1.1" {
		t.Errorf("current config: %v", cur)
	}
	if cur["mp1"] != "local-lvm:vm-200-disk-1,mp=/srv,size=2G" || !strings.HasPrefix(cur["net1"].(string), "name=eth1,bridge=vmbr0,hwaddr=BC:24:11:") {
		t.Errorf("hot-plugged devices: mp1=%v net1=%v", cur["mp1"], cur["net1"])
	}
	withPending := c.mustOK("GET", base+"/config", nil).obj(t)
	if withPending["nameserver"] != "9.9.9.9" {
		t.Errorf("config without current=1 should show the pending value: %v", withPending["nameserver"])
	}
	pend := c.mustOK("GET", base+"/pending", nil).list(t)
	found := false
	for _, e := range pend {
		if e["key"] == "nameserver" {
			found = e["value"] == "1.1.1.1" && e["pending"] == "9.9.9.9"
		}
		if e["key"] == "memory" && (e["value"] != float64(4096) || e["pending"] != nil) {
			t.Errorf("memory pending entry: %v", e)
		}
	}
	if !found {
		t.Errorf("pending = %v", pend)
	}
	// Deleting a key of a running container: nameserver is not hot-pluggable.
	c.mustOK("PUT", base+"/config", vals("delete", "searchdomain"))
	pend = c.mustOK("GET", base+"/pending", nil).list(t)
	for _, e := range pend {
		if e["key"] == "searchdomain" && e["delete"] != float64(1) {
			t.Errorf("searchdomain delete is not pending: %v", e)
		}
	}
}

// lxcRebootAppliesWhatWasPending, then the container shuts down. It returns
// the digest of the configuration after the reboot.
func lxcRebootAppliesWhatWasPending(t *testing.T, c *client, srv *Server, base string) string {
	mustTaskOK(t, c, "POST", base+"/status/reboot", nil)
	cfg := c.mustOK("GET", base+"/config", vals("current", "1")).obj(t)
	if cfg["nameserver"] != "9.9.9.9" || cfg["searchdomain"] != nil {
		t.Errorf("after reboot: %v", cfg)
	}
	if p := c.mustOK("GET", base+"/pending", nil).list(t); hasPending(p) {
		t.Errorf("pending after reboot: %v", p)
	}
	mustTaskOK(t, c, "POST", base+"/status/shutdown", vals("timeout", "10"))
	if info, _ := srv.Guest(200); info.Running {
		t.Errorf("still running after shutdown")
	}

	digest := cfg["digest"].(string)
	return digest
}

// lxcRefusedConfigUpdatesLeaveTheConfig: digest is the configuration's.
func lxcRefusedConfigUpdatesLeaveTheConfig(t *testing.T, c *client, base, digest string) {
	tests := []struct {
		name   string
		method string
		params url.Values
		status int
		reason string
		errors map[string]string
	}{
		{"no options", "PUT", vals(), 500, "no options specified", nil},
		{"unprivileged is read-only", "PUT", vals("unprivileged", "0"), 500, "unable to modify read-only option: 'unprivileged'", nil},
		{"required option", "PUT", vals("delete", "memory"), 500, "unable to delete required option 'memory'", nil},
		{"unknown option", "PUT", vals("delete", "nosuch"), 400, "Parameter verification failed.", map[string]string{"delete": "unknown option 'nosuch'"}},
		{"set and delete", "PUT", vals("swap", "256", "delete", "swap"), 400, "Parameter verification failed.",
			map[string]string{"delete": "you can't use '-swap' and -delete swap' at the same time"}},
		{"stale digest", "PUT", vals("swap", "256", "digest", strings.Repeat("0", 40)), 500,
			"detected modified configuration - file changed by other user? Try again.", nil},
		{"bind mount with a token", "PUT", vals("mp2", "/srv/share,mp=/share"), 403,
			"Permission check failed (mount point type bind is only allowed for root@pam)", nil},
		{"keyctl with a token", "PUT", vals("features", "keyctl=1"), 403,
			"Permission check failed (changing feature flags (except nesting) is only allowed for root@pam)", nil},
		{"hookscript with a token", "PUT", vals("hookscript", "local:snippets/hook.sh"), 403,
			"Permission check failed (changing the hookscript is only allowed for root@pam)", nil},
		{"storage without rootdir", "PUT", vals("mp3", "local:2,mp=/x"), 500, "storage 'local' does not allow content type 'rootdir' (Container)", nil},
		{"MTU above the bridge's", "PUT", vals("net2", "name=eth2,bridge=vmbr0,mtu=9000"), 500, "net2: MTU size '9000' is bigger than bridge MTU '1500'", nil},
		{"POST config is not served", "POST", vals("swap", "256"), 501, "Method 'POST /nodes/pve1/lxc/200/config' not implemented", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.do(tt.method, base+"/config", tt.params).want(t, tt.status, tt.reason, tt.errors)
		})
	}
	if again := c.mustOK("GET", base+"/config", nil).obj(t); again["digest"] != digest {
		t.Errorf("refused updates changed the config")
	}
}

func lxcReplacedMountPointsFreeTheirVolumeAndUpdatesWaitForTheLock(t *testing.T, c *client, srv *Server, base, digest string) {
	// Nesting alone may be switched with a token; the current digest is accepted.
	c.mustOK("PUT", base+"/config", vals("features", "nesting=1", "digest", digest))
	// Replacing a mount point's volume turns the old one into unusedN; deleting
	// unusedN frees the volume.
	c.mustOK("PUT", base+"/config", vals("mp1", "local-lvm:1,mp=/srv"))
	cfg := c.mustOK("GET", base+"/config", nil).obj(t)
	if cfg["mp1"] != "local-lvm:vm-200-disk-2,mp=/srv,size=1G" || cfg["unused0"] != "local-lvm:vm-200-disk-1" {
		t.Fatalf("after replacing mp1: %v", cfg)
	}
	c.mustOK("PUT", base+"/config", vals("delete", "unused0"))
	if vols := strings.Join(srv.Volumes("pve1", "local-lvm"), " "); strings.Contains(vols, "disk-1") {
		t.Errorf("unused volume not freed: %s", vols)
	}
	// A guest lock held by another operation makes a config update time out.
	release := srv.HoldGuestLock(200)
	r := c.do("PUT", base+"/config", vals("swap", "128"))
	release()
	if r.Status != 500 || r.Reason != "can't lock file '/run/lock/lxc/pve-config-200.lock' - got timeout" {
		t.Errorf("locked update: %d %q", r.Status, r.Reason)
	}
}

func hasPending(list []map[string]any) bool {
	for _, e := range list {
		if e["pending"] != nil || e["delete"] != nil {
			return true
		}
	}
	return false
}

func TestLxcResizeTemplateCloneDestroy(t *testing.T) {
	srv, c := lxcSim(t, Options{Seed: 9})
	createCT(t, c, "200", "hostname", "base")
	base := "/nodes/pve1/lxc/200"
	lxcResizeOnlyGrows(t, c, base)
	lxcTemplateDestroyAndCloneAreRefusedWhileSnapshottedOrRunning(t, c, base)
	cfg := lxcTemplateTurnsTheDisksIntoBaseImages(t, c, base)
	lxcTemplateClonesLinkedOrFull(t, c, base, cfg)
	lxcDestroyFreesTheVolumesUnlessInUseOrProtected(t, c, srv, base)
}

// The steps of TestLxcResizeTemplateCloneDestroy, in order on container
// 200 (base is its API path).

func lxcResizeOnlyGrows(t *testing.T, c *client, base string) {
	upid := c.mustOK("PUT", base+"/resize", vals("disk", "rootfs", "size", "+2G")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("resize: %s", st)
	}
	if info, _ := ParseUPID(upid); info.Type != "resize" {
		t.Errorf("resize task type %q", info.Type)
	}
	if cfg := c.mustOK("GET", base+"/config", nil).obj(t); cfg["rootfs"] != "local-lvm:vm-200-disk-0,size=10G" {
		t.Errorf("rootfs after resize: %v", cfg["rootfs"])
	}
	resizeRefusals := []struct {
		params url.Values
		status int
		reason string
	}{
		{vals("disk", "rootfs", "size", "5G"), 500, "unable to shrink disk size"},
		{vals("disk", "rootfs", "size", "10G"), 500, "disk is already at specified size"},
		{vals("disk", "mp3", "size", "+1G"), 500, "unable to parse volume ID ''"},
		{vals("disk", "scsi0", "size", "+1G"), 400, "Parameter verification failed."},
		{vals("disk", "rootfs", "size", "-1G"), 400, "Parameter verification failed."},
	}
	for _, tt := range resizeRefusals {
		if r := c.do("PUT", base+"/resize", tt.params); r.Status != tt.status || r.Reason != tt.reason {
			t.Errorf("resize %v: %d %q, want %d %q", tt.params, r.Status, r.Reason, tt.status, tt.reason)
		}
	}
}

func lxcTemplateDestroyAndCloneAreRefusedWhileSnapshottedOrRunning(t *testing.T, c *client, base string) {
	// Refusals of template and destroy.
	mustTaskOK(t, c, "POST", base+"/snapshot", vals("snapname", "s1"))
	if r := c.do("POST", base+"/template", nil); r.Status != 500 || r.Reason != "unable to create template, because CT contains snapshots" {
		t.Errorf("template with snapshot: %d %q", r.Status, r.Reason)
	}
	c.task("DELETE", base+"/snapshot/s1", nil)
	c.task("POST", base+"/status/start", nil)
	if r := c.do("POST", base+"/template", nil); r.Status != 500 || r.Reason != "you can't convert a CT to template if the CT is running" {
		t.Errorf("template while running: %d %q", r.Status, r.Reason)
	}
	if r := c.do("DELETE", base, nil); r.Status != 500 || r.Reason != "unable to destroy CT 200 - container is running" {
		t.Errorf("destroy while running: %d %q", r.Status, r.Reason)
	}
	if r := c.do("POST", base+"/clone", vals("newid", "210")); r.Status != 500 || r.Reason != "Full clone of a running container is only possible from a snapshot" {
		t.Errorf("full clone of a running CT: %d %q", r.Status, r.Reason)
	}
	c.task("POST", base+"/status/stop", nil)
}

// lxcTemplateTurnsTheDisksIntoBaseImages: the template call answers null.
// It returns the template's configuration.
func lxcTemplateTurnsTheDisksIntoBaseImages(t *testing.T, c *client, base string) map[string]any {
	r := c.mustOK("POST", base+"/template", nil)
	if string(r.Data) != "null" {
		t.Errorf("template answered %s, want null", r.Data)
	}
	cfg := c.mustOK("GET", base+"/config", nil).obj(t)
	if cfg["template"] != float64(1) || cfg["rootfs"] != "local-lvm:base-200-disk-0,size=10G" {
		t.Fatalf("template config: %v", cfg)
	}
	if r := c.do("POST", base+"/template", nil); r.Reason != "you can't convert a template to a template" {
		t.Errorf("template twice: %q", r.Reason)
	}
	if st := c.task("POST", base+"/status/start", nil); st != "you can't start a CT if it's a template" {
		t.Errorf("start template: %s", st)
	}
	return cfg
}

// lxcTemplateClonesLinkedOrFull: cfg is the template's configuration.
func lxcTemplateClonesLinkedOrFull(t *testing.T, c *client, base string, cfg map[string]any) {
	// Linked clone (the default for a template).
	mustTaskOK(t, c, "POST", base+"/clone", vals("newid", "201", "hostname", "clone-1", "description", "first clone"))
	cl := c.mustOK("GET", "/nodes/pve1/lxc/201/config", nil).obj(t)
	if cl["rootfs"] != "local-lvm:vm-201-disk-0,size=10G" || cl["hostname"] != "clone-1" || cl["description"] != "first clone" || cl["template"] != nil || cl["lock"] != nil {
		t.Errorf("clone config: %v", cl)
	}
	if cl["net0"] == cfg["net0"] || !strings.HasPrefix(cl["net0"].(string), "name=eth0,bridge=vmbr0,gw=10.0.0.1,hwaddr=BC:24:11:") {
		t.Errorf("clone kept the MAC address: %v vs %v", cl["net0"], cfg["net0"])
	}
	// Full clone to the shared storage.
	mustTaskOK(t, c, "POST", base+"/clone", vals("newid", "202", "full", "1", "storage", "nfs-shared"))
	if cl := c.mustOK("GET", "/nodes/pve1/lxc/202/config", nil).obj(t); cl["rootfs"] != "nfs-shared:202/vm-202-disk-0.raw,size=10G" || cl["hostname"] != "base" {
		t.Errorf("full clone config: %v", cl)
	}
	cloneRefusals := []struct {
		path   string
		params url.Values
		reason string
	}{
		{base + "/clone", vals("newid", "203", "full", "0", "storage", "local-lvm"), "parameter 'storage' not allowed for linked clones"},
		{base + "/clone", vals("newid", "201"), "CT 201 already exists on node 'pve1'"},
		{base + "/clone", vals("newid", "203", "snapname", "nope"), "snapshot 'nope' does not exist"},
		{base + "/clone", vals("newid", "203", "target", "pve2"), "can't clone CT to node 'pve2' (CT uses local storage)"},
		{base + "/clone", vals("newid", "203", "target", "pve9"), "no such cluster node 'pve9'"},
		{"/nodes/pve1/lxc/201/clone", vals("newid", "203", "full", "0"), "Linked clone feature for 'local-lvm:vm-201-disk-0' is not available"},
	}
	for _, tt := range cloneRefusals {
		if r := c.do("POST", tt.path, tt.params); r.Status != 500 || r.Reason != tt.reason {
			t.Errorf("clone %v: %d %q, want %q", tt.params, r.Status, r.Reason, tt.reason)
		}
	}
}

func lxcDestroyFreesTheVolumesUnlessInUseOrProtected(t *testing.T, c *client, srv *Server, base string) {
	// The base volume cannot go while a linked clone uses it.
	if st := c.task("DELETE", base, nil); st != "base volume 'local-lvm:base-200-disk-0' is still in use by linked cloned" {
		t.Errorf("destroy base: %s", st)
	}
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/lxc/201", vals("purge", "1", "destroy-unreferenced-disks", "1"))
	mustTaskOK(t, c, "DELETE", base, nil)
	if vols := srv.Volumes("pve1", "local-lvm"); len(vols) != 0 {
		t.Errorf("volumes left: %v", vols)
	}
	if r := c.do("GET", base+"/config", nil); r.Status != 500 || r.Reason != "Configuration file 'nodes/pve1/lxc/200.conf' does not exist" {
		t.Errorf("gone: %d %q", r.Status, r.Reason)
	}
	// Protection refuses destroy.
	createCT(t, c, "204", "protection", "1")
	if r := c.do("DELETE", "/nodes/pve1/lxc/204", nil); r.Status != 500 || r.Reason != "can't remove CT 204 - protection mode enabled" {
		t.Errorf("protected destroy: %d %q", r.Status, r.Reason)
	}
	// A forced destroy stops a running container first.
	createCT(t, c, "205")
	c.task("POST", "/nodes/pve1/lxc/205/status/start", nil)
	if st := c.task("DELETE", "/nodes/pve1/lxc/205", vals("force", "1")); st != "OK" {
		t.Errorf("forced destroy: %s", st)
	}
}

func TestLxcSnapshots(t *testing.T) {
	_, c := lxcSim(t, Options{})
	createCT(t, c, "200", "memory", "512")
	base := "/nodes/pve1/lxc/200"
	mustTaskOK(t, c, "POST", base+"/snapshot", vals("snapname", "before", "description", "pre-upgrade"))
	c.mustOK("PUT", base+"/config", vals("memory", "2048"))
	list := c.mustOK("GET", base+"/snapshot", nil).list(t)
	if len(list) != 2 || list[0]["name"] != "before" || list[0]["description"] != "pre-upgrade" || list[1]["name"] != "current" || list[1]["parent"] != "before" {
		t.Errorf("snapshot list: %v", list)
	}
	snapCfg := c.mustOK("GET", base+"/snapshot/before/config", nil).obj(t)
	if snapCfg["memory"] != float64(512) {
		t.Errorf("snapshot config: %v", snapCfg)
	}
	if cfg := c.mustOK("GET", base+"/config", vals("snapshot", "before")).obj(t); cfg["memory"] != float64(512) {
		t.Errorf("config?snapshot: %v", cfg)
	}
	c.mustOK("PUT", base+"/snapshot/before/config", vals("description", "renamed"))
	refusals := []struct {
		method, path string
		params       url.Values
		status       int
		reason       string
	}{
		{"POST", base + "/snapshot", vals("snapname", "current"), 500, "unable to use snapshot name 'current' (reserved name)"},
		{"POST", base + "/snapshot", vals("snapname", "vzdump"), 500, "unable to use snapshot name 'vzdump' (reserved name)"},
		{"POST", base + "/snapshot", vals("snapname", "1bad"), 400, "Parameter verification failed."},
		{"GET", base + "/config", vals("snapshot", "before", "current", "1"), 400, "Parameter verification failed."},
		{"GET", base + "/snapshot/nope/config", nil, 500, "snapshot 'nope' does not exist"},
	}
	for _, tt := range refusals {
		if r := c.do(tt.method, tt.path, tt.params); r.Status != tt.status || r.Reason != tt.reason {
			t.Errorf("%s %s %v: %d %q, want %d %q", tt.method, tt.path, tt.params, r.Status, r.Reason, tt.status, tt.reason)
		}
	}
	if st := c.task("POST", base+"/snapshot", vals("snapname", "before")); st != "snapshot name 'before' already used" {
		t.Errorf("duplicate snapshot: %s", st)
	}
	mustTaskOK(t, c, "POST", base+"/snapshot/before/rollback", vals("start", "1"))
	cfg := c.mustOK("GET", base+"/config", nil).obj(t)
	st := c.mustOK("GET", base+"/status/current", nil).obj(t)
	if cfg["memory"] != float64(512) || cfg["parent"] != "before" || st["status"] != "running" {
		t.Errorf("after rollback: %v %v", cfg, st["status"])
	}
	mustTaskOK(t, c, "DELETE", base+"/snapshot/before", nil)
	if st := c.task("DELETE", base+"/snapshot/before", nil); st != "snapshot 'before' does not exist" {
		t.Errorf("delete twice: %s", st)
	}
	if cfg := c.mustOK("GET", base+"/config", nil).obj(t); cfg["parent"] != nil {
		t.Errorf("parent after delete: %v", cfg["parent"])
	}
}

func TestLxcPowerRefusalsAndBridges(t *testing.T) {
	_, c := lxcSim(t, Options{})
	createCT(t, c, "200", "net1", "name=eth1,bridge=vmbr7")
	base := "/nodes/pve1/lxc/200"
	for _, tt := range []struct{ path, reason string }{
		{"/status/stop", "CT 200 not running"},
		{"/status/shutdown", "CT 200 not running"},
		{"/status/reboot", "VM 200 not running"},
	} {
		if r := c.do("POST", base+tt.path, nil); r.Status != 500 || r.Reason != tt.reason {
			t.Errorf("%s: %d %q, want %q", tt.path, r.Status, r.Reason, tt.reason)
		}
	}
	if r := c.do("POST", "/nodes/pve1/lxc/999/status/start", nil); r.Status != 500 || r.Reason != "Configuration file 'nodes/pve1/lxc/999.conf' does not exist" {
		t.Errorf("start missing CT: %d %q", r.Status, r.Reason)
	}
	if r := c.do("POST", "/nodes/pve2/lxc/200/status/start", nil); r.Reason != "Configuration file 'nodes/pve2/lxc/200.conf' does not exist" {
		t.Errorf("start on the wrong node: %q", r.Reason)
	}
	// A NIC on a bridge the node does not have fails the start ...
	if st := c.task("POST", base+"/status/start", nil); st != "startup for container '200' failed" {
		t.Errorf("start with a missing bridge: %s", st)
	}
	// ... until the bridge is created and the network applied.
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr7", "type", "bridge", "autostart", "1"))
	if st := c.task("POST", base+"/status/start", nil); st != "startup for container '200' failed" {
		t.Errorf("start with a staged bridge: %s", st)
	}
	c.task("PUT", "/nodes/pve1/network", nil)
	if st := c.task("POST", base+"/status/start", nil); st != "OK" {
		t.Errorf("start after applying the bridge: %s", st)
	}
	// start=1 on create starts the container when it is made.
	createCT(t, c, "201", "start", "1")
	if st := c.mustOK("GET", "/nodes/pve1/lxc/201/status/current", nil).obj(t); st["status"] != "running" || st["pid"] == nil {
		t.Errorf("created with start=1: %v", st)
	}
}

// TestLxcTasksHoldTheConfigLock runs container tasks on a fake clock: a
// start requested while the create task extracts the template waits for
// the config lock and runs when the create is done; a config update that
// cannot get the lock within the timeout fails as Proxmox's flock does.
func TestLxcTasksHoldTheConfigLock(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := lxcSim(t, Options{TaskSpeed: 1, Clock: clock})
	create := c.mustOK("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:2")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	if l := c.mustOK("GET", "/nodes/pve1/lxc", nil).list(t); len(l) != 1 || l[0]["lock"] != "create" {
		t.Errorf("during create: %v", l)
	}
	if cfg := c.mustOK("GET", "/nodes/pve1/lxc/200/config", nil).obj(t); cfg["lock"] != "create" {
		t.Errorf("config during create: %v", cfg)
	}
	start := c.mustOK("POST", "/nodes/pve1/lxc/200/status/start", nil).str(t)
	waitSleepers(t, clock, 2, "start did not wait for the lock")
	for i := 0; i < 3000 && !(isDone(srv, create) && isDone(srv, start)); i++ {
		clock.Advance(100 * time.Millisecond)
		time.Sleep(time.Millisecond)
	}
	if st := c.waitTask(create); st != "OK" {
		t.Fatalf("create: %s", st)
	}
	if st := c.waitTask(start); st != "OK" {
		t.Fatalf("start after create: %s", st)
	}
	// A long operation holds the lock: the update waits 10 s, then fails.
	release := srv.HoldGuestLock(200)
	done := make(chan apiResp, 1)
	waiting := clock.Waiters()
	go func() { done <- c.do("PUT", "/nodes/pve1/lxc/200/config", vals("swap", "256")) }()
	waitSleepers(t, clock, waiting+1, "update did not wait for the lock")
	clock.Advance(lockTimeout)
	r := <-done
	release()
	if r.Status != 500 || r.Reason != "can't lock file '/run/lock/lxc/pve-config-200.lock' - got timeout" {
		t.Errorf("update under a held lock: %d %q", r.Status, r.Reason)
	}
}
