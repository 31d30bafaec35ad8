package engine

import (
	"slices"
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

// The registry's rows take the kind table's order whatever order they are
// written in; a kind without a row, or with two, stops the start.
func TestRegistryRowsTakeTheKindTableOrder(t *testing.T) {
	reversed := slices.Clone(kinds)
	slices.Reverse(reversed)
	if got := inKindOrder(reversed); !slices.EqualFunc(got, kinds, func(a, b kindRow) bool { return a.kind == b.kind }) {
		t.Errorf("reversed rows sorted into %v", rowKinds(got))
	}
	for name, rows := range map[string][]kindRow{
		"a kind without a row": slices.Clone(kinds[1:]),
		"a kind with two rows": append(slices.Clone(kinds[1:]), kinds[2]),
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			inKindOrder(rows)
		}()
	}
}

func rowKinds(rows []kindRow) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.kind)
	}
	return out
}
