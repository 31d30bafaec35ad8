package export_test

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
)

// Aliases and IP sets are exported with their entries in Proxmox's form:
// hand-made ones annotated for adoption, proxmops' own with their comment
// without the mark, a name no manifest can keep refused; the exported
// tree plans nothing but the adoptions.
func TestExportFirewallAliasesAndIPSets(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/cluster/firewall/aliases", "name", "LAN", "cidr", "192.168.1.0/24", "comment", "home")
	c.call("POST", "/cluster/firewall/aliases", "name", "gw", "cidr", "192.168.1.1/32", "comment", "router ("+engine.OwnerMark+")")
	c.call("POST", "/cluster/firewall/aliases", "name", "odd_name", "cidr", "10.0.0.1")
	c.call("POST", "/cluster/firewall/ipset", "name", "admins", "comment", "admins")
	c.call("POST", "/cluster/firewall/ipset/admins", "cidr", "192.168.1.10/32", "comment", "desk")
	c.call("POST", "/cluster/firewall/ipset/admins", "cidr", "10.1.2.3/16", "nomatch", "1")
	c.call("POST", "/cluster/firewall/ipset/admins", "cidr", "dc/lan")
	res := export1(t, c, export.Options{Kinds: []string{"FirewallAlias", "ipsets"}})
	wantFiles(t, res, "firewall/alias-gw.yaml firewall/alias-lan.yaml firewall/ipset-admins.yaml")
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "odd_name") {
		t.Fatalf("refused: %v", res.Refused)
	}
	lan, gw, set := file(t, res, "firewall/alias-lan.yaml"), file(t, res, "firewall/alias-gw.yaml"), file(t, res, "firewall/ipset-admins.yaml")
	for _, want := range []string{"kind: FirewallAlias", "name: lan", "proxmops.dev/adopt: \"true\"", "cidr: 192.168.1.0/24", "comment: home"} {
		if !strings.Contains(lan, want) {
			t.Errorf("lan lacks %q:\n%s", want, lan)
		}
	}
	if !strings.Contains(gw, "cidr: 192.168.1.1\n") || !strings.Contains(gw, "comment: router\n") || strings.Contains(gw, "proxmops.dev/adopt") {
		t.Errorf("owned alias:\n%s", gw)
	}
	for _, want := range []string{"kind: FirewallIPSet", "cidr: 10.1.0.0/16", "nomatch: true", "cidr: 192.168.1.10", "comment: desk", "cidr: dc/lan"} {
		if !strings.Contains(set, want) {
			t.Errorf("IP set lacks %q:\n%s", want, set)
		}
	}
	c.checkClean(res)
}

// Security groups are exported with their rules in Proxmox's order and
// form (a disabled rule with enable: false): one made by hand annotated
// for adoption, proxmops' own with its comment without the mark; the
// exported tree validates and plans nothing but the adoption.
func TestExportFirewallGroups(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/cluster/firewall/ipset", "name", "admins", "comment", "admins")
	c.call("POST", "/cluster/firewall/groups", "group", "webserver", "comment", "web")
	c.call("POST", "/cluster/firewall/groups/webserver", "type", "in", "action", "ACCEPT", "macro", "SSH", "source", "+admins", "enable", "1")
	c.call("POST", "/cluster/firewall/groups/webserver", "type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "80,443", "comment", "web", "enable", "1")
	c.call("POST", "/cluster/firewall/groups/webserver", "type", "out", "action", "DROP", "proto", "icmp", "icmp-type", "echo-request", "log", "info")
	c.call("POST", "/cluster/firewall/groups", "group", "db", "comment", "databases ("+engine.OwnerMark+")")
	res := export1(t, c, export.Options{Kinds: []string{"group"}})
	wantFiles(t, res, "firewall/group-db.yaml firewall/group-webserver.yaml")
	web, db := file(t, res, "firewall/group-webserver.yaml"), file(t, res, "firewall/group-db.yaml")
	order := []string{"kind: FirewallGroup", "proxmops.dev/adopt: \"true\"", "comment: web", "type: out", "action: DROP", "proto: icmp", "log: info",
		"enable: false", "icmpType: echo-request", "dport: 80,443", "comment: web", "macro: SSH", "source: +admins"}
	rest := web
	for _, want := range order {
		i := strings.Index(rest, want)
		if i < 0 {
			t.Fatalf("group lacks %q in order:\n%s", want, web)
		}
		rest = rest[i+len(want):]
	}
	if !strings.Contains(db, "comment: databases\n") || strings.Contains(db, "proxmops.dev/adopt") || strings.Contains(db, "rules:") {
		t.Errorf("owned group:\n%s", db)
	}
	c.checkClean(res)
}

// The cluster firewall is exported with the options Proxmox holds and
// only proxmops' own rules, their comments without the mark; the tree
// plans nothing.
func TestExportClusterFirewall(t *testing.T) {
	c := newCluster(t)
	c.call("PUT", "/cluster/firewall/options", "policy_in", "REJECT", "enable", "0")
	c.call("POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "macro", "SSH", "comment", "by hand", "enable", "1")
	c.call("POST", "/cluster/firewall/rules", "type", "in", "action", "ACCEPT", "proto", "tcp", "dport", "8006", "comment", "api ("+engine.OwnerMark+")", "enable", "1")
	res := export1(t, c, export.Options{Kinds: []string{"clusterfirewall"}})
	if len(res.Files) != 1 || res.Files[0].Path != "firewall/cluster.yaml" {
		t.Fatalf("files: %+v", res.Files)
	}
	got := file(t, res, "firewall/cluster.yaml")
	for _, want := range []string{"kind: ClusterFirewall", "name: cluster", "enabled: false", "policyIn: REJECT", "dport: \"8006\"", "comment: api\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "SSH") || !strings.Contains(strings.Join(res.Files[0].Notes, " "), "1 more rules") {
		t.Errorf("a hand-made rule is exported or not noted:\n%s %v", got, res.Files[0].Notes)
	}
	c.checkClean(res)
}

// On a cluster whose firewall nobody set up, `--kind firewall` writes a
// cluster firewall that declares nothing, and the tree plans nothing.
func TestExportFirewallOfAnUntouchedCluster(t *testing.T) {
	c := newCluster(t)
	res := export1(t, c, export.Options{Kinds: []string{"firewall"}})
	if len(res.Files) != 1 || res.Files[0].Path != "firewall/cluster.yaml" {
		t.Fatalf("files: %+v", res.Files)
	}
	if got := file(t, res, "firewall/cluster.yaml"); strings.Contains(got, "enabled") || strings.Contains(got, "rules") {
		t.Fatalf("an untouched firewall declares something:\n%s", got)
	}
	c.checkClean(res)
}
