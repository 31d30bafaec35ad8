package engine

import (
	"context"
	"testing"

	"github.com/proxmops/proxmops/internal/vocab"
)

// An action's state is read through its predicates: each case is one state
// a plan produces, and what Apply, the summary and the controller make of it.
func TestActionStatePredicates(t *testing.T) {
	step := func(context.Context, *execCtx) error { return nil }
	// refused makes a Refused through refuse, the one place a plan fails a resource.
	refused := func(a Action) Action { a.refuse("storage 'nope' does not exist"); return a }
	tests := []struct {
		name                                         string
		a                                            Action
		acts, refused, conflicted, runnable, settled bool
	}{
		{"in sync", Action{Action: vocab.ActionNone, Status: vocab.StatusSynced, Sync: vocab.SyncAuto}, false, false, false, false, true},
		{"an update", Action{Action: vocab.ActionUpdate, Status: vocab.StatusOutOfSync, Sync: vocab.SyncAuto, run: step}, true, false, false, true, false},
		{"an update waiting for a manual sync", Action{Action: vocab.ActionUpdate, Status: vocab.StatusOutOfSync, Sync: vocab.SyncManual, run: step}, true, false, false, false, false},
		{"a blocked update", Action{Action: vocab.ActionUpdate, Status: vocab.StatusOutOfSync, Sync: vocab.SyncAuto, BlockedBy: "Iso/x", run: step}, true, false, false, false, false},
		{"a refused create", Action{Action: vocab.ActionCreate, Status: vocab.StatusFailed, Sync: vocab.SyncAuto, refused: true}, false, true, false, false, false},
		{"a create refused by the plan", refused(Action{Action: vocab.ActionCreate, Status: vocab.StatusOutOfSync, Sync: vocab.SyncAuto, run: step}), false, true, false, false, false},
		{"a create whose step is not made yet", Action{Action: vocab.ActionCreate, Status: vocab.StatusOutOfSync, Sync: vocab.SyncAuto}, false, false, false, false, false},
		{"a conflict", Action{Action: vocab.ActionNone, Status: vocab.StatusConflict, Sync: vocab.SyncAuto}, false, false, true, false, false},
		{"sync disabled", Action{Action: vocab.ActionNone, Status: vocab.StatusUnknown, Sync: vocab.SyncDisabled}, false, false, false, false, true},
		{"pending until a reboot", Action{Action: vocab.ActionNone, Status: vocab.StatusOutOfSync, Sync: vocab.SyncAuto, NeedsReboot: true}, false, false, false, false, false},
	}
	for _, tt := range tests {
		a := tt.a
		got := [5]bool{a.Acts(), a.Refused(), a.Conflicted(), a.Runnable(), a.Settled()}
		if want := [5]bool{tt.acts, tt.refused, tt.conflicted, tt.runnable, tt.settled}; got != want {
			t.Errorf("%s: acts, refused, conflicted, runnable, settled = %v, want %v", tt.name, got, want)
		}
		if p := (&Plan{Actions: []*Action{&a}}); p.HasChanges() == tt.settled {
			t.Errorf("%s: HasChanges %v, settled %v", tt.name, p.HasChanges(), tt.settled)
		}
	}
}
