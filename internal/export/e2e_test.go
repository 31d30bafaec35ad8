package export_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const (
	tokenID     = "root@pam!proxmops"
	tokenSecret = "export-secret"
	sshKey      = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGvY7cXKfJ7Q0Zl1dFh4r3n1Xx2m9Ykq1z5b7a8c9d0e user@laptop"
	ctTemplate  = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"
)

type cluster struct {
	t      *testing.T
	sim    *pvesim.Server
	client *pve.Client
}

func newCluster(t *testing.T) *cluster {
	t.Helper()
	return newClusterWith(t, pvesim.Options{TaskSpeed: 0.01})
}

// newClusterWith serves a two-node simulator with o and a client of it.
func newClusterWith(t *testing.T, o pvesim.Options) *cluster {
	t.Helper()
	o.Nodes, o.TokenID, o.TokenSecret, o.Seed = 2, tokenID, tokenSecret, 7
	sim := simtest.Start(t, o)
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: tokenID, TokenSecret: tokenSecret,
		RetryBackoff: 5 * time.Millisecond, TaskPollMin: 5 * time.Millisecond, TaskPollMax: 40 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return &cluster{t: t, sim: sim, client: client}
}

// call makes a request as a person would in the Proxmox UI or with pvesh,
// and waits for its task.
func (c *cluster) call(method, path string, kv ...string) {
	c.t.Helper()
	p := pve.NewParams()
	for i := 0; i+1 < len(kv); i += 2 {
		p.Set(kv[i], kv[i+1])
	}
	var upid string
	var err error
	ctx := context.Background()
	switch method {
	case "POST":
		err = c.client.Post(ctx, path, p, &upid)
	case "PUT":
		err = c.client.Put(ctx, path, p, &upid)
	}
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	if strings.HasPrefix(upid, "UPID:") {
		if _, err := c.client.WaitTask(ctx, upid, nil); err != nil {
			c.t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func (c *cluster) config(vmid int, typ string) map[string]string {
	c.t.Helper()
	ctx := context.Background()
	var cfg pve.ConfigValues
	var err error
	if typ == "lxc" {
		cfg, err = c.client.LxcConfig(ctx, "pve1", vmid)
	} else {
		cfg, err = c.client.QemuConfig(ctx, "pve1", vmid, false)
	}
	if err != nil {
		c.t.Fatal(err)
	}
	return map[string]string(cfg)
}

// handMade builds, through the API alone, what a person's cluster holds:
// a cloud-init VM, a template with a linked and a full clone, a stopped
// VM, and a container with a mount point.
func handMade(t *testing.T) *cluster {
	c := newCluster(t)
	c.call("POST", "/nodes/pve1/qemu", "vmid", "100", "name", "web-01", "cores", "2", "memory", "2048", "cpu", "host",
		"ostype", "l26", "scsihw", "virtio-scsi-single", "scsi0", "local-lvm:4,discard=on,ssd=1", "scsi1", "local-lvm:8",
		"net0", "virtio,bridge=vmbr0,firewall=1", "net1", "e1000,bridge=vmbr0,tag=20", "ide2", "local-lvm:cloudinit",
		"ciuser", "debian", "cipassword", "hunter2", "sshkeys", pve.EncodeSSHKeys([]string{sshKey}),
		"ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1", "nameserver", "1.1.1.1", "tags", "web;prod", "onboot", "1",
		"description", "Web server\nmade by hand", "agent", "1", "boot", "order=scsi0;net0", "startup", "order=2,up=30")
	c.call("POST", "/nodes/pve1/qemu/100/status/start")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "9000", "name", "debian-tpl", "cores", "1", "memory", "1024",
		"scsihw", "virtio-scsi-single", "scsi0", "local-lvm:2", "net0", "virtio,bridge=vmbr0", "ide2", "local-lvm:cloudinit",
		"ciuser", "debian", "tags", "base")
	c.call("POST", "/nodes/pve1/qemu/9000/template")
	c.call("POST", "/nodes/pve1/qemu/9000/clone", "newid", "130", "name", "app-01")
	c.call("PUT", "/nodes/pve1/qemu/130/config", "cores", "4", "tags", "app")
	c.call("POST", "/nodes/pve1/qemu/130/status/start")
	c.call("POST", "/nodes/pve1/qemu/9000/clone", "newid", "131", "name", "app-02", "full", "1")
	// On a file storage a linked clone's volume names its template's base
	// image (Plugin.pm clone_image).
	c.call("POST", "/nodes/pve1/qemu", "vmid", "9001", "name", "ubuntu-tpl", "scsi0", "nfs-shared:2", "net0", "virtio,bridge=vmbr0")
	c.call("POST", "/nodes/pve1/qemu/9001/template")
	c.call("POST", "/nodes/pve1/qemu/9001/clone", "newid", "140", "name", "app-03")
	c.call("POST", "/nodes/pve1/qemu/140/status/start")
	if err := c.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: ctTemplate, Size: 120 << 20}); err != nil {
		t.Fatal(err)
	}
	c.call("POST", "/nodes/pve1/lxc", "vmid", "200", "hostname", "db-01", "ostemplate", ctTemplate, "rootfs", "local-lvm:8",
		"memory", "1024", "swap", "256", "cores", "2", "net0", "name=eth0,bridge=vmbr0,ip=dhcp,firewall=1", "unprivileged", "1",
		"features", "nesting=1", "onboot", "1", "tags", "db", "mp0", "local-lvm:4,mp=/var/lib/postgresql,backup=1")
	c.call("POST", "/nodes/pve1/lxc/200/status/start")
	return c
}

