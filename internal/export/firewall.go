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
// firewall's aliases and IP sets, backup jobs: backupjob.go), read with
// the engine's own listing.
// One proxmops does not own is annotated proxmops.dev/adopt: "true"; one
// whose name no manifest can keep is refused.
func exportCollections(ctx context.Context, eng *engine.Engine, kinds []manifest.Kind, guestNames map[int]string) (out []Exported, refused []string, err error) {
	for _, k := range kinds {
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
			} else if !manifest.ValidFirewallName(name) || k == manifest.KindHARule && name != it.Name {
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
			}
			out = append(out, ex)
		}
	}
	return out, refused, nil
}
