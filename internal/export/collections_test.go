package export

import (
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
)

// Every collection the engine reconciles is exported by its row: a kind
// left out would be silently missing from an export.
func TestEveryCollectionKindHasAnExportRow(t *testing.T) {
	for _, k := range manifest.Kinds() {
		if engine.IsCollection(string(k)) && collectionExports[k].item == nil {
			t.Errorf("%s is a collection with no export row", k)
		}
	}
}