func export1(t *testing.T, c *cluster, o export.Options) *export.Result {
	t.Helper()
	res, err := export.Run(context.Background(), c.client, o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func file(t *testing.T, res *export.Result, path string) string {
	t.Helper()
	for _, f := range res.Files {
		if f.Path == path {
			return string(f.Data)
		}
	}
	t.Fatalf("no %s in the export: %v", path, paths(res))
	return ""
}

// paths is the paths of the files res wrote, in its order.
func paths(res *export.Result) []string {
	var have []string
	for _, f := range res.Files {
		have = append(have, f.Path)
	}
	return have
}

// wantFiles fails unless res wrote exactly the files want names, in order.
func wantFiles(t *testing.T, res *export.Result, want string) {
	t.Helper()
	if got := paths(res); strings.Join(got, " ") != want {
		t.Fatalf("files: %v, want %s", got, want)
	}
}

// checkClean fails unless the exported tree checks against c's cluster
// with no issue.
func (c *cluster) checkClean(res *export.Result) {
	c.t.Helper()
	if issues, err := res.Check(context.Background(), c.client); err != nil || len(issues) != 0 {
		c.t.Fatalf("check: %v %q", err, issues)
	}
}

// The export of a hand-made cluster validates, declares each guest in
// Proxmox's values, and a plan of it against the same cluster adopts every
// guest with the ownership tag alone: no replacement, no other update, no
// creation-only note. A sync then owns them, and a later change is
// corrected like any drift.
func TestExportOfAHandMadeClusterPlansOnlyAdoption(t *testing.T) {
	c := handMade(t)
	res := export1(t, c, export.Options{All: true})
	dir := t.TempDir()
	if err := res.WriteDir(dir, false); err != nil {
		t.Fatal(err)
	}
	set, err := manifest.LoadDir(dir) // what proxmops validate runs
	if err != nil {
		t.Fatalf("the export does not validate: %v", err)
	}
	if n := len(set.Resources); n != 7 {
		t.Fatalf("want 7 manifests, got %d: %v", n, res.Files)
	}

	web := fileWith(t, res, "vms/web-01.yaml", "proxmops.dev/adopt: \"true\"", "vmid: 100", "sshKeys:\n      - "+sshKey, "user: debian",
		"passwordFrom", "slot: scsi0", "discard: true", "ssd: true", "slot: net1", "model: e1000", "tag: 20", "firewall: true",
		"onboot: true", "order: 2", "- prod\n    - web", "ip: 10.0.0.5/24", "gw: 10.0.0.1")
	if strings.Contains(web, "hunter2") || strings.Contains(web, "state:") {
		t.Errorf("vms/web-01.yaml:\n%s", web)
	}
	clone := file(t, res, "vms/app-01.yaml")
	// On LVM-thin a linked clone's volume is a plain vm-130-disk-0
	// (LvmThinPlugin.pm clone_image): its template cannot be told.
	if strings.Contains(clone, "fromTemplate") || strings.Contains(clone, "image:") || !strings.Contains(clone, "cores: 4") {
		t.Errorf("the linked clone:\n%s", clone)
	}
	nfsClone := file(t, res, "vms/app-03.yaml")
	if !strings.Contains(nfsClone, "fromTemplate:\n    name: ubuntu-tpl\n    linked: true") {
		t.Errorf("the linked clone on a file storage:\n%s", nfsClone)
	}
	full := file(t, res, "vms/app-02.yaml")
	if strings.Contains(full, "fromTemplate") || !strings.Contains(full, "state: stopped") {
		t.Errorf("the full clone (stopped):\n%s", full)
	}
	tpl := file(t, res, "templates/debian-tpl.yaml")
	if !strings.Contains(tpl, "kind: Template") || !strings.Contains(tpl, "source: local-lvm:base-9000-disk-0") {
		t.Errorf("the template:\n%s", tpl)
	}
	fileWith(t, res, "containers/db-01.yaml", "hostname: db-01", "unprivileged: true", "nesting: true", "path: /var/lib/postgresql", "backup: true", "swap: 256", "ip: dhcp")

	eng := engine.New(c.client, engine.Options{})
	d := engine.DesiredFromSet(set, nil)
	p, err := eng.Plan(context.Background(), d, "export")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if !a.Adopt || a.Conflicted() || a.Action != vocab.ActionUpdate || len(a.Changes) != 1 || a.Changes[0].Field != "tags" ||
			strings.Contains(a.Reason, "creation-only") || strings.Contains(a.Reason, "never shrunk") {
			t.Errorf("%s/%s: want the adoption alone, got %s %q %+v", a.Kind, a.Name, a.Action, a.Reason, a.Changes)
		}
	}
	if issues, err := res.Check(context.Background(), c.client); err != nil || len(issues) != 0 || len(res.Refused) != 0 {
		t.Errorf("check: %v %q", err, issues)
	}

	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rep.Results {
		if r.Error != "" {
			t.Fatalf("%s/%s: %s", r.Kind, r.Name, r.Error)
		}
	}
	for _, id := range []int{100, 130, 131, 140, 9000, 9001} {
		if tags := c.config(id, "qemu")["tags"]; !strings.Contains(tags, engine.OwnerTag) {
			t.Errorf("VMID %d not adopted: %q", id, tags)
		}
	}
	if cfg := c.config(100, "qemu"); cfg["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";prod;web" || cfg["cores"] != "2" {
		t.Errorf("web-01 after the sync: %v", cfg)
	}
	p, err = eng.Plan(context.Background(), d, "export")
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range p.Actions {
		if a.Action != vocab.ActionNone || a.Status != vocab.StatusSynced {
			t.Errorf("after the sync %s/%s: %s %s %q", a.Kind, a.Name, a.Action, a.Status, a.Reason)
		}
	}

	c.call("PUT", "/nodes/pve1/qemu/100/config", "cores", "6")
	c.call("PUT", "/nodes/pve1/lxc/200/config", "memory", "2048")
	p, err = eng.Plan(context.Background(), d, "export")
	if err != nil {
		t.Fatal(err)
	}
	for key, field := range map[string]string{"VirtualMachine/web-01": "cores", "Container/db-01": "memory"} {
		kind, name, _ := strings.Cut(key, "/")
		a := p.Find(kind, name)
		if a == nil || a.Adopt || !a.Owned || a.Action == vocab.ActionNone || len(a.Changes) != 1 || a.Changes[0].Field != field {
			t.Fatalf("drift on %s: %+v", key, a)
		}
	}
	if _, err := eng.Apply(context.Background(), p, nil); err != nil {
		t.Fatal(err)
	}
	if cfg := c.config(100, "qemu"); cfg["cores"] != "2" {
		t.Errorf("drift not corrected: cores %s", cfg["cores"])
	}
	if cfg := c.config(200, "lxc"); cfg["memory"] != "1024" {
		t.Errorf("drift not corrected: memory %s", cfg["memory"])
	}
}

// --vmid and --node select guests; an existing file is never overwritten
// without --force; the archive holds the same tree.
func TestExportSelectsAndNeverOverwrites(t *testing.T) {
	c := handMade(t)
	res := export1(t, c, export.Options{VMIDs: "100,130-140"})
	wantFiles(t, res, "vms/app-01.yaml vms/app-02.yaml vms/app-03.yaml vms/web-01.yaml")
	if res := export1(t, c, export.Options{All: true, Node: "pve2"}); len(res.Files) != 0 {
		t.Fatalf("pve2 has no guest: %v", res.Files)
	}
	if _, err := export.Run(context.Background(), c.client, export.Options{}); err == nil || !strings.Contains(err.Error(), "--vmid LIST") {
		t.Fatalf("no selection: %v", err)
	}
	if _, err := export.Run(context.Background(), c.client, export.Options{All: true, Node: "pve9"}); err == nil || !strings.Contains(err.Error(), "no such node") {
		t.Fatalf("unknown node: %v", err)
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "vms"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "vms/web-01.yaml"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := res.WriteDir(dir, false); err == nil || !strings.Contains(err.Error(), "vms/web-01.yaml") || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("want a refusal: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "vms/app-01.yaml")); err == nil {
		t.Fatal("a refused export wrote files")
	}
	if err := res.WriteDir(dir, true); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "vms/web-01.yaml")); !strings.Contains(string(b), "vmid: 100") {
		t.Fatalf("--force did not overwrite: %s", b)
	}
}

