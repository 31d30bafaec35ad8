package pvesim

import (
	"net/url"
	"slices"
	"strings"
	"testing"
)

// allBut is every privilege except the named ones.
func allBut(except ...string) []string {
	var out []string
	for _, p := range privileges {
		if !slices.Contains(except, p) {
			out = append(out, p)
		}
	}
	return out
}

// privSim is a simulator whose token holds privs on "/", with a container
// template, an ISO and a VM 100 on pve1.
func privSim(t *testing.T, privs []string) (*Server, *client) {
	t.Helper()
	srv, c := lxcSim(t, Options{TokenPrivileges: privs})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{
		"name": "vm", "scsi0": "local-lvm:vm-100-disk-0,size=1G", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}})
	return srv, c
}

func TestTokenPrivilegesDenyWithProxmoxText(t *testing.T) {
	ctCreate := vals("vmid", "300", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "hostname", "ct", "memory", "256", "net0", "name=eth0,bridge=vmbr0")
	wantPrivRefusals(t, []privCase{
		{"config read needs VM.Audit", []string{"VM.Audit"}, "GET", "/nodes/pve1/qemu/100/config", nil,
			403, "Permission check failed (/vms/100, VM.Audit)"},
		{"changing cores needs VM.Config.CPU", []string{"VM.Config.CPU"}, "PUT", "/nodes/pve1/qemu/100/config", vals("cores", "4"),
			403, "Permission check failed (/vms/100, VM.Config.CPU)"},
		{"changing memory needs VM.Config.Memory", []string{"VM.Config.Memory"}, "PUT", "/nodes/pve1/qemu/100/config", vals("memory", "2048"),
			403, "Permission check failed (/vms/100, VM.Config.Memory)"},
		{"a new disk needs space on its storage", []string{"Datastore.AllocateSpace"}, "PUT", "/nodes/pve1/qemu/100/config", vals("scsi1", "local-lvm:1"),
			403, "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)"},
		{"a NIC needs SDN.Use on its bridge", []string{"SDN.Use"}, "PUT", "/nodes/pve1/qemu/100/config", vals("net1", "virtio,bridge=vmbr0"),
			403, "Permission check failed (/sdn/zones/localnetwork/vmbr0, SDN.Use)"},
		{"a tagged NIC needs SDN.Use on the VLAN", []string{"SDN.Use"}, "PUT", "/nodes/pve1/qemu/100/config", vals("net1", "virtio,bridge=vmbr0,tag=20"),
			403, "Permission check failed (/sdn/zones/localnetwork/vmbr0/20, SDN.Use)"},
		{"an ISO needs VM.Config.CDROM", []string{"VM.Config.CDROM"}, "PUT", "/nodes/pve1/qemu/100/config", vals("ide2", "local:iso/debian.iso,media=cdrom"),
			403, "Permission check failed (/vms/100, VM.Config.CDROM)"},
		{"args are for root@pam only", nil, "PUT", "/nodes/pve1/qemu/100/config", vals("args", "-no-reboot"),
			500, "only root can set 'args' config"},
		{"VM create needs VM.Allocate", []string{"VM.Allocate"}, "POST", "/nodes/pve1/qemu", vals("vmid", "101", "name", "x"),
			403, "Permission check failed"},
		{"VM create with a disk needs space", []string{"Datastore.AllocateSpace"}, "POST", "/nodes/pve1/qemu", vals("vmid", "101", "scsi0", "local-lvm:1"),
			403, "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)"},
		{"starting needs VM.PowerMgmt", []string{"VM.PowerMgmt"}, "POST", "/nodes/pve1/qemu/100/status/start", nil,
			403, "Permission check failed (/vms/100, VM.PowerMgmt)"},
		{"deleting needs VM.Allocate", []string{"VM.Allocate"}, "DELETE", "/nodes/pve1/qemu/100", nil,
			403, "Permission check failed (/vms/100, VM.Allocate)"},
		{"cloning needs VM.Clone on the source", []string{"VM.Clone"}, "POST", "/nodes/pve1/qemu/100/clone", vals("newid", "102"),
			403, "Permission check failed (/vms/100, VM.Clone)"},
		{"a privileged container needs Sys.Modify on /", []string{"Sys.Modify"}, "POST", "/nodes/pve1/lxc", withVals(ctCreate, "unprivileged", "0"),
			403, "Permission check failed (/, Sys.Modify)"},
		{"a container's rootfs needs space", []string{"Datastore.AllocateSpace"}, "POST", "/nodes/pve1/lxc", ctCreate,
			403, "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)"},
		{"a container's memory needs VM.Config.Memory", []string{"VM.Config.Memory"}, "POST", "/nodes/pve1/lxc", ctCreate,
			403, "Permission check failed (/vms/300, VM.Config.Memory)"},
		{"a container's template needs read access to its storage", []string{"Datastore.Audit", "Datastore.AllocateSpace", "Datastore.Allocate"}, "POST", "/nodes/pve1/lxc",
			vals("vmid", "300", "ostemplate", testTemplate, "hostname", "ct"),
			403, "Permission check failed (/storage/local, Datastore.AllocateSpace|Datastore.Audit)"},
		{"host networks need Sys.Modify on the node", []string{"Sys.Modify"}, "POST", "/nodes/pve1/network", vals("iface", "vmbr9", "type", "bridge"),
			403, "Permission check failed (/nodes/pve1, Sys.Modify)"},
		{"SDN zones need SDN.Allocate", []string{"SDN.Allocate"}, "POST", "/cluster/sdn/zones", vals("zone", "z1", "type", "simple"),
			403, "Permission check failed (/sdn/zones, SDN.Allocate)"},
		{"downloads need Datastore.AllocateTemplate", []string{"Datastore.AllocateTemplate"}, "POST", "/nodes/pve1/storage/local/download-url",
			vals("url", "http://127.0.0.1:1/x.iso", "content", "iso", "filename", "x.iso"),
			403, "Permission check failed (/storage/local, Datastore.AllocateTemplate)"},
		{"downloads need Sys.Audit and Sys.Modify on / or Sys.AccessNetwork", []string{"Sys.AccessNetwork", "Sys.Modify"}, "POST", "/nodes/pve1/storage/local/download-url",
			vals("url", "http://127.0.0.1:1/x.iso", "content", "iso", "filename", "x.iso"),
			403, "Permission check failed"},
		{"deleting an ISO needs Datastore.Allocate", []string{"Datastore.Allocate"}, "DELETE", "/nodes/pve1/storage/local/content/local:iso/debian.iso", nil,
			403, "Permission check failed (/storage/local, Datastore.Allocate)"},
		{"HA resources need Sys.Console on /", []string{"Sys.Console"}, "POST", "/cluster/ha/resources", vals("sid", "vm:100"),
			403, "Permission check failed (/, Sys.Console)"},
		{"pools need Pool.Allocate", []string{"Pool.Allocate"}, "POST", "/pools", vals("poolid", "p1"),
			403, "Permission check failed (/pool/p1, Pool.Allocate)"},
		{"node status needs Sys.Audit", []string{"Sys.Audit"}, "GET", "/nodes/pve1/status", nil,
			403, "Permission check failed (/nodes/pve1, Sys.Audit)"},
	}, func(t *testing.T, privs []string) *client {
		_, c := privSim(t, privs)
		return c
	})
}

