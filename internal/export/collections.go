package export

import (
	"context"
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// collectionExport is how export writes a cluster-wide kind: item writes
// one listed item of a collection (read with the engine's own listing),
// or says why none is written; whole writes a kind that is one object
// (the cluster firewall).
type collectionExport struct {
	item  func(it engine.CollectionItem, guestNames map[int]string) (Exported, error)
	whole func(ctx context.Context, eng *engine.Engine) (Exported, error)
}

// collectionExports has a row per cluster-wide kind export writes (the
// firewall's aliases, IP sets, security groups and cluster rules, storage
// definitions, backup jobs: backupjob.go, HA rules: ha.go). One item
// proxmops does not own is annotated proxmops.dev/adopt: "true"; one whose
// name no manifest can keep is refused.
var collectionExports = map[manifest.Kind]collectionExport{
	manifest.KindClusterFirewall: {whole: exportClusterFirewall},
	manifest.KindBackupJob:       {item: backupJobExport},
	manifest.KindStorage:         {item: exportStorage},
	manifest.KindFirewallAlias: {item: func(it engine.CollectionItem, _ map[int]string) (Exported, error) {
		name, err := firewallItemName(manifest.KindFirewallAlias, it, manifest.ValidFirewallName)
		if err != nil {
			return Exported{}, err
		}
		ex, o := adoptableItem(manifest.KindFirewallAlias, name, it, markNote)
		ex.File = "alias-" + name + ".yaml"
		ex.Resource = &manifest.FirewallAlias{Object: o, Spec: manifest.FirewallAliasSpec{CIDR: it.Values["cidr"], Comment: it.Comment}}
		return ex, nil
	}},
	manifest.KindFirewallIPSet: {item: func(it engine.CollectionItem, _ map[int]string) (Exported, error) {
		name, err := firewallItemName(manifest.KindFirewallIPSet, it, manifest.ValidFirewallName)
		if err != nil {
			return Exported{}, err
		}
		ex, o := adoptableItem(manifest.KindFirewallIPSet, name, it, markNote)
		s := manifest.FirewallIPSetSpec{Comment: it.Comment}
		for _, en := range it.Entries {
			s.Entries = append(s.Entries, manifest.FirewallIPSetEntry{CIDR: en["cidr"], Comment: en["comment"], Nomatch: pvefields.ParseBool(en["nomatch"])})
		}
		ex.File = "ipset-" + name + ".yaml"
		ex.Resource = &manifest.FirewallIPSet{Object: o, Spec: s}
		return ex, nil
	}},
	manifest.KindFirewallGroup: {item: func(it engine.CollectionItem, _ map[int]string) (Exported, error) {
		name, err := firewallItemName(manifest.KindFirewallGroup, it, func(n string) bool {
			return manifest.ValidFirewallName(n) && manifest.ValidFirewallGroupName(n)
		})
		if err != nil {
			return Exported{}, err
		}
		ex, o := adoptableItem(manifest.KindFirewallGroup, name, it, markNote)
		ex.File = "group-" + name + ".yaml"
		ex.Resource = &manifest.FirewallGroup{Object: o, Spec: manifest.FirewallGroupSpec{Comment: it.Comment, Rules: exportRules(it.Entries)}}
		return ex, nil
	}},
	manifest.KindHARule: {item: func(it engine.CollectionItem, guestNames map[int]string) (Exported, error) {
		// Proxmox keeps a rule ID's case: only a lower-case one is a name.
		name, err := firewallItemName(manifest.KindHARule, it, func(n string) bool { return manifest.ValidFirewallName(n) && n == it.Name })
		if err != nil {
			return Exported{}, err
		}
		ex, o := adoptableItem(manifest.KindHARule, name, it, markNote)
		r, why := exportHARule(it, guestNames)
		if r == nil {
			return Exported{}, fmt.Errorf("%s %s: %s", manifest.KindHARule, it.Name, why)
		}
		r.Object = o
		ex.File, ex.Resource = "rule-"+name+".yaml", r
		return ex, nil
	}},
}

// exportCollections writes the cluster-wide kinds asked for, each by its
// row of collectionExports.
func exportCollections(ctx context.Context, eng *engine.Engine, kinds []manifest.Kind, guestNames map[int]string) (out []Exported, refused []string, err error) {
	for _, k := range kinds {
		row, ok := collectionExports[k]
		if !ok {
			continue
		}
		if row.whole != nil {
			ex, err := row.whole(ctx, eng)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, ex)
			continue
		}
		items, err := eng.ReadCollection(ctx, string(k))
		if err != nil {
			return nil, nil, err
		}
		for _, it := range items {
			ex, err := row.item(it, guestNames)
			if err != nil {
				refused = append(refused, err.Error())
				continue
			}
			out = append(out, ex)
		}
	}
	return out, refused, nil
}

// markNote says how an item made by hand is adopted: its comment marked.
const markNote = "proxmops did not make this object: the first sync adopts it (marks its comment " + engine.OwnerMark + ")"

// notAName refuses an item whose name no manifest can keep.
func notAName(k manifest.Kind, it engine.CollectionItem) error {
	return fmt.Errorf("%s %s: not a manifest name (lower-case letters, digits and '-', starting with a letter)", k, it.Name)
}

// firewallItemName is an item's manifest name, its key in lower case, when
// valid says it is one.
func firewallItemName(k manifest.Kind, it engine.CollectionItem, valid func(string) bool) (string, error) {
	name := strings.ToLower(it.Name)
	if !valid(name) {
		return "", notAName(k, it)
	}
	return name, nil
}

// adoptableItem is the start of an item's export: its folder, and its
// metadata annotated for adoption with adoptNote when proxmops did not
// make it.
func adoptableItem(k manifest.Kind, name string, it engine.CollectionItem, adoptNote string) (Exported, manifest.Object) {
	m := manifest.Metadata{Name: name}
	ex := Exported{Dir: k.Info().Folder}
	if !it.Owned {
		m.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
		ex.Notes = []string{adoptNote}
	}
	return ex, manifest.Object{Metadata: m}
}

// exportRules are listed rules (Proxmox's read-back form, in order) as
// manifest rules.
func exportRules(listed []map[string]string) []manifest.FirewallRule {
	var out []manifest.FirewallRule
	for _, f := range listed {
		out = append(out, engine.RuleAsDeclared(f))
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
