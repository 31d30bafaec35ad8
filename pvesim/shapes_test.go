package pvesim

// Tests of the shape of answers: the JSON types and members real Proxmox
// VE 9 sends, which strictly decoding clients depend on.

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// rawMembers decodes an object keeping each member's JSON text.
func rawMembers(t *testing.T, data json.RawMessage) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("not an object: %s", data)
	}
	return m
}

// rawList decodes a list of objects keeping each member's JSON text.
func rawList(t *testing.T, data json.RawMessage) []map[string]json.RawMessage {
	t.Helper()
	var l []map[string]json.RawMessage
	if err := json.Unmarshal(data, &l); err != nil {
		t.Fatalf("not a list of objects: %s", data)
	}
	return l
}

// check_type keeps a "number" key as the string it read from the config
// file (qemu-server PVE/QemuServer.pm, pve-container PVE/LXC/Config.pm):
// config, pending and snapshot config answer "1.5", never 1.5.
func TestConfigNumberKeysReadBackAsStrings(t *testing.T) {
	_, c := lxcSim(t, Options{Nodes: 1})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "cpulimit", "1.5", "migrate_downtime", "0.3", "cores", "2"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "cpulimit", "2.5"))
	c.task("POST", "/nodes/pve1/qemu/100/snapshot", vals("snapname", "s1"))
	want := map[string]string{"cpulimit": `"1.5"`, "migrate_downtime": `"0.3"`, "cores": `2`}
	for _, path := range []string{"/nodes/pve1/qemu/100/config", "/nodes/pve1/qemu/100/snapshot/s1/config"} {
		m := rawMembers(t, c.mustOK("GET", path, nil).Data)
		for k, w := range want {
			if got := string(m[k]); got != w {
				t.Errorf("%s %s = %s, want %s", path, k, got, w)
			}
		}
	}
	if got := string(rawMembers(t, c.mustOK("GET", "/nodes/pve1/lxc/200/config", nil).Data)["cpulimit"]); got != `"2.5"` {
		t.Errorf("lxc config cpulimit = %s, want \"2.5\"", got)
	}
	for _, path := range []string{"/nodes/pve1/qemu/100/pending", "/nodes/pve1/lxc/200/pending"} {
		found := false
		for _, e := range rawList(t, c.mustOK("GET", path, nil).Data) {
			if string(e["key"]) == `"cpulimit"` {
				found = true
				if v := e["value"]; len(v) == 0 || v[0] != '"' {
					t.Errorf("%s cpulimit value = %s, want a string", path, v)
				}
			}
		}
		if !found {
			t.Errorf("%s has no cpulimit entry", path)
		}
	}
}

// A container's cpus is vmstatus' cores || cpulimit (pve-container
// src/PVE/LXC.pm): the raw cpulimit string without cores, the node's CPU
// count without either.
func TestContainerCPUsIsTheRawCPULimit(t *testing.T) {
	srv, c := lxcSim(t, Options{Nodes: 1})
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "cpulimit", "1.5"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "201", "ostemplate", testTemplate, "rootfs", "local-lvm:1", "cpulimit", "1.5", "cores", "2"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "202", "ostemplate", testTemplate, "rootfs", "local-lvm:1"))
	want := map[string]string{`200`: `"1.5"`, `201`: `2`, `202`: strconv.Itoa(srv.state.Nodes[0].MaxCPU)}
	for _, e := range rawList(t, c.mustOK("GET", "/nodes/pve1/lxc", nil).Data) {
		if got, w := string(e["cpus"]), want[string(e["vmid"])]; got != w {
			t.Errorf("list: CT %s cpus = %s, want %s", e["vmid"], got, w)
		}
	}
	for id, w := range want {
		if got := string(rawMembers(t, c.mustOK("GET", "/nodes/pve1/lxc/"+id+"/status/current", nil).Data)["cpus"]); got != w {
			t.Errorf("status/current: CT %s cpus = %s, want %s", id, got, w)
		}
	}
}

