package controller

import (
	"testing"

	"github.com/proxmops/proxmops/internal/vocab"
)

// A done action's history entry names what it changed, and says that what
// the plan only listed (creation-only keys, a disk grown since adoption)
// stays as it is on the cluster.
func TestDoneEntryTellsAppliedChangesFromListedOnes(t *testing.T) {
	cores := vocab.Change{Field: "cores", Path: "spec.cores", From: "2", To: "4"}
	format := vocab.Change{Field: "scsi0.format", From: "qcow2", To: "raw", Hold: vocab.HoldCreationOnly}
	grown := vocab.Change{Field: "scsi0.size", From: "8G", To: "4G", Hold: vocab.HoldGrownSinceAdoption}
	for _, tc := range []struct {
		name    string
		changes []vocab.Change
		want    string
	}{
		{"nothing listed", nil, ""},
		{"only applied changes", []vocab.Change{cores}, ": cores: 2 -> 4"},
		{"applied and creation-only", []vocab.Change{cores, format},
			": cores: 2 -> 4; left as they are on the cluster: scsi0.format (creation-only): qcow2 -> raw"},
		{"only a disk grown since adoption", []vocab.Change{grown},
			"; left as they are on the cluster: scsi0.size (grown since adoption): 8G -> 4G"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := appliedChanges(tc.changes); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
