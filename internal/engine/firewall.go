package engine

import (
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
)

// The cluster firewall's aliases and IP sets (pve-firewall
// API2/Firewall/Aliases.pm and IPSet.pm, ClusterAliases and ClusterIPSetList):
// two rows of the collections table (collection.go). Both need Sys.Audit
// on / to be read and Sys.Modify on / to be changed.

const (
	KindFirewallAlias = string(manifest.KindFirewallAlias)
	KindFirewallIPSet = string(manifest.KindFirewallIPSet)
)

// FirewallAliasSpec is a desired cluster alias.
type FirewallAliasSpec struct {
	Meta
	CIDR    string
	Comment string
}

func firewallAliasFromManifest(a *manifest.FirewallAlias, _ SecretReader) *FirewallAliasSpec {
	return &FirewallAliasSpec{Meta: metaOf(a), CIDR: a.Spec.CIDR, Comment: strings.TrimSpace(a.Spec.Comment)}
}

// FirewallIPSetSpec is a desired cluster IP set with its entries.
type FirewallIPSetSpec struct {
	Meta
	Comment string
	Entries []FirewallIPSetEntry
}

// FirewallIPSetEntry is one entry, its CIDR as declared.
type FirewallIPSetEntry struct {
	CIDR    string
	Comment string
	Nomatch bool
}

func firewallIPSetFromManifest(s *manifest.FirewallIPSet, _ SecretReader) *FirewallIPSetSpec {
	out := &FirewallIPSetSpec{Meta: metaOf(s), Comment: strings.TrimSpace(s.Spec.Comment)}
	for _, e := range s.Spec.Entries {
		out.Entries = append(out.Entries, FirewallIPSetEntry{CIDR: e.CIDR, Comment: strings.TrimSpace(e.Comment), Nomatch: e.Nomatch})
	}
	return out
}

const fwBase = "cluster/firewall"

var firewallAliases = &collection{
	kind: KindFirewallAlias, noun: "alias", plural: "firewall aliases", list: fwBase + "/aliases", key: "name", fold: true,
	privPath: "/", read: "Sys.Audit", write: "Sys.Modify",
	fields: func(sp Spec) []collField {
		// parse_alias reads a host prefix back without it; the host bits stay.
		return []collField{{key: "cidr", path: "spec.cidr", want: manifest.FirewallAliasCIDR(sp.(*FirewallAliasSpec).CIDR),
			same: func(have, want string) bool { return manifest.FirewallAliasCIDR(have) == want }}}
	},
	comment: func(sp Spec) string { return sp.(*FirewallAliasSpec).Comment },
	create: func(sp Spec, marked string) collReq {
		s := sp.(*FirewallAliasSpec)
		return collReq{method: "POST", path: fwBase + "/aliases",
			params: pve.NewParams().Set("name", s.Name).Set("cidr", s.CIDR).Set("comment", marked)}
	},
	update: func(name string, sp Spec, marked string, have collItem) collReq {
		// update_alias replaces the alias: every field is sent.
		p := have.withDigest(pve.NewParams().Set("cidr", sp.(*FirewallAliasSpec).CIDR).Set("comment", marked))
		return collReq{method: "PUT", path: fwBase + "/aliases/" + pve.PathEscape(name), params: p}
	},
	remove: func(name string) collReq {
		return collReq{method: "DELETE", path: fwBase + "/aliases/" + pve.PathEscape(name)}
	},
}

var firewallIPSets = &collection{
	kind: KindFirewallIPSet, noun: "IP set", plural: "firewall IP sets", list: fwBase + "/ipset", key: "name", fold: true,
	privPath: "/", read: "Sys.Audit", write: "Sys.Modify",
	fields:  func(Spec) []collField { return nil },
	comment: func(sp Spec) string { return sp.(*FirewallIPSetSpec).Comment },
	create: func(sp Spec, marked string) collReq {
		return collReq{method: "POST", path: fwBase + "/ipset",
			params: pve.NewParams().Set("name", sp.meta().Name).Set("comment", marked)}
	},
	update: func(name string, _ Spec, marked string, have collItem) collReq {
		// create_ipset with rename = name changes only the comment.
		return recomment(fwBase+"/ipset", "name", name, marked, have)
	},
	remove: func(name string) collReq {
		// Owned entries go with their set (delete_ipset refuses a non-empty
		// set without force).
		return collReq{method: "DELETE", path: fwBase + "/ipset/" + pve.PathEscape(name), params: pve.NewParams().Set("force", "1")}
	},
	entries: &collEntries{
		key: "cidr", fields: []string{"nomatch", "comment"},
		path: func(name string) string { return fwBase + "/ipset/" + pve.PathEscape(name) },
		want: func(sp Spec) []collEntry {
			var out []collEntry
			for i, e := range sp.(*FirewallIPSetSpec).Entries {
				v := map[string]string{"comment": e.Comment}
				if e.Nomatch {
					v["nomatch"] = "1"
				}
				out = append(out, collEntry{key: manifest.FirewallEntryCIDR(e.CIDR), values: v, path: indexPath("spec.entries", i)})
			}
			return out
		},
	},
	// The declared aliases its entries name.
	dependsOn: func(_ *Desired, sp Spec) []string { return sp.meta().needs(KindFirewallAlias) },
}

// indexPath is "list[i]".
func indexPath(list string, i int) string { return list + "[" + strconv.Itoa(i) + "]" }
