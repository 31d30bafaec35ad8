package manifest

import (
	"strings"
	"testing"
)

// A rule is checked as pve-firewall's verify_rule checks it for the list
// it is in: the types and interfaces of the scope, actions, macros and
// what they set, protocols with ports, port lists, ICMP types, address
// lists of one IP version, and a group rule without packet fields.
func TestFirewallRuleValidation(t *testing.T) {
	no := false
	tests := []struct {
		name  string
		scope FirewallRuleScope
		rule  FirewallRule
		want  string // "" when valid; else "field: substring"
	}{
		{"web ports", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "80,443"}, ""},
		{"macro from an IP set", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "SSH", Source: "+admins"}, ""},
		{"macro with its own proto", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "SSH", Proto: "tcp"}, ""},
		{"macro contradicted", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "SSH", Proto: "udp"}, "proto: macro SSH already sets proto (to tcp)"},
		{"macro dport contradicted", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "HTTP", Proto: "tcp", Dport: "8080"}, "dport: macro HTTP already sets dport"},
		{"unknown macro", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "SSHH"}, "macro: unknown macro \"SSHH\", did you mean `SSH`"},
		{"IPv6-only macro", FirewallRulesGuest, FirewallRule{Type: "in", Action: "ACCEPT", Macro: "NeighborDiscovery"}, ""},
		{"forward in a group", FirewallRulesGroup, FirewallRule{Type: "forward", Action: "ACCEPT", Proto: "udp", Dport: "53"}, ""},
		{"forward REJECT", FirewallRulesCluster, FirewallRule{Type: "forward", Action: "REJECT"}, "action: cannot define REJECT rules on the forward chain"},
		{"forward on a guest", FirewallRulesGuest, FirewallRule{Type: "forward", Action: "ACCEPT"}, "type: forward rules are not allowed in a guest's rules"},
		{"group in a group", FirewallRulesGroup, FirewallRule{Type: "group", Action: "web"}, "type: group rules are not allowed in a security group"},
		{"group on a guest", FirewallRulesGuest, FirewallRule{Type: "group", Action: "webserver", Iface: "net0", Enable: &no, Comment: "web"}, ""},
		{"group with a port", FirewallRulesGuest, FirewallRule{Type: "group", Action: "webserver", Proto: "tcp"}, "proto: a group rule takes only action"},
		{"group name in capitals", FirewallRulesCluster, FirewallRule{Type: "group", Action: "Web"}, "action: security group names are lower case"},
		{"group name too long", FirewallRulesCluster, FirewallRule{Type: "group", Action: "a-very-long-group-name"}, "action: \"a-very-long-group-name\" is not a security group name"},
		{"unknown action", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ALLOW"}, "action: unknown action \"ALLOW\""},
		{"dport without proto", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Dport: "22"}, "dport: needs proto"},
		{"port on icmp", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", Sport: "22"}, "sport: protocol \"icmp\" does not support ports"},
		{"icmp type as dport", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", Dport: "echo-request"}, ""},
		{"service name", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "ssh,https,8000:8010"}, ""},
		{"unknown service", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "sshd"}, "dport: invalid port \"sshd\""},
		{"port too high", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "65536"}, "dport: invalid port \"65536\""},
		{"backwards range", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "90:80"}, "dport: backwards range \"90:80\", did you mean 80:90?"},
		{"too many ports", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15:16"}, "dport: \"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15:16\" has too many entries"},
		{"extraneous comma", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "80,"}, "dport: \"80,\" has extraneous commas"},
		{"unknown protocol", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcpp"}, "proto: unknown protocol \"tcpp\""},
		{"icmp type", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", ICMPType: "echo-request"}, ""},
		{"icmpv6 type on icmp", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", ICMPType: "neighbor-solicitation"}, "icmpType: invalid icmp type \"neighbor-solicitation\" for proto icmp"},
		{"icmp type without icmp", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "tcp", ICMPType: "echo-request"}, "icmpType: needs proto icmp"},
		{"icmp type with dport", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", Dport: "echo-reply", ICMPType: "echo-request"}, "icmpType: cannot be given together with dport"},
		{"address list", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.0/8,192.168.1.5", Dest: "10.1.1.1"}, ""},
		{"range", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.1-10.0.0.9"}, ""},
		{"range in a list", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.1-10.0.0.9,10.1.0.1"}, "source: a range (10.0.0.1-10.0.0.9) cannot be part of a list"},
		{"host bits", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.1.2.3/16"}, "source: 10.1.2.3/16 has host bits set (Proxmox refuses it): did you mean 10.1.0.0/16?"},
		{"mixed list", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.1,fd00::1"}, "source: \"10.0.0.1,fd00::1\" mixes IPv4 and IPv6"},
		{"mixed source and dest", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.1", Dest: "fd00::1"}, "dest: mixes IPv4 and IPv6"},
		{"icmp to IPv6", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Proto: "icmp", Dest: "fd00::1"}, "dest: mixes IPv4 and IPv6"},
		{"alias", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "dc/lan"}, ""},
		{"bad IP set", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "+1admins"}, "source: invalid IP set name \"+1admins\""},
		{"bad address", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Source: "10.0.0.300"}, "source: \"10.0.0.300\" is not an IP address"},
		{"guest iface", FirewallRulesGuest, FirewallRule{Type: "in", Action: "ACCEPT", Iface: "net1"}, ""},
		{"guest iface not netN", FirewallRulesGuest, FirewallRule{Type: "in", Action: "ACCEPT", Iface: "eth0"}, "iface: a guest's rule names its network device as netN"},
		{"cluster iface", FirewallRulesCluster, FirewallRule{Type: "in", Action: "ACCEPT", Iface: "vmbr0"}, ""},
		{"bad iface", FirewallRulesCluster, FirewallRule{Type: "in", Action: "ACCEPT", Iface: "vmbr0-"}, "iface: invalid network interface name"},
		{"iface in a group", FirewallRulesGroup, FirewallRule{Type: "in", Action: "ACCEPT", Iface: "net0"}, "iface: a security group's rule has no interface"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := FirewallRuleErrors(tt.scope, &tt.rule)
			var got []string
			for _, e := range errs {
				got = append(got, e.Field+": "+e.Msg)
			}
			if tt.want == "" {
				if len(got) > 0 {
					t.Fatalf("valid rule refused: %v", got)
				}
				return
			}
			if len(got) == 0 || !strings.Contains(strings.Join(got, "\n"), tt.want) {
				t.Fatalf("errors %q, want one with %q", got, tt.want)
			}
		})
	}
}

