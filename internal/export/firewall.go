package export

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// exportCollections writes the cluster-wide collections asked for (the
// firewall's aliases, IP sets and security groups, backup jobs:
// backupjob.go), read with the engine's own listing.
// One proxmops does not own is annotated proxmops.dev/adopt: "true"; one
// whose name no manifest can keep is refused.
func exportCollections(ctx context.Context, eng *engine.Engine, kinds []manifest.Kind, guestNames map[int]string) (out []Exported, refused []string, err error) {
	for _, k := range kinds {
		if k == manifest.KindClusterFirewall {
			ex, err := exportClusterFirewall(ctx, eng)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ex)
			continue
		}
		if !engine.IsCollection(string(k)) {
			continue
		}
		items, err := eng.ReadCollection(ctx, string(k))
		if err != nil {
			return nil, nil, err
		}
		for _, it := range items {
			if k == manifest.KindBackupJob {
				ex, err := backupJobExport(it, guestNames)
				if err != nil {
					refused = append(refused, err.Error())
					continue
				}
				out = append(out, ex)
				continue
			}
			name := strings.ToLower(it.Name)
			if k == manifest.KindStorage {
				name = it.Name
				if !manifest.ValidStorageName(name) {
					refused = append(refused, fmt.Sprintf("%s %s: not a manifest name (lower-case letters, digits and '-', starting with a letter)", k, it.Name))
					continue
				}
				if _, ok := manifest.StorageTypeFields[it.Values["type"]]; !ok {
					refused = append(refused, fmt.Sprintf("%s %s: type %s is not one a Storage manifest declares (dir, nfs, cifs, pbs, lvmthin, zfspool)", k, it.Name, it.Values["type"]))
					continue
				}
			} else if !manifest.ValidFirewallName(name) || k == manifest.KindHARule && name != it.Name || (k == manifest.KindFirewallGroup && !manifest.ValidFirewallGroupName(name)) {
				refused = append(refused, fmt.Sprintf("%s %s: not a manifest name (lower-case letters, digits and '-', starting with a letter)", k, it.Name))
				continue
			}
			m := manifest.Metadata{Name: name}
			var notes []string
			if !it.Owned {
				m.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
				notes = append(notes, "proxmops did not make this object: the first sync adopts it (marks its comment "+engine.OwnerMark+")")
			}
			ex := Exported{Dir: k.Info().Folder, Notes: notes}
			switch k {
			case manifest.KindStorage:
				if !it.Owned {
					ex.Notes = []string{"proxmops has no record of this storage: the first sync adopts it (records it in proxmops' store)"}
				}
				s, more := storageSpec(name, it.Values)
				ex.Notes = append(ex.Notes, more...)
				ex.File = name + ".yaml"
				ex.Resource = &manifest.Storage{Object: manifest.Object{Metadata: m}, Spec: s}
			case manifest.KindFirewallAlias:
				ex.File = "alias-" + name + ".yaml"
				ex.Resource = &manifest.FirewallAlias{Object: manifest.Object{Metadata: m},
					Spec: manifest.FirewallAliasSpec{CIDR: it.Values["cidr"], Comment: it.Comment}}
			case manifest.KindFirewallIPSet:
				s := manifest.FirewallIPSetSpec{Comment: it.Comment}
				for _, en := range it.Entries {
					s.Entries = append(s.Entries, manifest.FirewallIPSetEntry{CIDR: en["cidr"], Comment: en["comment"], Nomatch: pvefields.ParseBool(en["nomatch"])})
				}
				ex.File = "ipset-" + name + ".yaml"
				ex.Resource = &manifest.FirewallIPSet{Object: manifest.Object{Metadata: m}, Spec: s}
			case manifest.KindHARule:
				r, why := exportHARule(it, guestNames)
				if r == nil {
					refused = append(refused, fmt.Sprintf("%s %s: %s", k, it.Name, why))
					continue
				}
				r.Metadata = m
				ex.File, ex.Resource = "rule-"+name+".yaml", r
			case manifest.KindFirewallGroup:
				ex.File = "group-" + name + ".yaml"
				ex.Resource = &manifest.FirewallGroup{Object: manifest.Object{Metadata: m},
					Spec: manifest.FirewallGroupSpec{Comment: it.Comment, Rules: exportRules(it.Entries)}}
			}
			out = append(out, ex)
		}
	}
	return out, refused, nil
}

// exportRules are listed rules (Proxmox's read-back form, in order) as
// manifest rules.
func exportRules(listed []map[string]string) []manifest.FirewallRule {
	var out []manifest.FirewallRule
	for _, f := range listed {
		r := manifest.FirewallRule{Type: f["type"], Action: f["action"], Macro: f["macro"], Proto: f["proto"], Dport: f["dport"],
			Sport: f["sport"], Source: f["source"], Dest: f["dest"], Iface: f["iface"], Log: f["log"], Comment: f["comment"], ICMPType: f["icmp-type"]}
		if f["enable"] == "0" {
			off := false
			r.Enable = &off
		}
		out = append(out, r)
	}
	return out
}

// exportClusterFirewall writes the options Proxmox holds and proxmops'
// own rules of the cluster's list (the others stay people's).
func exportClusterFirewall(ctx context.Context, eng *engine.Engine) (Exported, error) {
	st, err := eng.ReadClusterFirewall(ctx)
	if err != nil {
		return Exported{}, err
	}
	spec := manifest.ClusterFirewallSpec{PolicyIn: st.Options["policy_in"], PolicyOut: st.Options["policy_out"], Rules: exportRules(st.Rules)}
	if v, ok := st.Options["enable"]; ok {
		on := v != "0" && v != ""
		spec.Enabled = &on
	}
	var notes []string
	if st.OtherRules > 0 {
		notes = append(notes, fmt.Sprintf("the cluster's list has %d more rules proxmops did not make: they stay as they are, and are not in spec.rules", st.OtherRules))
	}
	return Exported{Dir: "firewall", File: "cluster.yaml", Notes: notes, Resource: &manifest.ClusterFirewall{
		Object: manifest.Object{Metadata: manifest.Metadata{Name: manifest.ClusterFirewallName}}, Spec: spec}}, nil
}
