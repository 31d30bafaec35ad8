package export

import (
	"fmt"
	"maps"
	"slices"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
)

// exportPools writes a Pool manifest per resource pool whose ID is a
// manifest name (a lower-case DNS label starting with a letter); one
// proxmops does not own carries proxmops.dev/adopt: "true", whose first
// sync marks its comment. Nested pools ("a/b") and other IDs are skipped
// with the reason: guests may still name them in spec.pool.
func (es *cluster) exportPools() (out []Exported, skipped []string) {
	for _, id := range slices.Sorted(maps.Keys(es.Pools)) {
		if id == "" || dnsLabel(id) != id || id[0] < 'a' || id[0] > 'z' {
			skipped = append(skipped, fmt.Sprintf("pool %s: its ID is not a manifest name (a lower-case DNS label starting with a letter); guests can still name it in spec.pool", id))
			continue
		}
		owned, comment := engine.ParseOwned(es.Pools[id])
		meta := manifest.Metadata{Name: id}
		var notes []string
		if !owned {
			meta.Annotations = map[string]string{manifest.AnnotationAdopt: "true"}
			notes = append(notes, "proxmops does not own this pool: the first sync adopts it by adding "+engine.OwnerMark+" to its comment")
		}
		out = append(out, Exported{Dir: "pools", File: id + ".yaml", Notes: notes,
			Resource: &manifest.Pool{Object: manifest.Object{Metadata: meta}, Spec: manifest.PoolSpec{Comment: comment}}})
	}
	return out, skipped
}
