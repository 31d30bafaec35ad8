package pvesim

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func sdnByID(list []map[string]any, key string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, e := range list {
		out[e[key].(string)] = e
	}
	return out
}

func TestSDNZonesValidation(t *testing.T) {
	srv, c := newSim(t, Options{})
	tests := []paramsCase{
		{"simple", vals("zone", "simple1", "type", "simple", "ipam", "pve", "mtu", "1450"), 200, "OK", nil},
		{"vlan", vals("zone", "vlanz", "type", "vlan", "bridge", "vmbr0", "nodes", "pve1,pve2"), 200, "OK", nil},
		{"vlan needs a bridge", vals("zone", "vlanz2", "type", "vlan"), 500, "missing value for required option 'bridge'", nil},
		{"qinq", vals("zone", "qz", "type", "qinq", "bridge", "vmbr0", "tag", "100", "vlan-protocol", "802.1ad"), 200, "OK", nil},
		{"qinq needs a tag", vals("zone", "qz2", "type", "qinq", "bridge", "vmbr0"), 500, "missing value for required option 'tag'", nil},
		{"vxlan", vals("zone", "vx", "type", "vxlan", "peers", "192.0.2.11 192.0.2.12,192.0.2.13"), 200, "OK", nil},
		{"vxlan needs peers or a fabric", vals("zone", "vx2", "type", "vxlan"), 400, "Parameter verification failed.",
			map[string]string{"peers": "must have exactly one of peers / fabric defined", "fabric": "must have exactly one of peers / fabric defined"}},
		{"evpn needs a controller", vals("zone", "ev", "type", "evpn", "vrf-vxlan", "10000"), 500, "missing value for required option 'controller'", nil},
		{"evpn controller must exist", vals("zone", "ev", "type", "evpn", "vrf-vxlan", "10000", "controller", "nope"), 500, "controller nope don't exist", nil},
		{"option of another type", vals("zone", "s2", "type", "simple", "bridge", "vmbr0"), 500, "unexpected property 'bridge'", nil},
		{"unknown ipam", vals("zone", "s2", "type", "simple", "ipam", "netbox"), 400, "Parameter verification failed.", map[string]string{"ipam": "netbox not existing"}},
		{"id too long", vals("zone", "zonetoolong", "type", "simple"), 400, "Parameter verification failed.",
			map[string]string{"zone": "invalid format - zone ID 'zonetoolong' can't be more length than 8 characters\n"}},
		{"id with a dash", vals("zone", "a-b", "type", "simple"), 400, "Parameter verification failed.",
			map[string]string{"zone": "invalid format - zone ID 'a-b' contains illegal characters\n"}},
		{"unknown type", vals("zone", "x1", "type", "gre"), 400, "Parameter verification failed.",
			map[string]string{"type": "value 'gre' does not have a value in the enumeration 'evpn, faucet, qinq, simple, vlan, vxlan'"}},
		{"duplicate", vals("zone", "simple1", "type", "simple"), 500, "create sdn zone object failed: sdn zone object ID 'simple1' already defined", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c.do("POST", "/cluster/sdn/zones", tt.params).want(t, tt.status, tt.reason, tt.errors)
		})
	}
	srv.AddSDNController("evpnctl", "evpn", map[string]string{"asn": "65000", "peers": "192.0.2.11"})
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "ev", "type", "evpn", "vrf-vxlan", "10000", "controller", "evpnctl", "exitnodes", "pve1"))
	if r := c.do("POST", "/cluster/sdn/zones", vals("zone", "ev2", "type", "evpn", "vrf-vxlan", "10000", "controller", "evpnctl")); r.Reason != "vrf-vxlan 10000 is already declared in ev" {
		t.Errorf("duplicate vrf-vxlan: %q", r.Reason)
	}
	zones := sdnByID(c.mustOK("GET", "/cluster/sdn/zones", nil).list(t), "zone")
	if len(zones) != 5 || zones["vx"]["peers"] != "192.0.2.11,192.0.2.12,192.0.2.13" || zones["simple1"]["mtu"] != float64(1450) ||
		zones["vlanz"]["bridge"] != "vmbr0" || zones["vlanz"]["nodes"] != "pve1,pve2" || !strings.HasPrefix(zones["ev"]["mac"].(string), "BC:24:11:") {
		t.Errorf("zones = %v", zones)
	}
	if d, _ := zones["vx"]["digest"].(string); len(d) != 40 {
		t.Errorf("digest %v", zones["vx"]["digest"])
	}
	if vl := c.mustOK("GET", "/cluster/sdn/zones", vals("type", "vlan")).list(t); len(vl) != 1 || vl[0]["zone"] != "vlanz" {
		t.Errorf("type filter: %v", vl)
	}
	// Update with delete and digest; a stale digest is refused.
	z := c.mustOK("GET", "/cluster/sdn/zones/simple1", nil).obj(t)
	c.mustOK("PUT", "/cluster/sdn/zones/simple1", vals("delete", "mtu", "nodes", "pve1", "digest", z["digest"].(string)))
	if r := c.do("PUT", "/cluster/sdn/zones/simple1", vals("mtu", "1400", "digest", z["digest"].(string))); r.Reason != "detected modified configuration - file changed by other user? Try again." {
		t.Errorf("stale digest: %d %q", r.Status, r.Reason)
	}
	if r := c.do("PUT", "/cluster/sdn/zones/vlanz", vals("delete", "bridge")); r.Reason != "unable to delete required option 'bridge'" {
		t.Errorf("delete required: %q", r.Reason)
	}
	if z := c.mustOK("GET", "/cluster/sdn/zones/simple1", nil).obj(t); z["mtu"] != nil || z["nodes"] != "pve1" {
		t.Errorf("after update: %v", z)
	}
	if r := c.do("GET", "/cluster/sdn/zones/nope", nil); r.Status != 500 || r.Reason != "sdn zone 'nope' does not exist" {
		t.Errorf("missing zone: %d %q", r.Status, r.Reason)
	}
}