// --kind Network writes the bridges that hold no gateway (never the
// management bridge), and an interface proxmops does not own says so.
func TestExportNetworksLeavesTheManagementBridgeOut(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/nodes/pve1/network", "iface", "vmbr1", "type", "bridge", "autostart", "1", "bridge_vlan_aware", "1",
		"bridge_vids", "2-100", "comments", "lab")
	c.call("PUT", "/nodes/pve1/network")
	res := export1(t, c, export.Options{Kinds: []string{"network"}, Node: "pve1"})
	if len(res.Files) != 1 {
		t.Fatalf("want vmbr1 alone: %+v", res.Files)
	}
	fileWith(t, res, "networks/vmbr1.yaml", "kind: Network", "node: pve1", "type: bridge", "vlanAware: true", "vlanIds: 2-100", "autostart: true",
		"comments: lab", "NOTE: proxmops does not own this interface")
	issues, err := res.Check(context.Background(), c.client)
	if err != nil || len(issues) != 1 || !strings.Contains(issues[0], "Network/vmbr1") || !strings.Contains(issues[0], "does not own") {
		t.Fatalf("check: %v %q", err, issues)
	}
}

// A linked clone whose base image belongs to no template on the cluster
// keeps that image as its source (creation-only: the adoption accepts it).
func TestLinkedCloneOfAMissingTemplateNamesTheBaseVolume(t *testing.T) {
	c := newCluster(t)
	if err := c.sim.AddGuest(pvesim.GuestSpec{VMID: 141, Node: "pve1", Config: map[string]string{"name": "orphan",
		"scsi0": "nfs-shared:9500/base-9500-disk-0.qcow2/141/vm-141-disk-0.qcow2,size=2G", "boot": "order=scsi0"}}); err != nil {
		t.Fatal(err)
	}
	res := export1(t, c, export.Options{VMIDs: "141"})
	y := file(t, res, "vms/orphan.yaml")
	if !strings.Contains(y, "image:\n    source: nfs-shared:9500/base-9500-disk-0.qcow2\n") || !strings.Contains(y, "NOTE: linked clone of nfs-shared:9500/base-9500-disk-0.qcow2") {
		t.Fatalf("vms/orphan.yaml:\n%s", y)
	}
	c.checkClean(res)
}

