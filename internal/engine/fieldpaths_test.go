package engine

import "testing"

// Every key the engine manages has its manifest field in FieldPaths, so the
// drawer never shows a managed value apart from its manifest row.
func TestFieldPathsNameEveryManagedKey(t *testing.T) {
	for _, tc := range []struct {
		kind string
		keys []string
	}{
		{KindNetwork, append([]string{"type", "iface", "comments"}, keysOf(netPaths)...)},
		{KindSdnZone, append([]string{"type", "zone"}, keysOf(zoneReaders)...)},
		{KindSdnVnet, append([]string{"zone", "alias", "vnet"}, vnetOptionKeys...)},
	} {
		paths := FieldPaths(tc.kind)
		for _, k := range tc.keys {
			if paths[k] == "" {
				t.Errorf("%s: FieldPaths has no manifest field for %s", tc.kind, k)
			}
		}
	}
	if p := FieldPaths(KindVirtualMachine); p != nil {
		t.Errorf("a guest's keys are its manifest's, got %v", p)
	}
	// A copy: the caller may not change the engine's table.
	FieldPaths(KindNetwork)["mtu"] = "x"
	if netPaths["mtu"] != "spec.mtu" {
		t.Fatal("FieldPaths handed out the engine's own table")
	}
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
