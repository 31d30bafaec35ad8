package pvesim

import "testing"

func TestRemoveSnapshotRelinksToParent(t *testing.T) {
	chain := func() *Guest {
		return &Guest{VMID: 100, Conf: map[string]string{"parent": "c"}, Snapshots: map[string]*Snapshot{
			"a": {Name: "a"}, "b": {Name: "b", Parent: "a"}, "c": {Name: "c", Parent: "b"},
		}}
	}
	tests := []struct {
		remove      string
		wantParents map[string]string // snapshot -> parent after removal
		wantCurrent string            // the state's parent ("" = none)
	}{
		{"b", map[string]string{"a": "", "c": "a"}, "c"},
		{"c", map[string]string{"a": "", "b": "a"}, "b"},
		{"a", map[string]string{"b": "", "c": "b"}, "c"},
	}
	for _, tt := range tests {
		t.Run(tt.remove, func(t *testing.T) {
			g := chain()
			removeSnapshot(g, g.Snapshots[tt.remove])
			if _, still := g.Snapshots[tt.remove]; still || len(g.Snapshots) != 2 {
				t.Fatalf("snapshots after removing %s: %v", tt.remove, g.Snapshots)
			}
			for name, parent := range tt.wantParents {
				if got := g.Snapshots[name].Parent; got != parent {
					t.Errorf("%s's parent = %q, want %q", name, got, parent)
				}
			}
			if got := g.Conf["parent"]; got != tt.wantCurrent {
				t.Errorf("current parent = %q, want %q", got, tt.wantCurrent)
			}
		})
	}
	// Removing the only snapshot leaves the state without a parent.
	g := &Guest{VMID: 100, Conf: map[string]string{"parent": "only"}, Snapshots: map[string]*Snapshot{"only": {Name: "only"}}}
	removeSnapshot(g, g.Snapshots["only"])
	if _, ok := g.Conf["parent"]; ok || len(g.Snapshots) != 0 {
		t.Fatalf("conf %v snapshots %v", g.Conf, g.Snapshots)
	}
}
