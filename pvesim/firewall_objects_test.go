package pvesim

import (
	"testing"
	"time"
)

// wantAPIError checks a refusal: a parameter error names its field, any
// other is compared by message.
func wantAPIError(t *testing.T, r apiResp, status int, field, msg string) {
	t.Helper()
	got := r.Message
	if field != "" {
		got = r.Errors[field]
	}
	if r.Status != status || got != msg {
		t.Errorf("%d %q (errors %v), want %d %q", r.Status, got, r.Errors, status, msg)
	}
}

// Aliases are kept by lower-case name and read back as the file is read
// again (a /32 dropped, the IP version added); renaming checks the new
// name, deleting a missing alias is no error, and a stale digest fails.
func TestFirewallAliasesRoundTrip(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	createVM(t, c, "100")
	for _, base := range []string{"/cluster/firewall/aliases", "/nodes/pve1/qemu/100/firewall/aliases"} {
		c.mustOK("POST", base, vals("name", "LAN", "cidr", "192.168.1.0/24", "comment", "home"))
		c.mustOK("POST", base, vals("name", "gw", "cidr", "192.168.1.1/32"))
		wantAPIError(t, c.do("POST", base, vals("name", "lan", "cidr", "10.0.0.0/8")), 400, "name", "alias 'lan' already exists")
		wantAPIError(t, c.do("POST", base, vals("name", "x1", "cidr", "10.0.0.0/33")), 400, "cidr", "invalid format - Prefix length 33 is longer than IP address (32)\n")
		wantAPIError(t, c.do("POST", base, vals("name", "x1", "cidr", "10.0.0.0/0")), 400, "cidr", "invalid format - Invalid prefix 00001010000000000000000000000000/0\n")
		wantAPIError(t, c.do("POST", base, vals("name", "x1", "cidr", "lan")), 400, "cidr", "invalid format - value does not look like a valid IP address or CIDR network\n")
		list := c.mustOK("GET", base, nil).list(t)
		if len(list) != 2 || list[1]["name"] != "LAN" || list[1]["ipversion"] != 4.0 || list[1]["comment"] != "home" || list[0]["cidr"] != "192.168.1.1" {
			t.Fatalf("%s: %v", base, list)
		}
		one := c.mustOK("GET", base+"/lan", nil).obj(t)
		if one["name"] != "LAN" || one["digest"] != nil {
			t.Errorf("%s/lan: %v", base, one)
		}
		digest := list[0]["digest"].(string)
		wantAPIError(t, c.do("PUT", base+"/gw", vals("cidr", "192.168.1.254", "rename", "lan", "digest", digest)), 400, "name", "alias 'lan' already exists")
		c.mustOK("PUT", base+"/gw", vals("cidr", "192.168.1.254", "rename", "router", "digest", digest))
		wantAPIError(t, c.do("GET", base+"/gw", nil), 400, "name", "no such alias")
		wantAPIError(t, c.do("DELETE", base+"/lan", vals("digest", digest)), 500, "", "detected modified configuration - file changed by other user? Try again.\n")
		c.mustOK("DELETE", base+"/nosuch", nil)
		if r := c.mustOK("GET", base+"/router", nil).obj(t); r["cidr"] != "192.168.1.254" || r["comment"] != nil {
			t.Errorf("%s/router: %v", base, r)
		}
	}
}