func TestSDNPendingAndApply(t *testing.T) {
	srv := lxcSimNodes(t, 3)
	c := newClient(t, srv)
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "lab", "type", "vlan", "bridge", "vmbr0"))
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "flat", "type", "simple"))
	sdnVnetsAreCheckedAgainstTheirZone(t, c)
	sdnSubnetsAreCheckedAgainstTheirVnet(t, c, srv)
	sdnNewObjectsStayPendingUntilApplied(t, c)
	sdnApplyReloadsEveryNodeAndClearsPending(t, c)
	sdnChangesAndDeletionsArePendingUntilApplied(t, c)
}

// The steps below run in this order on one simulator: zones "lab" (vlan)
// and "flat" (simple) exist, nothing is applied yet.

func sdnVnetsAreCheckedAgainstTheirZone(t *testing.T, c *client) {
	vnetRefusals := []struct {
		params url.Values
		status int
		reason string
		errors map[string]string
	}{
		{vals("vnet", "v1", "zone", "lab"), 400, "Parameter verification failed.", map[string]string{"tag": "missing vlan tag"}},
		{vals("vnet", "v1", "zone", "lab", "tag", "5000"), 400, "Parameter verification failed.", map[string]string{"tag": "vlan tag max value is 4096"}},
		{vals("vnet", "v2", "zone", "flat", "tag", "5"), 400, "Parameter verification failed.", map[string]string{"tag": "vlan tag is not allowed on simple zone"}},
		{vals("vnet", "v3"), 400, "Parameter verification failed.", map[string]string{"zone": "property is missing and it is not optional"}},
		{vals("vnet", "toolongid", "zone", "flat"), 400, "Parameter verification failed.", map[string]string{"vnet": "invalid format - vnet ID 'toolongid' can't be more length than 8 characters\n"}},
	}
	for _, tt := range vnetRefusals {
		r := c.do("POST", "/cluster/sdn/vnets", tt.params)
		if r.Status != tt.status || r.Reason != tt.reason {
			t.Errorf("vnet %v: %d %q (%s)", tt.params, r.Status, r.Reason, r.Body)
		}
		for k, v := range tt.errors {
			if r.Errors[k] != v {
				t.Errorf("vnet %v: errors[%s] = %q, want %q", tt.params, k, r.Errors[k], v)
			}
		}
	}
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "vnet10", "zone", "lab", "tag", "10", "alias", "lab net", "isolate-ports", "1"))
	if r := c.do("POST", "/cluster/sdn/vnets", vals("vnet", "vnet11", "zone", "lab", "tag", "10")); r.Errors["tag"] != "tag 10 already exist in vnet vnet10" {
		t.Errorf("duplicate tag: %s", r.Body)
	}
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "flat1", "zone", "flat"))
}

