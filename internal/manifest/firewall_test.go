package manifest

import "testing"

// Firewall aliases and IP sets are checked with pve-firewall's rules: the
// name pattern, IP or CIDR as pve_verify_ip_or_cidr reads it, IP set
// entries without a zero prefix or a duplicate (after Proxmox's own
// normalisation), one-line comments, and no node or tags.
func TestFirewallManifestValidation(t *testing.T) {
	alias := func(name, spec string) string { return namedDoc(KindFirewallAlias, name, spec) }
	ipset := func(name, spec string) string { return namedDoc(KindFirewallIPSet, name, spec) }
	tests := []validationCase{
		{"alias network", alias("lan", "  cidr: 192.168.1.0/24\n  comment: home LAN\n"), ""},
		{"alias address", alias("gw", "  cidr: 192.168.1.1\n"), ""},
		{"alias IPv6", alias("v6", "  cidr: fd00::/64\n"), ""},
		{"alias host bits kept", alias("host", "  cidr: 10.0.0.5/24\n"), ""},
		{"alias without cidr", alias("lan", "  comment: x\n"), "missing required field `cidr`"},
		{"alias bad address", alias("lan", "  cidr: 192.168.1.300\n"), "does not look like a valid IP address"},
		{"alias prefix too long", alias("lan", "  cidr: 10.0.0.0/33\n"), "invalid prefix length /33"},
		{"alias IPv6 prefix too long", alias("lan", "  cidr: fd00::/129\n"), "invalid prefix length"},
		{"alias hostname", alias("lan", "  cidr: example.org\n"), "cidr"},
		{"alias zone", alias("lan", "  cidr: fe80::1%eth0\n"), "cidr"},
		{"alias name must start with a letter", alias("1lan", "  cidr: 10.0.0.1\n"), "not a firewall name"},
		{"alias name of one letter", alias("a", "  cidr: 10.0.0.1\n"), "not a firewall name"},
		{"alias comment of two lines", alias("lan", "  cidr: 10.0.0.1\n  comment: \"a\\nb\"\n"), "comment"},
		{"alias with a node", "apiVersion: proxmops.dev/v1\nkind: FirewallAlias\nmetadata:\n  name: lan\n  node: pve1\nspec:\n  cidr: 10.0.0.1\n", "cluster-wide"},
		{"alias with tags", "apiVersion: proxmops.dev/v1\nkind: FirewallAlias\nmetadata:\n  name: lan\n  tags: [a]\nspec:\n  cidr: 10.0.0.1\n", "no Proxmox tags"},
		{"alias adoption annotation", "apiVersion: proxmops.dev/v1\nkind: FirewallAlias\nmetadata:\n  name: lan\n  annotations: {proxmops.dev/adopt: \"true\"}\nspec:\n  cidr: 10.0.0.1\n", ""},
		{"ipset entries", ipset("admins", "  comment: admins\n  entries:\n    - cidr: 192.168.1.10\n    - {cidr: 192.168.1.11, comment: laptop, nomatch: false}\n    - {cidr: 10.0.0.0/8, nomatch: true}\n    - cidr: dc/lan\n    - cidr: lan\n"), ""},
		{"ipset empty", ipset("empty", "  comment: nothing yet\n"), ""},
		{"ipset zero prefix", ipset("all", "  entries:\n    - cidr: 0.0.0.0/0\n"), "a zero prefix is not allowed"},
		{"ipset duplicate", ipset("dup", "  entries:\n    - cidr: 10.0.0.5\n    - cidr: 10.0.0.5/32\n"), "already entry 0"},
		{"ipset duplicate after host bits", ipset("dup", "  entries:\n    - cidr: 10.1.0.0/16\n    - cidr: 10.1.2.3/16\n"), "as 10.1.0.0/16"},
		{"ipset bad entry", ipset("bad", "  entries:\n    - cidr: 10.0.0.256\n"), "spec.entries[0].cidr"},
		{"ipset guest alias", ipset("bad", "  entries:\n    - cidr: guest/lan\n"), "spec.entries[0].cidr"},
		{"ipset entry without cidr", ipset("bad", "  entries:\n    - comment: x\n"), "missing required field `cidr`"},
		{"ipset unknown entry field", ipset("bad", "  entries:\n    - {cidr: 10.0.0.1, nomacth: true}\n"), "did you mean `nomatch`"},
	}
	checkValidation(t, tests, nil)
}

// Entries and aliases compare in the form Proxmox reads them back.
func TestFirewallCIDRNormalForms(t *testing.T) {
	for in, want := range map[string]string{"10.0.0.5/32": "10.0.0.5", "10.1.2.3/16": "10.1.0.0/16", "fd00::1/128": "fd00::1",
		"FD00:0::/64": "fd00::/64", "dc/lan": "dc/lan", "10.0.0.0/8": "10.0.0.0/8"} {
		if got := FirewallEntryCIDR(in); got != want {
			t.Errorf("FirewallEntryCIDR(%s) = %s, want %s", in, got, want)
		}
	}
	if got := FirewallAliasCIDR("10.1.2.3/16"); got != "10.1.2.3/16" {
		t.Errorf("an alias keeps its host bits: %s", got)
	}
}