// IP sets: entries are normalised and sorted as the file keeps them, a
// duplicate, a zero prefix and an unknown alias are refused, an update
// replaces nomatch and comment, and a set with entries goes only with
// force.
func TestFirewallIPSetsRoundTrip(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	c.mustOK("POST", "/cluster/firewall/aliases", vals("name", "office", "cidr", "10.9.0.0/16"))
	base := "/cluster/firewall/ipset"
	c.mustOK("POST", base, vals("name", "admins", "comment", "ops"))
	wantAPIError(t, c.do("POST", base, vals("name", "admins")), 400, "name", "IPSet 'admins' already exists")
	set := base + "/admins"
	c.mustOK("POST", set, vals("cidr", "192.168.1.10/32", "comment", "laptop"))
	c.mustOK("POST", set, vals("cidr", "10.1.2.3/8", "nomatch", "1"))
	c.mustOK("POST", set, vals("cidr", "dc/office"))
	wantAPIError(t, c.do("POST", set, vals("cidr", "192.168.1.10")), 400, "cidr", "address '192.168.1.10' already exists")
	wantAPIError(t, c.do("POST", set, vals("cidr", "0.0.0.0/0")), 400, "cidr", "a zero prefix is not allowed in ipset entries")
	wantAPIError(t, c.do("POST", set, vals("cidr", "nosuch")), 500, "", "no such alias 'nosuch'\n")
	wantAPIError(t, c.do("GET", base+"/other", nil), 500, "", "no such IPSet 'other'\n")
	entries := c.mustOK("GET", set, nil).list(t)
	var cidrs []any
	for _, e := range entries {
		cidrs = append(cidrs, e["cidr"])
	}
	if len(entries) != 3 || cidrs[0] != "10.0.0.0/8" || cidrs[1] != "192.168.1.10" || cidrs[2] != "dc/office" ||
		entries[0]["nomatch"] != 1.0 || entries[1]["comment"] != "laptop" || entries[2]["digest"] != entries[0]["digest"] {
		t.Fatalf("entries %v", entries)
	}
	one := c.mustOK("GET", set+"/10.0.0.0/8", nil).obj(t)
	if one["nomatch"] != 1.0 || one["digest"] != entries[0]["digest"] {
		t.Errorf("entry 10.0.0.0/8: %v", one)
	}
	c.mustOK("PUT", set+"/10.0.0.0/8", vals("comment", "lab", "digest", one["digest"].(string)))
	if e := c.mustOK("GET", set+"/10.0.0.0/8", nil).obj(t); e["nomatch"] != nil || e["comment"] != "lab" {
		t.Errorf("after update: %v", e)
	}
	wantAPIError(t, c.do("PUT", set+"/10.0.0.1", vals("comment", "x")), 400, "cidr", "no such IP/Network")
	wantAPIError(t, c.do("DELETE", set, nil), 500, "", "IPSet 'admins' is not empty\n")
	index := c.mustOK("GET", base, nil).list(t)
	c.mustOK("POST", base, vals("name", "ops", "rename", "admins", "digest", index[0]["digest"].(string)))
	if index := c.mustOK("GET", base, nil).list(t); len(index) != 1 || index[0]["name"] != "ops" || index[0]["comment"] != "ops" {
		t.Errorf("after rename: %v", index)
	}
	// An alias removed later leaves the entry, with the error a node reads.
	c.mustOK("DELETE", "/cluster/firewall/aliases/office", nil)
	if e := c.mustOK("GET", base+"/ops/dc/office", nil).obj(t); e["errors"] == nil ||
		e["errors"].(map[string]any)["cidr"] != "no such alias 'office'" {
		t.Errorf("entry of a removed alias: %v", e)
	}
	c.mustOK("DELETE", base+"/ops/dc/office", nil)
	if n := len(c.mustOK("GET", base+"/ops", nil).list(t)); n != 2 {
		t.Errorf("entries after removing one: %d", n)
	}
	c.mustOK("DELETE", base+"/ops", vals("force", "1"))
	if n := len(c.mustOK("GET", base, nil).list(t)); n != 0 {
		t.Errorf("sets after the forced delete: %d", n)
	}
}