// A macro is named in any case and kept in Proxmox's spelling, as
// verify_rule rewrites it.
func TestFirewallRuleMacroSpelling(t *testing.T) {
	r := FirewallRule{Type: "in", Action: "ACCEPT", Macro: "ssh"}
	if errs := FirewallRuleErrors(FirewallRulesGroup, &r); len(errs) > 0 || r.Macro != "SSH" {
		t.Fatalf("macro %q, errors %v; want SSH and none", r.Macro, errs)
	}
}

func fwGroupYAML(name, spec string) string { return namedDoc(KindFirewallGroup, name, spec) }

// A security group's manifest: its name as create_security_group takes
// it, its rules checked for a group (errors located at the rule's
// field), and strict decoding of the rule fields.
func TestFirewallGroupManifestValidation(t *testing.T) {
	tests := []validationCase{
		{"rules", fwGroupYAML("webserver", "  comment: web\n  rules:\n    - { type: in, action: ACCEPT, proto: tcp, dport: \"80,443\" }\n    - { type: in, action: ACCEPT, macro: ssh, source: +admins, log: info }\n    - { type: out, action: DROP, enable: false }\n"), ""},
		{"empty", fwGroupYAML("empty", "  comment: nothing yet\n"), ""},
		{"name too long", fwGroupYAML("a-very-long-group-name", "  comment: x\n"), "not a security group name"},
		{"name with capitals", fwGroupYAML("Web", "  comment: x\n"), "is not a valid name"},
		{"located error", fwGroupYAML("web", "  rules:\n    - { type: in, action: ACCEPT }\n    - { type: in, action: ACCEPT, dport: \"22\" }\n"), "spec.rules[1].dport: needs proto"},
		{"group rule in a group", fwGroupYAML("web", "  rules:\n    - { type: group, action: other }\n"), "spec.rules[0].type: group rules are not allowed in a security group"},
		{"unknown type", fwGroupYAML("web", "  rules:\n    - { type: inbound, action: ACCEPT }\n"), "spec.rules[0].type"},
		{"unknown log level", fwGroupYAML("web", "  rules:\n    - { type: in, action: ACCEPT, log: verbose }\n"), "spec.rules[0].log"},
		{"port as a number", fwGroupYAML("web", "  rules:\n    - { type: in, action: ACCEPT, proto: tcp, dport: 22 }\n"), "quote it"},
		{"misspelt field", fwGroupYAML("web", "  rules:\n    - { type: in, action: ACCEPT, icmp-type: echo-request }\n"), "did you mean `icmpType`"},
		{"without action", fwGroupYAML("web", "  rules:\n    - { type: in }\n"), "missing required field `action`"},
		{"with tags", "apiVersion: proxmops.dev/v1\nkind: FirewallGroup\nmetadata:\n  name: web\n  tags: [a]\nspec:\n  comment: x\n", "no Proxmox tags"},
	}
	checkValidation(t, tests, nil)
}

