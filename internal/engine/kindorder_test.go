package engine

import (
	"slices"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

// The registry plans kinds in the kind table's order (manifest.KindTable),
// so the order is said once.
func TestRegistryPlansKindsInTheKindTableOrder(t *testing.T) {
	var got []manifest.Kind
	for _, row := range kinds {
		if _, ok := manifest.Info(manifest.Kind(row.kind)); ok {
			got = append(got, manifest.Kind(row.kind))
		}
	}
	if want := manifest.Kinds(); !slices.Equal(got, want) {
		t.Errorf("registry order %v, kind table %v", got, want)
	}
}