// Cluster and node options: integers read back as numbers, an unknown
// deletion is refused, a node's options are its own, and the
// anti-lockout timestamp enable lapses to 0 after 60 seconds.
func TestFirewallClusterAndNodeOptions(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	c := newClient(t, startSim(t, Options{Clock: clock}))
	opts := "/cluster/firewall/options"
	empty := c.mustOK("GET", opts, nil).obj(t)
	c.mustOK("PUT", opts, vals("enable", "1", "policy_in", "DROP", "policy_forward", "ACCEPT", "ebtables", "0", "log_ratelimit", "enable=1,rate=5/second"))
	got := c.mustOK("GET", opts, nil).obj(t)
	for k, want := range map[string]any{"enable": 1.0, "ebtables": 0.0, "policy_in": "DROP", "policy_forward": "ACCEPT", "log_ratelimit": "enable=1,rate=5/second"} {
		if got[k] != want {
			t.Errorf("%s reads back %v (%T), want %v", k, got[k], got[k], want)
		}
	}
	wantAPIError(t, c.do("PUT", opts, vals("delete", "bogus")), 400, "delete", "no such option 'bogus'")
	wantAPIError(t, c.do("PUT", opts, vals("enable", "0", "digest", empty["digest"].(string))), 500, "", "detected modified configuration - file changed by other user? Try again.\n")
	wantAPIError(t, c.do("PUT", opts, vals("policy_forward", "REJECT")), 400, "policy_forward", "value 'REJECT' does not have a value in the enumeration 'ACCEPT, DROP'")
	c.mustOK("PUT", opts, vals("enable", "2"))
	if got := c.mustOK("GET", opts, nil).obj(t)["enable"]; got != float64(clock.Now().Unix()) {
		t.Errorf("timestamp enable reads %v", got)
	}
	clock.Advance(61 * time.Second)
	if got := c.mustOK("GET", opts, nil).obj(t)["enable"]; got != 0.0 {
		t.Errorf("timestamp enable after 61 s reads %v", got)
	}

	node := "/nodes/pve1/firewall/options"
	c.mustOK("PUT", node, vals("enable", "0", "nf_conntrack_max", "40000", "log_level_in", "info", "nf_conntrack_helpers", "ftp,tftp"))
	got = c.mustOK("GET", node, nil).obj(t)
	for k, want := range map[string]any{"enable": 0.0, "nf_conntrack_max": 40000.0, "log_level_in": "info", "nf_conntrack_helpers": "ftp,tftp"} {
		if got[k] != want {
			t.Errorf("node %s reads back %v (%T), want %v", k, got[k], got[k], want)
		}
	}
	if other := c.mustOK("GET", "/nodes/pve2/firewall/options", nil).obj(t); len(other) != 1 {
		t.Errorf("pve2 options: %v", other)
	}
	wantAPIError(t, c.do("PUT", node, vals("nf_conntrack_helpers", "ftp,bogus")), 400, "nf_conntrack_helpers", "invalid format - unknown helper bogus")
	c.mustOK("POST", "/nodes/pve1/firewall/rules", vals("type", "in", "action", "ACCEPT", "macro", "SSH", "iface", "vmbr0"))
	if rules := c.mustOK("GET", "/nodes/pve1/firewall/rules", nil).list(t); len(rules) != 1 || rules[0]["iface"] != "vmbr0" {
		t.Errorf("node rules %v", rules)
	}
	if rules := c.mustOK("GET", "/nodes/pve2/firewall/rules", nil).list(t); len(rules) != 0 {
		t.Errorf("pve2 rules %v", rules)
	}
}

// The macro list, and the references usable in source and dest: the
// cluster's (scope dc) and, for a guest, its own (scope guest) after them.
func TestFirewallMacrosAndRefs(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	createVM(t, c, "100")
	macros := c.mustOK("GET", "/cluster/firewall/macros", nil).list(t)
	found := map[any]any{}
	for _, m := range macros {
		found[m["macro"]] = m["descr"]
	}
	if found["SSH"] != "Secure shell traffic" || found["DHCPv6"] != "DHCPv6 traffic" || len(macros) != 86 {
		t.Errorf("%d macros, SSH %v, DHCPv6 %v", len(macros), found["SSH"], found["DHCPv6"])
	}
	c.mustOK("POST", "/cluster/firewall/aliases", vals("name", "lan", "cidr", "192.168.1.0/24", "comment", "home"))
	c.mustOK("POST", "/cluster/firewall/ipset", vals("name", "admins"))
	c.mustOK("POST", "/nodes/pve1/qemu/100/firewall/ipset", vals("name", "own"))
	refs := c.mustOK("GET", "/cluster/firewall/refs", nil).list(t)
	if len(refs) != 2 || refs[0]["ref"] != "+admins" || refs[0]["scope"] != "dc" || refs[1]["ref"] != "lan" || refs[1]["comment"] != "home" {
		t.Errorf("cluster refs %v", refs)
	}
	guest := c.mustOK("GET", "/nodes/pve1/qemu/100/firewall/refs", vals("type", "ipset")).list(t)
	if len(guest) != 2 || guest[1]["ref"] != "+own" || guest[1]["scope"] != "guest" {
		t.Errorf("guest refs %v", guest)
	}
}

