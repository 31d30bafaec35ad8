package engine

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Every kind of the registry has a reconciler, or is planned by another
// row's (SDN vnets with their zones); manifests' kinds are all in it, in
// the manifests' order.
func TestRegistryCoversTheManifestKinds(t *testing.T) {
	var names []string
	for _, row := range kinds {
		names = append(names, row.kind)
		if row.desired == nil {
			t.Errorf("%s: no conversion from manifests", row.kind)
		}
		if row.reconciler == nil && row.kind != KindSdnVnet {
			t.Errorf("%s: no reconciler", row.kind)
		}
	}
	var want []string
	for _, k := range manifest.Kinds() {
		want = append(want, string(k))
	}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Fatalf("registry kinds %v, manifest kinds %v", names, want)
	}
}
