package pvesim

import (
	"encoding/json"
	"strings"
	"testing"
)

// networkList returns GET /nodes/{node}/network by interface, and "changes".
func networkList(t *testing.T, c *client, node string) (map[string]map[string]any, string) {
	t.Helper()
	r := c.mustOK("GET", "/nodes/"+node+"/network", nil)
	var env struct {
		Changes string `json:"changes"`
	}
	_ = json.Unmarshal(r.Body, &env)
	out := map[string]map[string]any{}
	for _, e := range r.list(t) {
		out[e["iface"].(string)] = e
	}
	return out, env.Changes
}

func TestNetworkDefaults(t *testing.T) {
	_, c := newSim(t, Options{Nodes: 2})
	ifaces, changes := networkList(t, c, "pve2")
	if changes != "" {
		t.Errorf("fresh node has staged changes: %q", changes)
	}
	br := ifaces["vmbr0"]
	if br["type"] != "bridge" || br["cidr"] != "192.0.2.12/24" || br["address"] != "192.0.2.12" || br["netmask"] != "24" ||
		br["gateway"] != "192.0.2.1" || br["bridge_ports"] != "eno1" || br["active"] != float64(1) || br["autostart"] != float64(1) ||
		br["method"] != "static" || br["method6"] != "manual" {
		t.Errorf("vmbr0 = %v", br)
	}
	for _, nic := range []string{"eno1", "eno2", "eno3", "eno4"} {
		if e := ifaces[nic]; e["type"] != "eth" || e["exists"] != float64(1) || e["method"] != "manual" {
			t.Errorf("%s = %v", nic, e)
		}
	}
	if len(ifaces) != 5 {
		t.Errorf("interfaces: %v", ifaces)
	}
	bridges := c.mustOK("GET", "/nodes/pve2/network", vals("type", "any_bridge")).list(t)
	if len(bridges) != 1 || bridges[0]["iface"] != "vmbr0" {
		t.Errorf("any_bridge: %v", bridges)
	}
	got := c.mustOK("GET", "/nodes/pve2/network/vmbr0", nil).obj(t)
	if got["type"] != "bridge" || got["families"].([]any)[0] != "inet" {
		t.Errorf("GET vmbr0 = %v", got)
	}
	if r := c.do("GET", "/nodes/pve2/network/vmbr9", nil); r.Status != 400 || r.Errors["iface"] != "interface does not exist" {
		t.Errorf("missing iface: %d %s", r.Status, r.Body)
	}
}