// --kind sdn writes the zones and vnets with their subnets: a zone that
// matches plans in sync, a vnet proxmops does not own is a Conflict (no
// adoption for SDN), one whose alias carries the mark plans in sync.
func TestExportSDN(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/cluster/sdn/zones", "zone", "lab", "type", "simple", "dhcp", "dnsmasq", "ipam", "pve")
	c.call("POST", "/cluster/sdn/vnets", "vnet", "labnet", "zone", "lab", "alias", "Lab net")
	c.call("POST", "/cluster/sdn/vnets/labnet/subnets", "subnet", "10.10.0.0/24", "type", "subnet", "gateway", "10.10.0.1", "snat", "1",
		"dhcp-range", "start-address=10.10.0.100,end-address=10.10.0.200")
	c.call("POST", "/cluster/sdn/vnets", "vnet", "ownnet", "zone", "lab", "alias", "Own ("+engine.OwnerMark+")")
	c.call("PUT", "/cluster/sdn")
	res := export1(t, c, export.Options{Kinds: []string{"sdn"}})
	wantFiles(t, res, "sdn/vnet-labnet.yaml sdn/vnet-ownnet.yaml sdn/zone-lab.yaml")
	fileWith(t, res, "sdn/zone-lab.yaml", "kind: SdnZone", "type: simple", "dhcp: dnsmasq", "ipam: pve")
	fileWith(t, res, "sdn/vnet-labnet.yaml", "kind: SdnVnet", "zone: lab", "alias: Lab net", "subnet: 10.10.0.0/24", "gateway: 10.10.0.1", "snat: true", "start: 10.10.0.100", "end: 10.10.0.200")
	if own := file(t, res, "sdn/vnet-ownnet.yaml"); !strings.Contains(own, "alias: Own\n") {
		t.Errorf("the owned vnet's alias without the mark:\n%s", own)
	}
	issues, err := res.Check(context.Background(), c.client)
	if err != nil || len(issues) != 1 || !strings.Contains(issues[0], "SdnVnet/labnet") {
		t.Fatalf("check: %v %q", err, issues)
	}
}
