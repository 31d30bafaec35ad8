package engine

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
)

// Security groups (pve-firewall API2/Firewall/Groups.pm and GroupRules in
// Rules.pm): a row of the collections table whose items carry an ordered
// rule list. Sys.Audit on / reads them, Sys.Modify on / changes them.

const KindFirewallGroup = string(manifest.KindFirewallGroup)

// FirewallGroupSpec is a desired security group with its rules.
type FirewallGroupSpec struct {
	Meta
	Comment string
	Rules   []manifest.FirewallRule
}

func firewallGroupFromManifest(g *manifest.FirewallGroup, _ SecretReader) *FirewallGroupSpec {
	return &FirewallGroupSpec{Meta: metaOf(g), Comment: strings.TrimSpace(g.Spec.Comment), Rules: g.Spec.Rules}
}

func fwGroupPath(name string) string { return fwBase + "/groups/" + pve.PathEscape(name) }

var firewallGroups = &collection{
	kind: KindFirewallGroup, noun: "security group", plural: "firewall security groups", list: fwBase + "/groups", key: "group", fold: true,
	privPath: "/", read: "Sys.Audit", write: "Sys.Modify",
	fields:  func(Spec) []collField { return nil },
	comment: func(sp Spec) string { return sp.(*FirewallGroupSpec).Comment },
	create: func(sp Spec, marked string) collReq {
		return collReq{method: "POST", path: fwBase + "/groups", params: pve.NewParams().Set("group", sp.meta().Name).Set("comment", marked)}
	},
	update: func(name string, _ Spec, marked string, have collItem) collReq {
		// create_security_group with rename = group changes only the comment.
		return recomment(fwBase+"/groups", "group", name, marked, have)
	},
	remove: func(name string) collReq { return collReq{method: "DELETE", path: fwGroupPath(name)} },
	rules: &collRules{
		path: fwGroupPath, field: "spec.rules",
		want:  func(sp Spec) []manifest.FirewallRule { return sp.(*FirewallGroupSpec).Rules },
		users: fwGroupUsers,
	},
	dependsOn: func(_ *Desired, sp Spec) []string { return sp.meta().Needs },
}

// fwGroupUsers names the rule lists with a rule applying the group: the
// cluster's, each node's, each guest's (one request each; only before a
// group is removed).
func fwGroupUsers(ctx context.Context, c *pve.Client, group string) ([]string, error) {
	lists := map[string]string{fwBase + "/rules": "the cluster's rules"}
	var nodes []map[string]any
	if err := c.Get(ctx, "nodes", nil, &nodes); err != nil {
		return nil, fmt.Errorf("listing nodes: %w", err)
	}
	for _, n := range nodes {
		name := fmt.Sprint(n["node"])
		lists["nodes/"+pve.PathEscape(name)+"/firewall/rules"] = "node " + name + "'s rules"
	}
	var guests []map[string]any
	if err := c.Get(ctx, "cluster/resources", pve.NewParams().Set("type", "vm"), &guests); err != nil {
		return nil, fmt.Errorf("listing guests: %w", err)
	}
	for _, g := range guests {
		it := stringValues(g)
		noun := map[string]string{"qemu": "VM", "lxc": "container"}[it["type"]]
		lists[fmt.Sprintf("nodes/%s/%s/%s/firewall/rules", pve.PathEscape(it["node"]), it["type"], it["vmid"])] = noun + " " + it["vmid"] + "'s rules"
	}
	var users []string
	for path, who := range lists {
		var rules []map[string]any
		if err := c.Get(ctx, path, nil, &rules); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		for _, r := range rules {
			if it := stringValues(r); it["type"] == "group" && strings.EqualFold(it["action"], group) {
				users = append(users, who)
				break
			}
		}
	}
	sort.Strings(users)
	return users, nil
}