func withVals(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

func TestTokenPrivilegesAllowWhatTheyGrant(t *testing.T) {
	_, c := privSim(t, []string{"VM.Audit", "VM.Config.CPU"})
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2"))
	perms := c.mustOK("GET", "/access/permissions", vals("path", "/vms/100")).obj(t)["/vms/100"].(map[string]any)
	if len(perms) != 2 || perms["VM.Audit"] != float64(1) || perms["VM.Config.CPU"] != float64(1) {
		t.Errorf("permissions on /vms/100 = %v, want VM.Audit and VM.Config.CPU, propagated", perms)
	}
}

func TestListsAreFilteredByPrivilege(t *testing.T) {
	srv, c := privSim(t, []string{"Sys.Audit"})
	mustAddGuest(t, srv, GuestSpec{VMID: 101, Node: "pve1", Config: map[string]string{"name": "other"}})
	root := rootClient(t, srv)
	root.mustOK("PUT", "/access/acl", vals("path", "/vms/101", "tokens", testTokenID, "roles", "PVEAuditor"))
	if l := c.mustOK("GET", "/nodes/pve1/qemu", nil).list(t); len(l) != 1 || l[0]["vmid"] != float64(101) {
		t.Errorf("qemu list = %v, want only VM 101", l)
	}
	var guests, storages int
	for _, e := range c.mustOK("GET", "/cluster/resources", nil).list(t) {
		switch e["type"] {
		case "qemu", "lxc":
			guests++
			if e["vmid"] != float64(101) {
				t.Errorf("resources show %v", e)
			}
		case "storage":
			storages++
		}
	}
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "node")).list(t) {
		if _, ok := e["maxmem"]; !ok {
			t.Errorf("node usage hidden with Sys.Audit: %v", e)
		}
	}
	if guests != 1 || storages != 0 {
		t.Errorf("resources: %d guests, %d storages; want 1 and 0", guests, storages)
	}
	if l := c.mustOK("GET", "/storage", nil).list(t); len(l) != 0 {
		t.Errorf("storage list = %v, want none without Datastore.Audit", l)
	}
	if r := c.do("GET", "/nodes/pve1/storage/local/content", nil); r.Reason != "Permission check failed (/storage/local, Datastore.Audit|Datastore.AllocateSpace)" {
		t.Errorf("content: %d %q", r.Status, r.Reason)
	}
}