func sdnSubnetsAreCheckedAgainstTheirVnet(t *testing.T, c *client, srv *Server) {
	c.mustOK("POST", "/cluster/sdn/vnets/vnet10/subnets", vals("subnet", "10.10.0.0/24", "type", "subnet", "gateway", "10.10.0.1", "snat", "1"))
	wantParamErrors(t, c, "/cluster/sdn/vnets/vnet10/subnets", []paramErrorCase{
		{"gateway outside the subnet", vals("subnet", "10.20.0.0/24", "type", "subnet", "gateway", "10.30.0.1"), "gateway", "10.30.0.1 is not in subnet 10.20.0.0/24"},
		{"no type", vals("subnet", "10.20.0.0/24"), "type", "property is missing and it is not optional"},
		{"not a CIDR", vals("subnet", "10.20.0.300/24", "type", "subnet"), "subnet", "invalid format - value does not look like a valid CIDR network\n"},
	})
	// DHCP ranges are an array: sent as JSON.
	postJSON := func(body string) apiResp {
		req, _ := http.NewRequest("POST", srv.APIURL()+"/cluster/sdn/vnets/flat1/subnets", strings.NewReader(body))
		for k, v := range c.header {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		return c.send(req)
	}
	if r := postJSON(`{"subnet":"10.30.0.0/24","type":"subnet","dhcp-range":["start-address=10.30.0.100,end-address=10.30.0.200"]}`); r.Status != 200 {
		t.Errorf("subnet with a DHCP range: %d %s", r.Status, r.Body)
	}
	if r := postJSON(`{"subnet":"10.31.0.0/24","type":"subnet","dhcp-range":["start-address=10.32.0.100,end-address=10.31.0.200"]}`); r.Errors["dhcp-range"] != "start-address 10.32.0.100 is not in subnet 10.31.0.0/24" {
		t.Errorf("DHCP range outside the subnet: %d %s", r.Status, r.Body)
	}
	if sub := c.mustOK("GET", "/cluster/sdn/vnets/flat1/subnets/flat-10.30.0.0-24", nil).obj(t); len(sub["dhcp-range"].([]any)) != 1 ||
		sub["dhcp-range"].([]any)[0].(map[string]any)["end-address"] != "10.30.0.200" {
		t.Errorf("dhcp-range read back: %v", sub)
	}
	c.mustOK("DELETE", "/cluster/sdn/vnets/flat1/subnets/flat-10.30.0.0-24", nil)
	subs := c.mustOK("GET", "/cluster/sdn/vnets/vnet10/subnets", nil).list(t)
	if len(subs) != 1 || subs[0]["subnet"] != "lab-10.10.0.0-24" || subs[0]["cidr"] != "10.10.0.0/24" || subs[0]["gateway"] != "10.10.0.1" ||
		subs[0]["snat"] != float64(1) || subs[0]["zone"] != "lab" || subs[0]["mask"] != "24" || subs[0]["vnet"] != "vnet10" {
		t.Errorf("subnets = %v", subs)
	}
	if s := c.mustOK("GET", "/cluster/sdn/vnets/vnet10/subnets/lab-10.10.0.0-24", nil).obj(t); s["network"] != "10.10.0.0" {
		t.Errorf("subnet = %v", s)
	}
	if r := c.do("GET", "/cluster/sdn/vnets/flat1/subnets/lab-10.10.0.0-24", nil); r.Errors["vnet"] != "wrong vnet" {
		t.Errorf("subnet under the wrong vnet: %s", r.Body)
	}
}

func sdnNewObjectsStayPendingUntilApplied(t *testing.T, c *client) {
	// Nothing applied yet: running is empty, pending marks everything new.
	if run := c.mustOK("GET", "/cluster/sdn/vnets", vals("running", "1")).list(t); len(run) != 0 {
		t.Errorf("running before apply: %v", run)
	}
	pend := sdnByID(c.mustOK("GET", "/cluster/sdn/vnets", vals("pending", "1")).list(t), "vnet")
	v := pend["vnet10"]
	if v["state"] != "new" || v["type"] != "vnet" || v["pending"].(map[string]any)["tag"] != float64(10) || v["pending"].(map[string]any)["zone"] != "lab" {
		t.Errorf("pending vnet10 = %v", v)
	}
	if z := c.mustOK("GET", "/cluster/sdn/zones/lab", vals("pending", "1")).obj(t); z["state"] != "new" || z["pending"].(map[string]any)["bridge"] != "vmbr0" {
		t.Errorf("pending zone = %v", z)
	}
	// A guest cannot use a vnet before it is applied.
	createCT(t, c, "200", "net0", "name=eth0,bridge=vnet10")
	if st := c.task("POST", "/nodes/pve1/lxc/200/status/start", nil); st != "startup for container '200' failed" {
		t.Errorf("start on an unapplied vnet: %s", st)
	}
}

func sdnApplyReloadsEveryNodeAndClearsPending(t *testing.T, c *client) {
	// Apply: reloadnetworkall on the local node, srvreload on every node.
	upid := c.mustOK("PUT", "/cluster/sdn", nil).str(t)
	info, _ := ParseUPID(upid)
	if info.Type != "reloadnetworkall" || info.ID != "" || info.Node != "pve1" || !strings.HasSuffix(upid, ":reloadnetworkall::"+testTokenID+":") {
		t.Errorf("apply upid %s", upid)
	}
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("apply: %s", st)
	}
	for _, n := range []string{"pve1", "pve2", "pve3"} {
		if l := c.mustOK("GET", "/nodes/"+n+"/tasks", vals("typefilter", "srvreload")).list(t); len(l) != 1 {
			t.Errorf("%s srvreload tasks: %v", n, l)
		}
	}
	for _, e := range c.mustOK("GET", "/cluster/sdn/vnets", vals("pending", "1")).list(t) {
		if e["state"] != nil || e["pending"] != nil {
			t.Errorf("pending after apply: %v", e)
		}
	}
	if run := c.mustOK("GET", "/cluster/sdn/vnets", vals("running", "1")).list(t); len(run) != 2 {
		t.Errorf("running after apply: %v", run)
	}
	if st := c.task("POST", "/nodes/pve1/lxc/200/status/start", nil); st != "OK" {
		t.Errorf("start on an applied vnet: %s", st)
	}
	if l := c.mustOK("GET", "/nodes/pve1/network", vals("type", "any_bridge")).list(t); len(l) != 3 {
		t.Errorf("any_bridge lists vnets: %v", l)
	}
}

