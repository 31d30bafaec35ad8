package pvesim

import (
	"fmt"
	"strings"
	"testing"
)

// fwRuleOrder is the comments of a rule list, in order, checking that pos
// counts from 0 and every rule carries the list's digest.
func fwRuleOrder(t *testing.T, c *client, path string) []string {
	t.Helper()
	var out []string
	list := c.mustOK("GET", path, nil).list(t)
	for i, r := range list {
		if r["pos"] != float64(i) {
			t.Errorf("%s: rule %d has pos %v (%T)", path, i, r["pos"], r["pos"])
		}
		if d, _ := r["digest"].(string); d == "" || d != list[0]["digest"] {
			t.Errorf("%s: rule %d digest %v", path, i, r["digest"])
		}
		out = append(out, fmt.Sprint(r["comment"]))
	}
	return out
}

// A new rule goes first (create_rule unshifts it, whatever pos says),
// disabled unless enable is given; one rule read by its position carries
// that position as the string of the path (get_rule returns $param->{pos}); moveto puts a rule before the one at
// the target position, or last (other arguments are then ignored); a stale digest, a missing position and a
// deletion of a required field are refused with Proxmox's texts.
func TestFirewallRuleListOrderMoveAndDigest(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	base := "/cluster/firewall/rules"
	for _, name := range []string{"a", "b", "c"} {
		c.mustOK("POST", base, vals("type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "22", "comment", name, "pos", "2"))
	}
	if got := strings.Join(fwRuleOrder(t, c, base), ""); got != "cba" {
		t.Fatalf("order after three creates: %s", got)
	}
	first := c.mustOK("GET", base+"/0", nil).obj(t)
	if first["enable"] != 0.0 || first["pos"] != "0" || first["type"] != "in" || first["dport"] != "22" {
		t.Fatalf("rule 0 reads back %v", first)
	}
	moves := []struct {
		pos, moveto string
		want        string
	}{
		{"0", "2", "bca"}, // before the rule now at 2
		{"2", "0", "abc"},
		{"0", "9", "bca"}, // past the end: last
		{"1", "1", "bxa"}, // onto itself: no move, the other arguments apply
	}
	for _, m := range moves {
		c.mustOK("PUT", base+"/"+m.pos, vals("moveto", m.moveto, "comment", "x"))
		if got := strings.Join(fwRuleOrder(t, c, base), ""); got != m.want {
			t.Errorf("move %s to %s: %s, want %s", m.pos, m.moveto, got, m.want)
		}
	}
	digest := first["digest"].(string)
	if r := c.do("PUT", base+"/0", vals("enable", "1", "digest", digest)); r.Status != 500 ||
		r.Message != "detected modified configuration - file changed by other user? Try again.\n" {
		t.Errorf("stale digest: %d %q", r.Status, r.Message)
	}
	cur := c.mustOK("GET", base+"/0", nil).obj(t)["digest"].(string)
	c.mustOK("PUT", base+"/0", vals("enable", "1", "log", "info", "digest", cur))
	if got := c.mustOK("GET", base+"/0", nil).obj(t); got["enable"] != 1.0 || got["log"] != "info" {
		t.Errorf("after update: %v", got)
	}
	c.mustOK("PUT", base+"/0", vals("delete", "log,comment"))
	if got := c.mustOK("GET", base+"/0", nil).obj(t); got["log"] != nil || got["comment"] != nil {
		t.Errorf("after delete: %v", got)
	}
	refusals := []struct {
		method, path string
		params       []string
		status       int
		field, msg   string
	}{
		{"GET", base + "/3", nil, 500, "", "no rule at position 3\n"},
		{"DELETE", base + "/7", nil, 500, "", "no rule at position 7\n"},
		{"PUT", base + "/0", []string{"delete", "type"}, 400, "delete", "unable to delete required property 'type'"},
		{"PUT", base + "/0", []string{"delete", "bogus"}, 400, "delete", "no such property ('bogus')"},
		{"DELETE", base + "/0", []string{"digest", digest}, 500, "", "detected modified configuration - file changed by other user? Try again.\n"},
	}
	for _, tc := range refusals {
		r := c.do(tc.method, tc.path, vals(tc.params...))
		got := r.Message
		if tc.field != "" {
			got = r.Errors[tc.field]
		}
		if r.Status != tc.status || got != tc.msg {
			t.Errorf("%s %s %v: %d %q, want %d %q", tc.method, tc.path, tc.params, r.Status, got, tc.status, tc.msg)
		}
	}
	c.mustOK("DELETE", base+"/1", nil)
	if got := strings.Join(fwRuleOrder(t, c, base), ""); !strings.HasPrefix(got, "<nil>") || len(got) != 6 {
		t.Errorf("after deleting rule 1: %s", got)
	}
}

// Rules are verified as verify_rule does, field by field, with its texts;
// the schema's formats (pve-fw-dport-spec, pve-fw-addr-spec, ...) answer
// first with "invalid format - ...".
func TestFirewallRuleValidationTexts(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	createVM(t, c, "100")
	c.mustOK("POST", "/cluster/firewall/aliases", vals("name", "lan", "cidr", "192.168.1.0/24"))
	c.mustOK("POST", "/cluster/firewall/aliases", vals("name", "lan6", "cidr", "fd00::/64"))
	c.mustOK("POST", "/cluster/firewall/ipset", vals("name", "admins"))
	cluster, guest := "/cluster/firewall/rules", "/nodes/pve1/qemu/100/firewall/rules"
	cases := []struct {
		name, path string
		params     []string
		field, msg string
	}{
		{"port above 65535", cluster, []string{"proto", "tcp", "dport", "99999"}, "dport", "invalid format - invalid port '99999'\n"},
		{"backwards range", cluster, []string{"proto", "tcp", "dport", "80:22"}, "dport", "invalid format - backwards range '80:22' not allowed, did you mean '22:80'?\n"},
		{"unknown service", cluster, []string{"proto", "tcp", "sport", "nosuchservice"}, "sport", "invalid format - invalid port 'nosuchservice'\n"},
		{"too many ports", cluster, []string{"proto", "tcp", "dport", "1,2,3,4,5,6,7,8,9,10,11,12,13,14:15,16"}, "dport", "invalid format - too many entries in port list (> 15 numbers)\n"},
		{"port without protocol", cluster, []string{"dport", "80"}, "proto", "missing property - 'dport' requires this property"},
		{"protocol without ports", cluster, []string{"proto", "gre", "dport", "80"}, "dport", "protocol 'gre' does not support ports"},
		{"unknown protocol", cluster, []string{"proto", "bogus"}, "proto", "invalid format - unknown protocol 'bogus'\n"},
		{"unknown macro", cluster, []string{"macro", "Bogus"}, "macro", "unknown macro 'Bogus'"},
		{"macro fixes the protocol", cluster, []string{"macro", "ssh", "proto", "udp"}, "proto", "parameter 'proto' already define in macro (value = 'tcp')"},
		{"host bits in a CIDR", cluster, []string{"source", "10.0.0.5/24"}, "source", "invalid format - invalid IP address: Invalid prefix 00001010000000000000000000000101/24\n"},
		{"bad quad", cluster, []string{"dest", "10.0.0.300"}, "dest", "invalid format - invalid IP address: Invalid quad in IP address 10.0.0.300 - 300\n"},
		{"mixed list", cluster, []string{"source", "10.0.0.1,fd00::1"}, "source", "invalid format - detected mixed ipv4/ipv6 addresses in address list '10.0.0.1,fd00::1'\n"},
		{"range in a list", cluster, []string{"source", "10.0.0.1-10.0.0.9,10.0.1.1"}, "source", "invalid format - you can't use a range in a list\n"},
		{"unknown ipset", cluster, []string{"source", "+nosuch"}, "source", "no such ipset 'nosuch'"},
		{"unknown alias", cluster, []string{"dest", "dc/nosuch"}, "dest", "no such alias 'dc/nosuch'"},
		{"reject on forward", cluster, []string{"type", "forward", "action", "REJECT"}, "action", "cannot define REJECT rules on forward chain"},
		{"unknown action", cluster, []string{"action", "FOO"}, "action", "unknown action 'FOO'"},
		{"icmp-type without icmp", cluster, []string{"proto", "tcp", "icmp-type", "echo-request"}, "proto", "missing property - 'icmp-type' requires this property"},
		{"icmpv6 type for icmp", cluster, []string{"proto", "icmp", "icmp-type", "neighbor-solicitation"}, "icmp-type", "invalid icmp-type 'neighbor-solicitation' for proto 'icmp'"},
		{"guest interface name", guest, []string{"iface", "eth0"}, "iface", `value does not match the regex pattern 'net\d+'`},
		{"forward in a guest", guest, []string{"type", "forward"}, "type", "invalid rule type 'forward' for rule_env 'vm'"},
	}
	for _, tc := range cases {
		p := map[string]string{"type": "in", "action": "ACCEPT"}
		for i := 0; i+1 < len(tc.params); i += 2 {
			p[tc.params[i]] = tc.params[i+1]
		}
		var kv []string
		for k, v := range p {
			kv = append(kv, k, v)
		}
		r := c.do("POST", tc.path, vals(kv...))
		if r.Status != 400 || r.Errors[tc.field] != tc.msg {
			t.Errorf("%s: %d %v, want %s: %q", tc.name, r.Status, r.Errors, tc.field, tc.msg)
		}
	}
	if n := len(c.mustOK("GET", cluster, nil).list(t)); n != 0 {
		t.Fatalf("refused rules were kept: %d", n)
	}
	// What is accepted reads back as a node reads the file again: the
	// macro's preferred spelling, the IP version found, a group not
	// checked for existence.
	c.mustOK("POST", cluster, vals("type", "in", "action", "ACCEPT", "macro", "ssh", "source", "+admins", "enable", "1"))
	c.mustOK("POST", cluster, vals("type", "in", "action", "DROP", "source", "lan6", "proto", "icmpv6", "icmp-type", "echo-request"))
	c.mustOK("POST", cluster, vals("type", "group", "action", "nosuchgroup"))
	list := c.mustOK("GET", cluster, nil).list(t)
	if list[2]["macro"] != "SSH" || list[2]["source"] != "+admins" || list[2]["enable"] != 1.0 {
		t.Errorf("macro rule reads back %v", list[2])
	}
	if list[1]["ipversion"] != 6.0 || list[1]["icmp-type"] != "echo-request" {
		t.Errorf("icmpv6 rule reads back %v", list[1])
	}
	if list[0]["action"] != "nosuchgroup" || list[0]["type"] != "group" {
		t.Errorf("group rule reads back %v", list[0])
	}
	if r := c.do("POST", cluster, vals("type", "in", "action", "ACCEPT", "source", "lan", "dest", "lan6")); r.Status != 500 ||
		r.Message != "detected mixed ipv4/ipv6 addresses in rule\n" {
		t.Errorf("mixed alias versions: %d %q", r.Status, r.Message)
	}
	// An IP set removed later leaves the rule in place with its error.
	c.mustOK("DELETE", "/cluster/firewall/ipset/admins", nil)
	got := c.mustOK("GET", cluster+"/2", nil).obj(t)
	if errs, _ := got["errors"].(map[string]any); errs["source"] != "no such ipset 'admins'" {
		t.Errorf("rule after its IP set went: %v", got)
	}
}

// Security groups: a rule list of their own (no group rules inside),
// renamed with every reference in the cluster, node and guest rules, and
// deleted only when empty, even while still referenced, as
// delete_security_group does not look.
func TestFirewallSecurityGroups(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	createVM(t, c, "100")
	c.mustOK("POST", "/cluster/firewall/groups", vals("group", "web", "comment", "web servers"))
	if r := c.do("POST", "/cluster/firewall/groups", vals("group", "web")); r.Status != 400 || r.Errors["group"] != "Security group 'web' already exists" {
		t.Errorf("duplicate group: %d %v", r.Status, r.Errors)
	}
	g := "/cluster/firewall/groups/web"
	c.mustOK("POST", g, vals("type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "80,443", "enable", "1"))
	if r := c.do("POST", g, vals("type", "group", "action", "other")); r.Status != 400 || r.Errors["type"] != "invalid rule type 'group' for rule_env 'group'" {
		t.Errorf("group in a group: %d %v", r.Status, r.Errors)
	}
	if r := c.do("POST", g, vals("type", "in", "action", "ACCEPT", "iface", "net0")); r.Status != 400 || r.Errors["type"] != "parameter -i not allowed for this rule type" {
		t.Errorf("interface in a group: %d %v", r.Status, r.Errors)
	}
	for _, path := range []string{"/cluster/firewall/rules", "/nodes/pve1/firewall/rules", "/nodes/pve1/qemu/100/firewall/rules"} {
		c.mustOK("POST", path, vals("type", "group", "action", "web", "enable", "1"))
	}
	list := c.mustOK("GET", "/cluster/firewall/groups", nil).list(t)
	if len(list) != 1 || list[0]["group"] != "web" || list[0]["comment"] != "web servers" || list[0]["digest"] == nil {
		t.Fatalf("group list %v", list)
	}
	c.mustOK("POST", "/cluster/firewall/groups", vals("group", "www", "rename", "web", "digest", list[0]["digest"].(string)))
	for _, path := range []string{"/cluster/firewall/rules/0", "/nodes/pve1/firewall/rules/0", "/nodes/pve1/qemu/100/firewall/rules/0"} {
		if a := c.mustOK("GET", path, nil).obj(t)["action"]; a != "www" {
			t.Errorf("%s after the rename: action %v", path, a)
		}
	}
	if rules := c.mustOK("GET", "/cluster/firewall/groups/www", nil).list(t); len(rules) != 1 || rules[0]["dport"] != "80,443" {
		t.Errorf("renamed group rules %v", rules)
	}
	refusals := []struct {
		method, path, msg string
	}{
		{"GET", g, "no such security group 'web'\n"},
		{"DELETE", "/cluster/firewall/groups/www", "Security group 'www' is not empty\n"},
	}
	for _, tc := range refusals {
		if r := c.do(tc.method, tc.path, nil); r.Status != 500 || r.Message != tc.msg {
			t.Errorf("%s %s: %d %q", tc.method, tc.path, r.Status, r.Message)
		}
	}
	c.mustOK("DELETE", "/cluster/firewall/groups/www/0", nil)
	c.mustOK("DELETE", "/cluster/firewall/groups/www", nil)
	if a := c.mustOK("GET", "/cluster/firewall/rules/0", nil).obj(t)["action"]; a != "www" {
		t.Errorf("the cluster rule naming the deleted group: %v", a)
	}
}

// An empty address or port list is valid (Perl's split of an empty string is an empty
// list, so parse_address_list and parse_port_name_number_or_range in
// pve-firewall's Firewall.pm find nothing wrong), and copy_rule_data then
// drops the field: clients that send every field, empty ones included, are
// served.
func TestFirewallRuleEmptyAddressAndPortListsAreValidAndDropped(t *testing.T) {
	c := newClient(t, startSim(t, Options{}))
	base := "/cluster/firewall/rules"
	c.mustOK("POST", base, vals("type", "in", "action", "ACCEPT", "proto", "tcp", "comment", "e",
		"source", "", "dest", "", "sport", "", "dport", "", "icmp-type", "", "macro", ""))
	got := c.mustOK("GET", base+"/0", nil).obj(t)
	for _, k := range []string{"source", "dest", "sport", "dport", "icmp-type", "macro"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s reads back as %v, want no field", k, got[k])
		}
	}
	c.mustOK("PUT", base+"/0", vals("dest", "", "dport", "22", "sport", ""))
	if got := c.mustOK("GET", base+"/0", nil).obj(t); got["dport"] != "22" || got["dest"] != nil {
		t.Errorf("after update: %v", got)
	}
	if r := c.do("POST", base, vals("type", "in", "action", "ACCEPT", "dest", ",")); r.Status != 400 ||
		!strings.Contains(r.Message+fmt.Sprint(r.Errors), "extraneous commas in list") {
		t.Errorf("a lone comma: %d %q %v", r.Status, r.Message, r.Errors)
	}
	// pve-iface has no such leniency (pve_verify_iface in JSONSchema.pm).
	if r := c.do("POST", base, vals("type", "in", "action", "ACCEPT", "iface", "")); r.Status != 400 ||
		r.Errors["iface"] != "invalid format - invalid network interface name ''\n" {
		t.Errorf("an empty iface: %d %q %v", r.Status, r.Message, r.Errors)
	}
}