func TestNetworkStageApplyRevert(t *testing.T) {
	_, c := newSim(t, Options{Nodes: 2})
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr1", "type", "bridge", "bridge_ports", "eno2", "autostart", "1",
		"cidr", "10.10.0.1/24", "bridge_vlan_aware", "1", "bridge_vids", "2-100,200", "comments", "lab"))
	ifaces, changes := networkList(t, c, "pve1")
	br := ifaces["vmbr1"]
	if br == nil || br["active"] != nil || br["address"] != "10.10.0.1" || br["netmask"] != "24" || br["bridge_vids"] != "2-100 200" || br["bridge_vlan_aware"] != float64(1) {
		t.Fatalf("staged vmbr1 = %v", br)
	}
	for _, want := range []string{"--- /etc/network/interfaces\t", "+++ /etc/network/interfaces.new\t", "+auto vmbr1\n", "+iface vmbr1 inet static\n",
		"+\taddress 10.10.0.1/24\n", "+\tbridge-ports eno2\n", "+\tbridge-vlan-aware yes\n", "+\tbridge-vids 2-100 200\n", "+#lab\n", "@@ -"} {
		if !strings.Contains(changes, want) {
			t.Errorf("changes lack %q:\n%s", want, changes)
		}
	}
	// Another node is untouched.
	if _, ch := networkList(t, c, "pve2"); ch != "" {
		t.Errorf("pve2 changed: %s", ch)
	}
	// A bond and a VLAN in the same staged file.
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "bond0", "type", "bond", "slaves", "eno3 eno4", "bond_mode", "active-backup", "bond-primary", "eno3", "autostart", "1"))
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr0.100", "type", "vlan", "autostart", "1", "cidr", "10.100.0.5/24"))
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vlan50", "type", "vlan", "vlan-raw-device", "bond0"))

	refusals := []requestCase{
		{"existing interface", "POST", "", vals("iface", "vmbr0", "type", "bridge"), 400, "Parameter verification failed.", map[string]string{"iface": "interface already exists"}},
		{"second default gateway", "POST", "", vals("iface", "vmbr5", "type", "bridge", "cidr", "10.5.0.2/24", "gateway", "10.5.0.1"), 400, "Parameter verification failed.",
			map[string]string{"gateway": "Default gateway already exists on interface 'vmbr0'."}},
		{"port in use", "POST", "", vals("iface", "vmbr5", "type", "bridge", "bridge_ports", "eno2"), 400, "Parameter verification failed.",
			map[string]string{"bridge_ports": "eno2 is already used on interface 'vmbr1'."}},
		{"missing bridge port", "POST", "", vals("iface", "vmbr5", "type", "bridge", "bridge_ports", "eno9"), 500, "bridge 'vmbr5' - unable to find bridge port 'eno9'", nil},
		{"missing bond slave", "POST", "", vals("iface", "bond1", "type", "bond", "slaves", "eno8"), 500, "bond 'bond1' - unable to find slave 'eno8'", nil},
		{"vlan without raw device", "POST", "", vals("iface", "vlan60", "type", "vlan"), 500, "missing vlan-raw-device option", nil},
		{"vlan on a missing parent", "POST", "", vals("iface", "eno9.10", "type", "vlan"), 500, "vlan 'eno9.10' - unable to find parent 'eno9'", nil},
		{"address and cidr", "POST", "", vals("iface", "vmbr5", "type", "bridge", "cidr", "10.5.0.2/24", "address", "10.5.0.2", "netmask", "255.255.255.0"), 400,
			"Parameter verification failed.", map[string]string{"address": "address conflicts with cidr"}},
		{"address without netmask", "POST", "", vals("iface", "vmbr5", "type", "bridge", "address", "10.5.0.2"), 400,
			"Parameter verification failed.", map[string]string{"netmask": "missing property required by 'address'"}},
		{"bad netmask", "POST", "", vals("iface", "vmbr5", "type", "bridge", "address", "10.5.0.2", "netmask", "255.0.255.0"), 400,
			"Parameter verification failed.", map[string]string{"netmask": "invalid format - value does not look like a valid IP netmask\n"}},
		{"ipv6 multicast address", "POST", "", vals("iface", "vmbr5", "type", "bridge", "cidr6", "ff02::1/64"), 400, "Parameter verification failed.",
			map[string]string{"address": "ff02::1 with type 'MULTICAST', cannot be used as host IPv6 address."}},
		{"OVS without openvswitch", "POST", "", vals("iface", "vmbr5", "type", "OVSBridge"), 500, "Open VSwitch is not installed (need package 'openvswitch-switch')", nil},
		{"type is required on update", "PUT", "/vmbr1", vals("comments", "x"), 400, "Parameter verification failed.",
			map[string]string{"type": "property is missing and it is not optional"}},
		{"update of a missing interface", "PUT", "/vmbr9", vals("type", "bridge"), 400, "Parameter verification failed.", map[string]string{"iface": "interface does not exist"}},
		{"delete of a missing interface", "DELETE", "/vmbr9", nil, 400, "Parameter verification failed.", map[string]string{"iface": "interface does not exist"}},
		{"bridge MTU below its port's", "PUT", "/vmbr1", vals("type", "bridge", "bridge_ports", "eno2", "mtu", "9000"), 500, "interface 'eno2' - mtu 1500 is lower than 'vmbr1' - mtu 9000", nil},
		{"bad interface name", "POST", "", vals("iface", "9x", "type", "bridge"), 400, "Parameter verification failed.",
			map[string]string{"iface": "invalid format - invalid network interface name '9x'\n"}},
	}
	for _, tt := range refusals {
		t.Run(tt.name, func(t *testing.T) {
			c.do(tt.method, "/nodes/pve1/network"+tt.path, tt.params).want(t, tt.status, tt.reason, tt.errors)
		})
	}
	ifaces, _ = networkList(t, c, "pve1")
	if ifaces["vmbr5"] != nil || ifaces["bond1"] != nil {
		t.Errorf("refused changes were staged: %v", ifaces)
	}
	// An update without an address makes the interface manual: Proxmox
	// derives the method from the request alone.
	c.mustOK("PUT", "/nodes/pve1/network/vmbr0.100", vals("type", "vlan", "comments", "no address"))
	if v := c.mustOK("GET", "/nodes/pve1/network/vmbr0.100", nil).obj(t); v["method"] != "manual" || v["comments"] != "no address" {
		t.Errorf("vlan after update: %v", v)
	}

	// Apply: a srvreload task, then everything is active and nothing staged.
	upid := c.mustOK("PUT", "/nodes/pve1/network", nil).str(t)
	if info, _ := ParseUPID(upid); info.Type != "srvreload" || info.ID != "networking" {
		t.Errorf("apply upid %s", upid)
	}
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("apply: %s", st)
	}
	ifaces, changes = networkList(t, c, "pve1")
	if changes != "" || ifaces["vmbr1"]["active"] != float64(1) || ifaces["bond0"]["active"] != float64(1) || ifaces["vlan50"]["vlan-raw-device"] != "bond0" {
		t.Errorf("after apply: changes=%q %v", changes, ifaces)
	}

	// Delete, then revert: the running configuration stays.
	c.mustOK("DELETE", "/nodes/pve1/network/vmbr1", nil)
	ifaces, changes = networkList(t, c, "pve1")
	if ifaces["vmbr1"] != nil || !strings.Contains(changes, "-auto vmbr1\n") {
		t.Errorf("staged delete: %v\n%s", ifaces["vmbr1"], changes)
	}
	c.mustOK("DELETE", "/nodes/pve1/network", nil)
	ifaces, changes = networkList(t, c, "pve1")
	if ifaces["vmbr1"] == nil || changes != "" {
		t.Errorf("revert: %v %q", ifaces["vmbr1"], changes)
	}
	// A physical port cannot be removed, only reset; deleting one still
	// used by a bridge is refused.
	if r := c.do("DELETE", "/nodes/pve1/network/bond0", nil); r.Status != 500 || r.Reason != "vlan 'vlan50' - unable to find parent 'bond0'" {
		t.Errorf("delete a VLAN's parent: %d %q", r.Status, r.Reason)
	}
	c.mustOK("DELETE", "/nodes/pve1/network/eno3", nil)
	if ifaces, _ := networkList(t, c, "pve1"); ifaces["eno3"]["type"] != "eth" {
		t.Errorf("physical port vanished: %v", ifaces["eno3"])
	}
}

func TestUnifiedDiff(t *testing.T) {
	a := "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n"
	b := "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n"
	got := unifiedDiff("x", "y", "T", a, b)
	want := "--- x\tT\n+++ y\tT\n@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n j\n+k\n"
	if got != want {
		t.Errorf("diff:\n%s\nwant:\n%s", got, want)
	}
	if unifiedDiff("x", "y", "T", a, a) != "" {
		t.Errorf("equal inputs give a diff")
	}
	far := unifiedDiff("x", "y", "T", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "0\n2\n3\n4\n5\n6\n7\n8\n9\nX\n")
	if strings.Count(far, "@@ -") != 2 || !strings.Contains(far, "@@ -1,4 +1,4 @@\n-1\n+0\n") || !strings.Contains(far, "@@ -7,4 +7,4 @@\n 7\n 8\n 9\n-10\n+X\n") {
		t.Errorf("two hunks:\n%s", far)
	}
}
