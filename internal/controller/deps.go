package controller

import (
	"cmp"
	"slices"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
)

// dependenciesOf lists what a desired resource needs among the declared
// resources: the edges of the UI's dependency graph. The manifest loader has
// resolved each reference against the set (manifest.Set), so a reference to
// something only on the cluster (an existing template, a volume ID, vmbr0)
// is External and gives no edge: the graph shows only declared resources.
// A resource only on the cluster (desired nil) needs nothing.
func dependenciesOf(desired manifest.Resource) []api.Dependency {
	if desired == nil {
		return nil
	}
	var out []api.Dependency
	seen := map[api.Dependency]bool{}
	for _, ref := range desired.References() {
		if ref.External {
			continue
		}
		d := api.Dependency{Kind: string(ref.Kind), Name: ref.Name, Relation: relationTo(ref.Kind)}
		if d.Kind == string(desired.Kind()) && d.Name == desired.Name() || seen[d] {
			continue
		}
		seen[d] = true
		out = append(out, d)
	}
	// What it is made from first, then what it attaches to; by name within.
	slices.SortStableFunc(out, func(a, b api.Dependency) int {
		if c := cmp.Compare(slices.Index(api.Relations, a.Relation), slices.Index(api.Relations, b.Relation)); c != 0 {
			return c
		}
		return cmp.Compare(a.Kind+"/"+a.Name, b.Kind+"/"+b.Name)
	})
	return out
}

// relationTo names how a resource needs one of the given kind.
func relationTo(k manifest.Kind) api.Relation {
	switch k {
	case manifest.KindTemplate:
		return api.RelationClones
	case manifest.KindIso:
		return api.RelationMounts
	case manifest.KindContainerTemplate:
		return api.RelationBuilt
	case manifest.KindSdnZone:
		return api.RelationZone
	}
	return api.RelationUses
}
