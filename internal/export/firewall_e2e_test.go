package export_test

import (
	"context"
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
	var paths []string
	for _, f := range res.Files {
		paths = append(paths, f.Path)
	}
	if strings.Join(paths, " ") != "firewall/alias-gw.yaml firewall/alias-lan.yaml firewall/ipset-admins.yaml" {
		t.Fatalf("files: %v", paths)
	}
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
	issues, err := res.Check(context.Background(), c.client)
	if err != nil || len(issues) != 0 {
		t.Fatalf("check: %v %q", err, issues)
	}
}
