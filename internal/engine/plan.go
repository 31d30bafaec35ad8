package engine

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/api"
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
	// snapshot is taken before the action changes the guest
	// (spec.snapshots.beforeChange; snapshot.go).
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
	paths *fieldPaths
	// declaredNode is the manifest's metadata.node ("" when it names none).
	declaredNode string
}

// Key is "Kind/name".
func (a *Action) Key() string { return a.Kind + "/" + a.Name }

// Acts reports whether the action has something to do and a step that
// does it (whatever its sync policy or dependencies).
func (a *Action) Acts() bool { return a.Action != vocab.ActionNone && a.run != nil }

// Refused reports an action the plan foresaw failing (a refusal found in
// the cluster's state, a node or a privilege missing): it has something to
// do but no step, is Failed with the reason, and is never applied.
func (a *Action) Refused() bool { return a.Action != vocab.ActionNone && a.run == nil }

// refuse makes a a foreseen failure: Failed with reason, its step dropped.
func (a *Action) refuse(reason string) {
	a.Status, a.Reason, a.run = vocab.StatusFailed, reason, nil
}

// failedPlanning reports a resource whose plan failed: Failed without a
// step (refused, or nothing it could plan); what depends on it is blocked.
func (a *Action) failedPlanning() bool { return a.Status == vocab.StatusFailed && a.run == nil }

// Conflicted reports a resource something proxmops does not own is in the
// way of: status Conflict, left untouched (conflict).
func (a *Action) Conflicted() bool { return a.Status == vocab.StatusConflict }

// Runnable reports whether Apply would execute this action.
func (a *Action) Runnable() bool {
	return a.Acts() && a.Sync == vocab.SyncAuto && a.BlockedBy == ""
}

// Settled reports a resource with nothing to do and nothing to report: in
// sync, or not evaluated because its sync is disabled by choice.
func (a *Action) Settled() bool {
	return a.Action == vocab.ActionNone && (StatusOf(a) == vocab.StatusSynced || a.Sync == vocab.SyncDisabled)
}

// Summary is the plan document's summary (Summarize).
type Summary = api.PlanSummary

// Plan is the outcome of one observation and diff.
type Plan struct {
	Revision string
	Summary  Summary
	Actions  []*Action

	// Stats counts the API requests that observing took.
	Stats ObserveStats

	pass *passState
}

// HasChanges reports whether the cluster differs from the repository, or
// may: any resource not Synced (statuses counted by Summarize), except one
// whose sync is disabled by its annotation, which is Unknown by choice.
func (p *Plan) HasChanges() bool {
	for _, a := range p.Actions {
		if !a.Settled() {
			return true
		}
	}
	return false
}

// Find returns the action for kind/name, or nil.
func (p *Plan) Find(kind, name string) *Action {
	for _, a := range p.Actions {
		if a.Kind == kind && a.Name == name {
			return a
		}
	}
	return nil
}

// Document is the plan document of docs/api.md: the one document that
// `proxmops plan --output json` prints and GET /api/v1/plan answers.
func (p *Plan) Document() api.Plan {
	doc := api.Plan{Revision: p.Revision, Summary: p.Summary, Actions: make([]api.PlanAction, 0, len(p.Actions))}
	for _, a := range p.Actions {
		changes := a.Changes
		if changes == nil {
			changes = []vocab.Change{}
		}
		doc.Actions = append(doc.Actions, api.PlanAction{Kind: a.Kind, Name: a.Name, Node: a.Node, VMID: a.VMID,
			Action: a.Action, Reason: a.Reason, Changes: changes, NeedsReboot: a.NeedsReboot,
			BlockedBy: a.BlockedBy, Conflict: a.Conflicted(), HA: a.HA, ManifestNode: a.ManifestNode, Status: a.Status})
	}
	return doc
}

// JSON renders the plan document, indented for people.
func (p *Plan) JSON() ([]byte, error) {
	return json.MarshalIndent(p.Document(), "", "  ")
}

func (p *Plan) finish() {
	order := kindOrders()
	rank := func(kind string) int {
		if o, ok := order[kind]; ok {
			return o
		}
		return len(order) // kinds the registry does not hold come last
	}
	sort.SliceStable(p.Actions, func(i, j int) bool {
		a, b := p.Actions[i], p.Actions[j]
		oa, ob := rank(a.Kind), rank(b.Kind)
		if oa != ob {
			return oa < ob
		}
		if a.Kind != b.Kind {
			return a.Kind < b.Kind
		}
		return a.Name < b.Name
	})
	for _, a := range p.Actions {
		a.Status = StatusOf(a)
		a.Health = HealthOf(a)
		if note := MovedNote(a.Node, a.ManifestNode, a.Observed["status"] == "running"); note != "" && !a.Conflicted() && !strings.Contains(a.Reason, note) {
			a.Reason = joinReasons([]string{a.Reason, note})
		}
		if a.Changes == nil {
			a.Changes = []vocab.Change{}
		}
		for i := range a.Changes {
			if a.Changes[i].Path == "" {
				a.Changes[i].Path = a.paths.path(a.Changes[i].Field)
			}
		}
	}
	p.Summary = Summarize(p.Actions)
}

// joinReasons makes one sentence out of several reasons.
func joinReasons(rs []string) string {
	out := make([]string, 0, len(rs))
	seen := map[string]bool{}
	for _, r := range rs {
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return strings.Join(out, "; ")
}

// passState is shared by the actions of one plan while they run: volumes
// being fetched once for all, and the snapshot they were planned from.
type passState struct {
	snap    *Snapshot
	mu      sync.Mutex
	volumes map[string]*volumeOnce
}

type volumeOnce struct {
	once sync.Once
	err  error
}

// ensureOnce runs f once per key for the whole pass; later callers wait for
// the first and get its result.
func (ps *passState) ensureOnce(key string, f func() error) error {
	ps.mu.Lock()
	if ps.volumes == nil {
		ps.volumes = map[string]*volumeOnce{}
	}
	v, ok := ps.volumes[key]
	if !ok {
		v = &volumeOnce{}
		ps.volumes[key] = v
	}
	ps.mu.Unlock()
	v.once.Do(func() { v.err = f() })
	return v.err
}