// vmstatus (qemu-server PVE/QemuServer.pm, pve-container src/PVE/LXC.pm)
// and vm_status (API2/Qemu.pm): which members a stopped and a running
// guest's status carries, and their JSON types.
func TestGuestStatusMembers(t *testing.T) {
	_, c := lxcSim(t, Options{Nodes: 1})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1", "net0", "virtio,bridge=vmbr0",
		"balloon", "256", "memory", "1024", "serial0", "socket", "vga", "qxl"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:1"))
	kinds := func(m map[string]json.RawMessage, keys ...string) string {
		var parts []string
		for _, k := range keys {
			v, ok := m[k]
			switch {
			case !ok:
				parts = append(parts, k+":absent")
			case string(v) == "null":
				parts = append(parts, k+":null")
			case v[0] == '"':
				parts = append(parts, k+":string")
			case v[0] == '{':
				parts = append(parts, k+":object")
			default:
				parts = append(parts, k+":number")
			}
		}
		return strings.Join(parts, " ")
	}
	check := func(what, got, want string) {
		t.Helper()
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", what, got, want)
		}
	}
	keys := []string{"diskread", "diskwrite", "qmpstatus", "memhost", "balloon_min", "shares", "serial", "spice", "clipboard",
		"nics", "blockstat", "proxmox-support", "balloon", "ballooninfo", "freemem", "pressurecpusome", "pressurememoryfull", "cpus"}
	stopped := rawMembers(t, c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).Data)
	check("stopped VM status/current", kinds(stopped, keys...),
		"diskread:absent diskwrite:absent qmpstatus:string memhost:number balloon_min:number shares:number serial:number spice:number clipboard:null "+
			"nics:absent blockstat:absent proxmox-support:absent balloon:absent ballooninfo:absent freemem:absent pressurecpusome:absent pressurememoryfull:absent cpus:number")
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)
	c.task("POST", "/nodes/pve1/lxc/200/status/start", nil)
	running := rawMembers(t, c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).Data)
	check("running VM status/current", kinds(running, keys...),
		"diskread:number diskwrite:number qmpstatus:string memhost:number balloon_min:number shares:number serial:number spice:number clipboard:null "+
			"nics:object blockstat:object proxmox-support:object balloon:number ballooninfo:object freemem:number pressurecpusome:number pressurememoryfull:number cpus:number")
	if !strings.Contains(string(running["nics"]), `"tap100i0":{"netin":0,"netout":0}`) || !strings.Contains(string(running["blockstat"]), `"scsi0":{`) {
		t.Errorf("nics %s, blockstat %s", running["nics"], running["blockstat"])
	}
	list := rawList(t, c.mustOK("GET", "/nodes/pve1/qemu", nil).Data)
	check("VM list", kinds(list[0], "diskread", "diskwrite", "qmpstatus", "nics", "memhost", "pressurecpusome"),
		"diskread:absent diskwrite:absent qmpstatus:absent nics:absent memhost:number pressurecpusome:number")
	full := rawList(t, c.mustOK("GET", "/nodes/pve1/qemu", vals("full", "1")).Data)
	check("VM list full=1", kinds(full[0], "diskread", "diskwrite", "qmpstatus", "nics", "blockstat", "ballooninfo"),
		"diskread:number diskwrite:number qmpstatus:string nics:object blockstat:object ballooninfo:object")
	ct := rawMembers(t, c.mustOK("GET", "/nodes/pve1/lxc/200/status/current", nil).Data)
	check("running CT status/current", kinds(ct, "pressurecpusome", "pressureiofull", "pressurememoryfull", "diskread", "maxswap", "ha"),
		"pressurecpusome:string pressureiofull:string pressurememoryfull:string diskread:number maxswap:number ha:object")
}

// /cluster/resources as pve-manager 9.0.12 and later build it
// (PVE/API2/Cluster.pm resources, API2Tools.pm extract_vm_stats and
// extract_node_stats): zones as "network" entries, memhost on guests,
// cgroup-mode and the HA node state on nodes, no ssl_fingerprint.
func TestClusterResourcesShapes(t *testing.T) {
	srv, c := newSim(t, Options{Nodes: 2, StatusInterval: -1})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1"))
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "lab", "type", "simple", "nodes", "pve2"))
	c.task("PUT", "/cluster/sdn", nil)
	if err := srv.AddHAResource("vm:100", "stopped"); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range rawList(t, c.mustOK("GET", "/cluster/resources", nil).Data) {
		var id string
		_ = json.Unmarshal(e["id"], &id)
		switch string(e["type"]) {
		case `"qemu"`:
			if _, ok := e["memhost"]; !ok {
				t.Errorf("%s has no memhost", id)
			}
		case `"node"`:
			if _, ok := e["ssl_fingerprint"]; ok {
				t.Errorf("%s has ssl_fingerprint", id)
			}
			if string(e["cgroup-mode"]) != "2" || string(e["hastate"]) != `"online"` {
				t.Errorf("%s cgroup-mode %s hastate %s", id, e["cgroup-mode"], e["hastate"])
			}
		case `"network"`:
			ids = append(ids, id)
			if string(e["network-type"]) != `"zone"` {
				t.Errorf("%s network-type %s", id, e["network-type"])
			}
		case `"sdn"`:
			t.Errorf("type sdn entry %s", id)
		}
	}
	want := "network/pve1/zone/localnetwork network/pve2/zone/localnetwork network/pve2/zone/lab"
	if got := strings.Join(ids, " "); got != want {
		t.Errorf("network entries %s, want %s", got, want)
	}
	lab := rawList(t, c.mustOK("GET", "/cluster/resources", nil).Data)
	for _, e := range lab {
		if string(e["id"]) == `"network/pve2/zone/lab"` {
			if got := string(e["status"]) + string(e["zone-type"]) + string(e["network"]); got != `"available""simple""lab"` {
				t.Errorf("zone entry %s", got)
			}
		}
	}
	if l := rawList(t, c.mustOK("GET", "/cluster/resources", vals("type", "sdn")).Data); len(l) != 0 {
		t.Errorf("type=sdn lists %d entries, want none (every node sends network entries)", len(l))
	}
	if nodes := c.mustOK("GET", "/nodes", nil).list(t); nodes[0]["ssl_fingerprint"] == nil {
		t.Error("GET /nodes lost ssl_fingerprint")
	}
}