func TestACLPropagationAndRoles(t *testing.T) {
	srv, c := privSim(t, []string{})
	root := rootClient(t, srv)
	// A role without propagation applies to the path only.
	root.mustOK("PUT", "/access/acl", vals("path", "/vms", "tokens", testTokenID, "roles", "PVEVMAdmin", "propagate", "0"))
	if r := c.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Status != 403 {
		t.Errorf("non-propagated role reached /vms/100: %d", r.Status)
	}
	root.mustOK("PUT", "/access/acl", vals("path", "/vms", "tokens", testTokenID, "roles", "PVEVMAdmin"))
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	// NoAccess on the guest wins over the propagated role.
	root.mustOK("PUT", "/access/acl", vals("path", "/vms/100", "tokens", testTokenID, "roles", "NoAccess"))
	if r := c.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Reason != "Permission check failed (/vms/100, VM.Audit)" {
		t.Errorf("NoAccess: %d %q", r.Status, r.Reason)
	}
	acl := root.mustOK("GET", "/access/acl", nil).list(t)
	if len(acl) != 3 {
		t.Errorf("acl = %v, want the token's role on / and two entries added", acl)
	}
	// The token may not grant itself more.
	if r := c.do("PUT", "/access/acl", vals("path", "/", "tokens", testTokenID, "roles", "Administrator")); r.Status != 403 {
		t.Errorf("self-grant: %d %q", r.Status, r.Reason)
	}
	if r := root.do("PUT", "/access/acl", vals("path", "/", "tokens", testTokenID, "roles", "Nope")); r.Reason != "role 'Nope' does not exist" {
		t.Errorf("unknown role: %d %q", r.Status, r.Reason)
	}
	if r := root.do("PUT", "/access/acl", vals("path", "/x/y", "tokens", testTokenID, "roles", "PVEAuditor")); r.Errors["path"] != "invalid ACL path '/x/y'" {
		t.Errorf("bad path: %d %v", r.Status, r.Errors)
	}
}

func TestBuiltinRoles(t *testing.T) {
	_, c := newSim(t, Options{})
	roles := map[string]string{}
	for _, r := range c.mustOK("GET", "/access/roles", nil).list(t) {
		roles[r["roleid"].(string)] = r["privs"].(string)
	}
	want := map[string]string{
		"PVEVMUser":         "VM.Audit,VM.Backup,VM.Config.CDROM,VM.Config.Cloudinit,VM.Console,VM.GuestAgent.Audit,VM.GuestAgent.FileRead,VM.GuestAgent.FileSystemMgmt,VM.GuestAgent.FileWrite,VM.PowerMgmt",
		"PVEDatastoreUser":  "Datastore.AllocateSpace,Datastore.Audit",
		"PVESDNUser":        "SDN.Audit,SDN.Use",
		"PVETemplateUser":   "VM.Audit,VM.Clone",
		"PVEPoolAdmin":      "Pool.Allocate,Pool.Audit",
		"NoAccess":          "",
		"PVEDatastoreAdmin": "Datastore.Allocate,Datastore.AllocateSpace,Datastore.AllocateTemplate,Datastore.Audit",
	}
	for id, privs := range want {
		if roles[id] != privs {
			t.Errorf("%s = %q, want %q", id, roles[id], privs)
		}
	}
	if n := len(strings.Split(roles["Administrator"], ",")); n != len(privileges) {
		t.Errorf("Administrator has %d privileges, want %d", n, len(privileges))
	}
	if strings.Contains(roles["PVEAdmin"], "Mapping.Modify") || strings.Contains(roles["PVEAdmin"], "Sys.Modify") {
		t.Errorf("PVEAdmin = %s", roles["PVEAdmin"])
	}
	one := c.mustOK("GET", "/access/roles/PVESDNUser", nil).obj(t)
	if len(one) != 2 || one["SDN.Use"] != float64(1) {
		t.Errorf("PVESDNUser = %v", one)
	}
}