// The IP sets and aliases a group's rules name are its dependencies when
// declared (the graph's edges and the apply order), and so is a group a
// guest's or the cluster's rule applies; undeclared ones are expected on
// the cluster.
func TestFirewallGroupDependencies(t *testing.T) {
	set := loadSet(t, map[string]string{
		"ipset.yaml": "apiVersion: proxmops.dev/v1\nkind: FirewallIPSet\nmetadata:\n  name: admins\nspec:\n  comment: x\n",
		"alias.yaml": "apiVersion: proxmops.dev/v1\nkind: FirewallAlias\nmetadata:\n  name: lan\nspec:\n  cidr: 10.0.0.0/8\n",
		"group.yaml": fwGroupYAML("web", "  rules:\n    - { type: in, action: ACCEPT, macro: SSH, source: +admins }\n    - { type: in, action: ACCEPT, macro: HTTP, source: dc/LAN }\n    - { type: in, action: ACCEPT, macro: DNS, source: +elsewhere }\n"),
	})
	var got []string
	for _, e := range Dependencies(set.Get(KindFirewallGroup, "web")) {
		got = append(got, e.Key()+"@"+e.Path+":"+string(e.Relation))
	}
	if want := "FirewallAlias/lan@spec.rules[1].source:uses FirewallIPSet/admins@spec.rules[0].source:uses"; strings.Join(got, " ") != want {
		t.Fatalf("dependencies %v, want %s", got, want)
	}
}

// The cluster firewall is one object named cluster; its options take
// Proxmox's policies; its rules are checked for the cluster's list
// (forward and group rules, a node's interface).
func TestClusterFirewallManifestValidation(t *testing.T) {
	doc := func(name, spec string) string { return namedDoc(KindClusterFirewall, name, spec) }
	tests := []validationCase{
		{"options and rules", doc("cluster", "  enabled: true\n  policyIn: DROP\n  policyOut: ACCEPT\n  rules:\n    - { type: group, action: webserver, iface: vmbr0 }\n    - { type: forward, action: ACCEPT, proto: udp, dport: \"53\" }\n"), ""},
		{"only rules", doc("cluster", "  rules:\n    - { type: in, action: ACCEPT, macro: SSH }\n"), ""},
		{"another name", doc("main", "  enabled: true\n"), "the cluster firewall is one object named \"cluster\""},
		{"unknown policy", doc("cluster", "  policyIn: DENY\n"), "spec.policyIn"},
		{"enabled as a string", doc("cluster", "  enabled: \"yes\"\n"), "spec.enabled"},
		{"a rule's error located", doc("cluster", "  rules:\n    - { type: in, action: ACCEPT, iface: \"vmbr0-\" }\n"), "spec.rules[0].iface: invalid network interface name"},
		{"with a node", "apiVersion: proxmops.dev/v1\nkind: ClusterFirewall\nmetadata:\n  name: cluster\n  node: pve1\nspec:\n  enabled: false\n", "cluster-wide"},
	}
	checkValidation(t, tests, nil)
}