// Storage content lists as pve-storage's list_volumes builds them
// (PVE/Storage/Plugin.pm $get_subdir_files and list_images,
// LvmThinPlugin.pm list_images): a template's format is "tzst", "tgz",
// "txz" or "tar", a backup's its archive extension; only file storages
// list the space an image uses.
func TestStorageContentFormatsAndUsed(t *testing.T) {
	srv, c := lxcSim(t, Options{Nodes: 1})
	for _, v := range []string{"local:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz", "local:vztmpl/old.tar.gz",
		"local:vztmpl/plain.tar", "local:backup/vzdump-qemu-100-2026_01_01-00_00_00.vma.zst", "local:snippets/user.yaml"} {
		mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: v, Size: 1 << 20})
	}
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1", "scsi1", "nfs-shared:1"))
	formats := map[string]string{}
	for _, e := range c.mustOK("GET", "/nodes/pve1/storage/local/content", nil).list(t) {
		formats[e["volid"].(string)], _ = e["format"].(string)
	}
	want := map[string]string{
		testTemplate: "tzst", "local:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz": "txz",
		"local:vztmpl/old.tar.gz": "tgz", "local:vztmpl/plain.tar": "tar",
		"local:backup/vzdump-qemu-100-2026_01_01-00_00_00.vma.zst": "vma.zst", "local:snippets/user.yaml": "snippet",
	}
	for v, w := range want {
		if formats[v] != w {
			t.Errorf("%s format %q, want %q", v, formats[v], w)
		}
	}
	for _, tc := range []struct {
		storage  string
		wantUsed bool
	}{{"local-lvm", false}, {"nfs-shared", true}} {
		l := c.mustOK("GET", "/nodes/pve1/storage/"+tc.storage+"/content", vals("content", "images")).list(t)
		if len(l) != 1 {
			t.Fatalf("%s lists %v", tc.storage, l)
		}
		if _, has := l[0]["used"]; has != tc.wantUsed {
			t.Errorf("%s image %v: used listed %v, want %v", tc.storage, l[0]["volid"], has, tc.wantUsed)
		}
	}
}

// get_effective_permissions (pve-access-control PVE/RPCEnvironment.pm)
// reads the paths of pool members too, where a role on the pool grants.
func TestPermissionsListPoolMemberPaths(t *testing.T) {
	srv := startSim(t, Options{Nodes: 1, TaskSpeed: 0, RootPassword: "hunter2", TokenPrivileges: []string{"Sys.Audit"}})
	c, root := newClient(t, srv), rootClient(t, srv)
	root.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:1"))
	root.mustOK("POST", "/pools", vals("poolid", "team"))
	root.mustOK("PUT", "/pools", vals("poolid", "team", "vms", "100", "storage", "local"))
	root.mustOK("PUT", "/access/acl", vals("path", "/pool/team", "tokens", testTokenID, "roles", "PVEVMUser,PVEDatastoreUser"))
	got := rawMembers(t, c.mustOK("GET", "/access/permissions", nil).Data)
	for p, priv := range map[string]string{"/vms/100": "VM.PowerMgmt", "/storage/local": "Datastore.AllocateSpace"} {
		if !strings.Contains(string(got[p]), `"`+priv+`":0`) {
			t.Errorf("%s: %s, want %s granted through the pool", p, got[p], priv)
		}
	}
}