func sdnChangesAndDeletionsArePendingUntilApplied(t *testing.T, c *client) {
	// Changes and deletions show up as changed and deleted.
	c.mustOK("PUT", "/cluster/sdn/vnets/vnet10", vals("isolate-ports", "0", "delete", "alias"))
	if r := c.do("PUT", "/cluster/sdn/vnets/vnet10", vals("delete", "tag")); r.Errors["tag"] != "missing vlan tag" {
		t.Errorf("delete the tag of a VLAN vnet: %s", r.Body)
	}
	if r := c.do("PUT", "/cluster/sdn/vnets/vnet10", vals("delete", "zone")); r.Errors["zone"] != "cannot delete zone" {
		t.Errorf("delete zone: %s", r.Body)
	}
	c.mustOK("PUT", "/cluster/sdn/vnets/vnet10", vals("tag", "20"))
	if r := c.do("DELETE", "/cluster/sdn/vnets/vnet10", nil); r.Errors["vnet"] != "Can't delete vnet if subnets exists" {
		t.Errorf("delete vnet with subnets: %s", r.Body)
	}
	if r := c.do("DELETE", "/cluster/sdn/zones/flat", nil); r.Reason != "delete sdn zone object failed: zone flat is used by vnet flat1" {
		t.Errorf("delete used zone: %q", r.Reason)
	}
	c.mustOK("DELETE", "/cluster/sdn/vnets/flat1", nil)
	pend := sdnByID(c.mustOK("GET", "/cluster/sdn/vnets", vals("pending", "1")).list(t), "vnet")
	if p := pend["vnet10"]; p["state"] != "changed" || p["alias"] != "lab net" || p["pending"].(map[string]any)["alias"] != "deleted" ||
		p["pending"].(map[string]any)["tag"] != float64(20) || p["pending"].(map[string]any)["isolate-ports"] != float64(0) {
		t.Errorf("changed vnet10 = %v", p)
	}
	if p := pend["flat1"]; p["state"] != "deleted" || p["zone"] != "flat" {
		t.Errorf("deleted flat1 = %v", p)
	}
	if cfg := c.mustOK("GET", "/cluster/sdn/vnets", nil).list(t); len(cfg) != 1 {
		t.Errorf("config without pending lists deleted vnets: %v", cfg)
	}
	c.task("PUT", "/cluster/sdn", nil)
	if run := c.mustOK("GET", "/cluster/sdn/vnets", vals("running", "1")).list(t); len(run) != 1 || run[0]["alias"] != nil || run[0]["tag"] != float64(20) {
		t.Errorf("running after second apply: %v", run)
	}
	c.mustOK("DELETE", "/cluster/sdn/vnets/vnet10/subnets/lab-10.10.0.0-24", nil)
	if s := c.mustOK("GET", "/cluster/sdn/vnets/vnet10/subnets", vals("pending", "1")).list(t); len(s) != 1 || s[0]["state"] != "deleted" {
		t.Errorf("deleted subnet pending: %v", s)
	}
}