// Each firewall endpoint checks the privilege its schema names: Sys.Audit
// and Sys.Modify on / for the cluster, on /nodes/{node} for a node,
// VM.Audit and VM.Config.Network on /vms/{vmid} for a guest.
func TestFirewallPrivileges(t *testing.T) {
	_, c := newSim(t, Options{TokenPrivileges: []string{"VM.Audit", "VM.Allocate", "VM.Config.Disk", "VM.Config.CPU", "VM.Config.Memory", "Datastore.AllocateSpace", "SDN.Use"}})
	cases := []struct{ method, path, priv string }{
		{"GET", "/cluster/firewall/rules", "/, Sys.Audit"},
		{"POST", "/cluster/firewall/rules", "/, Sys.Modify"},
		{"PUT", "/cluster/firewall/options", "/, Sys.Modify"},
		{"GET", "/cluster/firewall/aliases", "/, Sys.Audit"},
		{"POST", "/cluster/firewall/ipset", "/, Sys.Modify"},
		{"POST", "/cluster/firewall/groups", "/, Sys.Modify"},
		{"GET", "/cluster/firewall/groups/web", "/, Sys.Audit"},
		{"GET", "/cluster/firewall/refs", "/, Sys.Audit"},
		{"GET", "/nodes/pve1/firewall/options", "/nodes/pve1, Sys.Audit"},
		{"POST", "/nodes/pve1/firewall/rules", "/nodes/pve1, Sys.Modify"},
		{"POST", "/nodes/pve1/qemu/100/firewall/rules", "/vms/100, VM.Config.Network"},
		{"POST", "/nodes/pve1/lxc/100/firewall/aliases", "/vms/100, VM.Config.Network"},
		{"DELETE", "/nodes/pve1/qemu/100/firewall/ipset/x", "/vms/100, VM.Config.Network"},
	}
	for _, tc := range cases {
		wantAPIError(t, c.do(tc.method, tc.path, nil), 403, "", "Permission check failed ("+tc.priv+")\n")
	}
	wantAPIError(t, c.do("GET", "/nodes/pve1/firewall/log", nil), 403, "", "Permission check failed (/nodes/pve1, Sys.Syslog)\n")
	wantAPIError(t, c.do("GET", "/nodes/pve1/qemu/100/firewall/log", nil), 403, "", "Permission check failed (/vms/100, VM.Console)\n")
	for _, path := range []string{"/cluster/firewall", "/cluster/firewall/groups", "/cluster/firewall/macros", "/nodes/pve1/qemu/100/firewall/rules"} {
		c.mustOK("GET", path, nil)
	}
	root := newClient(t, startSim(t, Options{}))
	if r := root.mustOK("GET", "/nodes/pve1/firewall/log", vals("limit", "10")); r.Total == nil || *r.Total != 1 || string(r.Data) != `[{"n":1,"t":"no content"}]` {
		t.Errorf("node firewall log: %s total %v", r.Data, r.Total)
	}
}

// The firewall files are part of --state: a restarted simulator reads the
// same rules, sets and options; a clone copies a guest's file and a
// destroy removes it.
func TestFirewallStateSurvivesRestartCloneAndDestroy(t *testing.T) {
	srv, c := newSim(t, Options{})
	createVM(t, c, "100")
	c.mustOK("PUT", "/cluster/firewall/options", vals("enable", "1"))
	c.mustOK("POST", "/cluster/firewall/ipset", vals("name", "admins"))
	c.mustOK("POST", "/cluster/firewall/ipset/admins", vals("cidr", "10.0.0.1"))
	c.mustOK("POST", "/cluster/firewall/groups", vals("group", "web"))
	c.mustOK("POST", "/cluster/firewall/groups/web", vals("type", "in", "action", "ACCEPT", "macro", "HTTP"))
	c.mustOK("POST", "/nodes/pve1/firewall/rules", vals("type", "in", "action", "ACCEPT", "macro", "SSH"))
	c.mustOK("POST", "/nodes/pve1/qemu/100/firewall/rules", vals("type", "group", "action", "web", "iface", "net0"))
	before := map[string]string{}
	paths := []string{"/cluster/firewall/options", "/cluster/firewall/ipset/admins", "/cluster/firewall/groups/web",
		"/nodes/pve1/firewall/rules", "/nodes/pve1/qemu/100/firewall/rules"}
	for _, p := range paths {
		before[p] = string(c.mustOK("GET", p, nil).Data)
	}
	srv2 := reloaded(t, srv)
	c2 := newClient(t, srv2)
	for _, p := range paths {
		if got := string(c2.mustOK("GET", p, nil).Data); got != before[p] {
			t.Errorf("%s after the restart: %s, want %s", p, got, before[p])
		}
	}
	mustTaskOK(t, c2, "POST", "/nodes/pve1/qemu/100/clone", vals("newid", "101", "full", "1"))
	if got := string(c2.mustOK("GET", "/nodes/pve1/qemu/101/firewall/rules", nil).Data); got != before["/nodes/pve1/qemu/100/firewall/rules"] {
		t.Errorf("the clone's rules %s", got)
	}
	mustTaskOK(t, c2, "DELETE", "/nodes/pve1/qemu/100", nil)
	if n := len(c2.mustOK("GET", "/nodes/pve1/qemu/100/firewall/rules", nil).list(t)); n != 0 {
		t.Errorf("rules of the destroyed guest: %d", n)
	}
}