func TestPoolRolesReachTheirGuests(t *testing.T) {
	srv, c := privSim(t, []string{})
	root := rootClient(t, srv)
	root.mustOK("POST", "/pools", vals("poolid", "team"))
	root.mustOK("PUT", "/pools", vals("poolid", "team", "vms", "100"))
	if r := c.do("GET", "/nodes/pve1/qemu/100/config", nil); r.Status != 403 {
		t.Fatalf("before the pool ACL: %d", r.Status)
	}
	root.mustOK("PUT", "/access/acl", vals("path", "/pool/team", "tokens", testTokenID, "roles", "PVEVMUser"))
	c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil)
	perms := c.mustOK("GET", "/access/permissions", vals("path", "/vms/100")).obj(t)["/vms/100"].(map[string]any)
	if perms["VM.PowerMgmt"] != float64(0) {
		t.Errorf("pool-derived privileges are never propagated: %v", perms)
	}
	// Creating into the pool needs VM.Allocate there.
	r := c.do("POST", "/nodes/pve1/qemu", vals("vmid", "150", "pool", "team"))
	if r.Reason != "Permission check failed" {
		t.Errorf("create into the pool without VM.Allocate: %d %q", r.Status, r.Reason)
	}
}

func TestBridgesAreListedOnlyWithSDNAccess(t *testing.T) {
	srv, c := privSim(t, []string{"Sys.Audit"})
	for _, e := range c.mustOK("GET", "/nodes/pve1/network", nil).list(t) {
		if e["type"] == "bridge" {
			t.Errorf("bridge listed without SDN.Audit or SDN.Use: %v", e)
		}
	}
	rootClient(t, srv).mustOK("PUT", "/access/acl", vals("path", "/sdn/zones/localnetwork/vmbr0/20", "tokens", testTokenID, "roles", "PVESDNUser"))
	found := false
	for _, e := range c.mustOK("GET", "/nodes/pve1/network", nil).list(t) {
		found = found || e["iface"] == "vmbr0"
	}
	if !found {
		t.Error("vmbr0 not listed with SDN.Use on one of its VLANs")
	}
}

func TestPrivsepTokenOfAnotherUserHasTheIntersection(t *testing.T) {
	srv, c := newSim(t, Options{TokenID: "proxmops@pve!gitops", TokenSecret: "x", RootPassword: "hunter2", TokenPrivileges: []string{"VM.Audit", "Sys.Modify"}})
	c.header.Set("Authorization", "PVEAPIToken=proxmops@pve!gitops=x")
	root := rootClient(t, srv)
	perm := func() map[string]any {
		return c.mustOK("GET", "/access/permissions", vals("path", "/")).obj(t)["/"].(map[string]any)
	}
	if p := perm(); len(p) != 2 {
		t.Fatalf("token privileges = %v, want VM.Audit and Sys.Modify", p)
	}
	// The user loses Sys.Modify: so does its token.
	root.mustOK("PUT", "/access/acl", vals("path", "/", "users", "proxmops@pve", "roles", "Administrator", "delete", "1"))
	root.mustOK("PUT", "/access/acl", vals("path", "/", "users", "proxmops@pve", "roles", "PVEAuditor"))
	if p := perm(); len(p) != 1 || p["VM.Audit"] != float64(1) {
		t.Errorf("token privileges = %v, want only VM.Audit", p)
	}
	if r := c.do("GET", "/access/permissions", vals("userid", "root@pam")); r.Reason != "Permission check failed (/access, Sys.Audit)" {
		t.Errorf("reading another user's permissions: %d %q", r.Status, r.Reason)
	}
}

// resize_vm checks the storage in its worker: the task fails.
func TestResizeTaskNeedsSpaceOnTheStorage(t *testing.T) {
	_, c := privSim(t, allBut("Datastore.AllocateSpace"))
	if st := c.task("PUT", "/nodes/pve1/qemu/100/resize", vals("disk", "scsi0", "size", "+1G")); st != "Permission check failed (/storage/local-lvm, Datastore.AllocateSpace)" {
		t.Errorf("resize task: %q", st)
	}
}

func TestNodeUsageNeedsSysAudit(t *testing.T) {
	_, c := privSim(t, []string{"VM.Audit"})
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "node")).list(t) {
		if _, ok := e["maxmem"]; ok || e["status"] == nil {
			t.Errorf("node entry without Sys.Audit: %v", e)
		}
	}
}