// lxcSimNodes is lxcSim with a number of nodes.
func lxcSimNodes(t *testing.T, nodes int) *Server {
	srv, _ := lxcSim(t, Options{Nodes: nodes})
	return srv
}

// TestNetworkAndSDNStatePersists saves and restores the state with
// staged and applied host network changes and SDN objects.
func TestNetworkAndSDNStatePersists(t *testing.T) {
	srv, c := newSim(t, Options{})
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr1", "type", "bridge", "autostart", "1"))
	c.task("PUT", "/nodes/pve1/network", nil)
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr2", "type", "bridge"))
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "z1", "type", "simple"))
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "v1", "zone", "z1"))
	c.task("PUT", "/cluster/sdn", nil)
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "v2", "zone", "z1"))
	again := reloaded(t, srv)
	c2 := newClient(t, again)
	ifaces, changes := networkList(t, c2, "pve1")
	if ifaces["vmbr1"]["active"] != float64(1) || ifaces["vmbr2"] == nil || ifaces["vmbr2"]["active"] != nil || !strings.Contains(changes, "+iface vmbr2") {
		t.Errorf("network after restore: %v %q", ifaces, changes)
	}
	pend := sdnByID(c2.mustOK("GET", "/cluster/sdn/vnets", vals("pending", "1")).list(t), "vnet")
	if pend["v1"]["state"] != nil || pend["v2"]["state"] != "new" {
		t.Errorf("sdn after restore: %v", pend)
	}
}
