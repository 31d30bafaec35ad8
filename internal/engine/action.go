package engine

import (
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Action is the plan for one resource. Every resource of the pass gets one,
// in sync or not; Action is ActionNone when nothing is to be done.
//
// Its state is data read through named predicates, never open-coded: Acts
// (it has a step to carry out), Refused (the plan foresaw its failure: no
// step, never applied), Conflicted (status Conflict: something proxmops
// does not own is in the way), Runnable (Apply would execute it) and
// Settled (nothing to do or to report).
type Action struct {
	Kind        string
	Name        string
	Node        string
	VMID        int
	Action      vocab.Action
	Reason      string
	Changes     []vocab.Change
	NeedsReboot bool
	BlockedBy   string
	// Waiting, when set, holds the action this pass: it creates or starts
	// the resource, and a resource its metadata.dependsOn names is not in
	// sync and healthy yet (waits.go).
	Waiting *Wait
	// Adopt: the action takes ownership of a guest proxmops did not make
	// (adopt.go): it tags it, and applies the changes listed with it.
	Adopt bool
	// HA is the guest's HA resource id ("vm:100") when the HA stack
	// manages it: its power changes go through the HA stack.
	HA string
	// ManifestNode is the node metadata.node names when the guest is on
	// another one (Node): moved by HA or a migration. proxmops leaves it
	// where it is and acts on it there; "" when it is where declared.
	ManifestNode string

	// Status is the resource's status as planned (before any apply).
	Status vocab.Status
	// Health says how the thing on the cluster is doing, apart from
	// whether it matches the manifest.
	Health vocab.Health
	// Owned says whether proxmops owns what exists on the cluster (false
	// when nothing exists yet).
	Owned bool
	// Sync is the resource's sync policy; manual actions are planned but not
	// applied.
	Sync vocab.SyncPolicy
	// File is the manifest the resource came from ("" for a resource only on
	// the cluster).
	File string
	// DependsOn lists keys ("Kind/name") of actions that must succeed first.
	DependsOn []string
	// Observed is a summary of what the cluster has (config keys, status),
	// nil when nothing exists.
	Observed map[string]any

	run   stepFunc
	claim claim
	// refused is the plan's outcome when it foresaw the resource's failure
	// (refuse): Failed with the reason, no step, never applied.
	refused bool
	// snapshot is taken before the action changes the guest
	// (spec.snapshots.beforeChange; guestsnapshot.go).
	snapshot *snapshotStep
	// tagOnly, for an adopting action, only adds the ownership tag;
	// adoptRecord, run before the action, records the disk sizes.
	tagOnly, adoptRecord stepFunc
	// acceptAsIs: an adopted or adopting guest, so creation-only
	// differences and shrinks down to accepted's sizes are noted, never
	// planned (adopt.go); accepted is nil when the adoption was not
	// recorded. adoptReason opens an adopting action's reason,
	// adoptedBefore says it completes an older adoption.
	acceptAsIs    bool
	accepted      *AdoptionRecord
	adoptReason   string
	adoptedBefore bool
	// sdnSeq is the action's place (from 1) in its pass's SDN sequence, 0
	// for an action outside it.
	sdnSeq int
	// sdnDefer: the action never applies the SDN configuration itself (a
	// vnet deletion whose zone's deletion follows).
	sdnDefer bool
	// sdnPending: an SDN object of proxmops whose only difference is a
	// pending change not applied yet.
	sdnPending  bool
	wantRunning bool
	// paths maps the fields of the resource's manifest to their paths, to
	// fill Change.Path.
	paths *pvefields.Paths
	// declaredNode is the manifest's metadata.node ("" when it names none).
	declaredNode string
}

// Key is "Kind/name".
func (a *Action) Key() string { return vocab.Key(a.Kind, a.Name) }

// Acts reports whether the action has something to do and a step that
// does it (whatever its sync policy or dependencies).
func (a *Action) Acts() bool { return a.Action != vocab.ActionNone && a.run != nil }

// Refused reports an action the plan foresaw failing (a refusal found in
// the cluster's state, a node or a privilege missing): it has something to
// do but no step, is Failed with the reason, and is never applied.
func (a *Action) Refused() bool { return a.refused && a.Action != vocab.ActionNone }

// refuse is the one place a plan fails a resource: Failed with reason, its
// step dropped, never applied (Refused when it had something to do).
func (a *Action) refuse(reason string) {
	a.Status, a.Reason, a.run, a.refused = vocab.StatusFailed, reason, nil, true
}

// failedPlanning reports a resource whose plan failed (refuse): refused,
// or nothing it could plan; what depends on it is blocked.
func (a *Action) failedPlanning() bool { return a.refused }

// Conflicted reports a resource something proxmops does not own is in the
// way of: status Conflict, left untouched (conflict).
func (a *Action) Conflicted() bool { return a.Status == vocab.StatusConflict }

// Runnable reports whether Apply would execute this action.
func (a *Action) Runnable() bool { return a.Acts() && a.proceeds() }

// proceeds reports an action with something to do that nothing holds
// back: sync auto, not blocked by another, not waiting. Once it has its
// step it is Runnable.
func (a *Action) proceeds() bool {
	return a.Action != vocab.ActionNone && a.Sync == vocab.SyncAuto && a.BlockedBy == "" && a.Waiting == nil
}

// drifted reports a resource the plan reports out of sync with nothing to
// do this pass (a change Proxmox holds until a restart, an orphan kept
// because prune is off), its sync not disabled.
func (a *Action) drifted() bool {
	return a.Action == vocab.ActionNone && a.Status == vocab.StatusOutOfSync && a.Sync != vocab.SyncDisabled
}

// Settled reports a resource with nothing to do and nothing to report: in
// sync, or not evaluated because its sync is disabled by choice.
func (a *Action) Settled() bool {
	return a.Action == vocab.ActionNone && (StatusOf(a) == vocab.StatusSynced || a.Sync == vocab.SyncDisabled)
}