// pve-common's __read_etc_network_interfaces (PVE/Network/Interfaces.pm)
// marks only interfaces that run active; a staged one has no active member.
func TestNetworkListActiveOnlyOnActive(t *testing.T) {
	_, c := newSim(t, Options{Nodes: 1})
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr9", "type", "bridge"))
	for _, e := range rawList(t, c.mustOK("GET", "/nodes/pve1/network", nil).Data) {
		active, has := e["active"]
		switch string(e["iface"]) {
		case `"vmbr9"`:
			if has {
				t.Errorf("staged vmbr9 has active %s", active)
			}
		case `"vmbr0"`:
			if string(active) != "1" {
				t.Errorf("running vmbr0 has active %s", active)
			}
		}
	}
}

// The addresses a guest reports from inside: the guest agent's
// network-get-interfaces (qemu-server API2/Qemu/Agent.pm, refused by
// assert_agent_available in its order) and a container's interfaces
// (pve-container LXC.pm get_interfaces, null while it is stopped).
func TestGuestInterfaces(t *testing.T) {
	_, c := lxcSim(t, Options{Nodes: 1, AgentStartDelay: -1})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100", "net0", "virtio=BC:24:11:0A:0B:0C,bridge=vmbr0", "ipconfig0", "ip=10.0.0.5/24,gw=10.0.0.1"))
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "101", "agent", "0"))
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "200", "ostemplate", testTemplate, "rootfs", "local-lvm:1",
		"net0", "name=eth0,bridge=vmbr0,hwaddr=BC:24:11:0D:0E:0F,ip=10.0.0.6/24,gw=10.0.0.1"))
	agent := "/nodes/pve1/qemu/100/agent/network-get-interfaces"
	for _, tc := range []struct{ path, want string }{
		{agent, "No QEMU guest agent configured"},
		{"/nodes/pve1/qemu/101/agent/network-get-interfaces", "VM 101 is not running"},
	} {
		if r := c.do("GET", tc.path, nil); r.Status != 500 || r.Reason != tc.want {
			t.Errorf("%s: %d %q, want 500 %q", tc.path, r.Status, r.Reason, tc.want)
		}
	}
	c.task("POST", "/nodes/pve1/qemu/101/status/start", nil)
	if r := c.do("GET", "/nodes/pve1/qemu/101/agent/network-get-interfaces", nil); r.Reason != "QEMU guest agent is not running" {
		t.Errorf("disabled agent: %d %q", r.Status, r.Reason)
	}
	c.mustOK("PUT", "/nodes/pve1/qemu/100/config", vals("agent", "1"))
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)
	var res struct {
		Result []struct {
			Name        string `json:"name"`
			MAC         string `json:"hardware-address"`
			IPAddresses []struct {
				Type   string `json:"ip-address-type"`
				Addr   string `json:"ip-address"`
				Prefix int    `json:"prefix"`
			} `json:"ip-addresses"`
		} `json:"result"`
	}
	if err := json.Unmarshal(c.mustOK("GET", agent, nil).Data, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Result) != 2 || res.Result[1].Name != "ens18" || res.Result[1].MAC != "bc:24:11:0a:0b:0c" ||
		len(res.Result[1].IPAddresses) != 2 || res.Result[1].IPAddresses[0].Addr != "10.0.0.5" ||
		res.Result[1].IPAddresses[0].Type != "ipv4" || res.Result[1].IPAddresses[1].Addr != "fe80::be24:11ff:fe0a:b0c" {
		t.Errorf("agent interfaces %+v", res)
	}
	if r := c.mustOK("GET", "/nodes/pve1/lxc/200/interfaces", nil); string(r.Data) != "null" {
		t.Errorf("stopped container's interfaces %s, want null", r.Data)
	}
	c.task("POST", "/nodes/pve1/lxc/200/status/start", nil)
	l := rawList(t, c.mustOK("GET", "/nodes/pve1/lxc/200/interfaces", nil).Data)
	if len(l) != 2 || string(l[1]["name"]) != `"eth0"` || string(l[1]["hwaddr"]) != `"bc:24:11:0d:0e:0f"` ||
		string(l[1]["inet"]) != `"10.0.0.6/24"` || string(l[1]["inet6"]) != `"fe80::be24:11ff:fe0d:e0f/64"` ||
		!strings.Contains(string(l[1]["ip-addresses"]), `{"ip-address":"10.0.0.6","ip-address-type":"inet","prefix":24}`) {
		t.Errorf("container interfaces %v", l)
	}
}
