// Package vocab is proxmops's one vocabulary: the words a pass uses to say
// what it found and what it does (Status, Action, Health, SyncPolicy) and
// the shape of one difference (Change). The engine, the controller, the
// HTTP API, the CLI and the UI (web/src/api/types.ts, checked against this
// file by TestTypeScriptUnionsMatch) all speak these words; no other
// package declares them.
//
// Each type is a string whose value is its JSON word. The words are fixed
// by docs/api.md; Words lists them in the documented order and Valid, an
// exhaustive switch, is the one place that says which words exist. Decoding
// a word that is not in the vocabulary is an error (UnmarshalText; "" stays
// the zero value), so a typo in a stored record or a request never passes
// as a new state.
package vocab

import "fmt"

// Status is a resource's sync status: does the cluster match the manifest.
type Status string

// The statuses, in the order of docs/api.md.
const (
	StatusSynced      Status = "Synced"      // the cluster matches the manifest
	StatusOutOfSync   Status = "OutOfSync"   // it differs; an action would fix it
	StatusProgressing Status = "Progressing" // an action is queued or running
	StatusFailed      Status = "Failed"      // the last action or the plan failed
	StatusConflict    Status = "Conflict"    // something not owned by proxmops is in the way
	StatusUnknown     Status = "Unknown"     // not evaluated (not read, sync disabled)
)

// Statuses lists every status in documented order.
var Statuses = []Status{StatusSynced, StatusOutOfSync, StatusProgressing, StatusFailed, StatusConflict, StatusUnknown}

// Valid reports whether s is a word of the vocabulary.
func (s Status) Valid() bool {
	switch s {
	case StatusSynced, StatusOutOfSync, StatusProgressing, StatusFailed, StatusConflict, StatusUnknown:
		return true
	}
	return false
}

// UnmarshalText accepts only the vocabulary's words.
func (s *Status) UnmarshalText(b []byte) error { return decode(s, b, "status") }

// Health says how the thing on the cluster is doing, apart from whether it
// matches the manifest; ordered from best to worst.
type Health string

// The healths, best first as in docs/api.md.
const (
	HealthHealthy     Health = "Healthy"
	HealthProgressing Health = "Progressing"
	HealthSuspended   Health = "Suspended"
	HealthMissing     Health = "Missing"
	HealthDegraded    Health = "Degraded"
	HealthUnknown     Health = "Unknown"
)

// Healths lists every health, best first.
var Healths = []Health{HealthHealthy, HealthProgressing, HealthSuspended, HealthMissing, HealthDegraded, HealthUnknown}

// Valid reports whether h is a word of the vocabulary.
func (h Health) Valid() bool {
	switch h {
	case HealthHealthy, HealthProgressing, HealthSuspended, HealthMissing, HealthDegraded, HealthUnknown:
		return true
	}
	return false
}

// UnmarshalText accepts only the vocabulary's words.
func (h *Health) UnmarshalText(b []byte) error { return decode(h, b, "health") }

// Action is what a pass does, or would do, to a resource. A conflict is
// ActionNone with the conflict flag set, never an action of its own.
type Action string

// The actions.
const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionReboot Action = "reboot"
	ActionDelete Action = "delete"
	ActionNone   Action = "none"
)

// Actions lists every action in documented order.
var Actions = []Action{ActionCreate, ActionUpdate, ActionReboot, ActionDelete, ActionNone}

// Valid reports whether a is a word of the vocabulary.
func (a Action) Valid() bool {
	switch a {
	case ActionCreate, ActionUpdate, ActionReboot, ActionDelete, ActionNone:
		return true
	}
	return false
}

// UnmarshalText accepts only the vocabulary's words.
func (a *Action) UnmarshalText(b []byte) error { return decode(a, b, "action") }

// SyncPolicy comes from the annotation proxmops.dev/sync: whether the
// daemon applies a resource's actions by itself.
type SyncPolicy string

// The sync policies.
const (
	SyncAuto     SyncPolicy = "auto"     // applied on every pass
	SyncManual   SyncPolicy = "manual"   // planned; applied only when synced by hand
	SyncDisabled SyncPolicy = "disabled" // neither planned nor applied
)

// SyncPolicies lists every policy in documented order.
var SyncPolicies = []SyncPolicy{SyncAuto, SyncManual, SyncDisabled}

// Valid reports whether p is a word of the vocabulary.
func (p SyncPolicy) Valid() bool {
	switch p {
	case SyncAuto, SyncManual, SyncDisabled:
		return true
	}
	return false
}

// UnmarshalText accepts only the vocabulary's words.
func (p *SyncPolicy) UnmarshalText(b []byte) error { return decode(p, b, "sync policy") }

type word interface {
	~string
	Valid() bool
}

func decode[W word](w *W, b []byte, what string) error {
	v := W(b)
	if v != "" && !v.Valid() { // "" is the zero value: not set
		return fmt.Errorf("unknown %s %q", what, b)
	}
	*w = v
	return nil
}

// Change is one field that differs between the manifest and the cluster:
// "cores: 2 -> 4". Field is the Proxmox key ("net1", "cores") as the
// cluster names it; Path, when the engine knows it, is the manifest path of
// the same field ("spec.net[1].bridge") so that a reader can align what is
// desired with what is observed without guessing. From is what the cluster
// has, To what the manifest wants; "" is unset.
type Change struct {
	Field string `json:"field"`
	Path  string `json:"path,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// String renders the change for logs and the CLI.
func (c Change) String() string {
	if c.From == "" && c.To != "" {
		return c.Field + ": " + c.To
	}
	from, to := c.From, c.To
	if from == "" {
		from = "(unset)"
	}
	if to == "" {
		to = "(unset)"
	}
	return fmt.Sprintf("%s: %s -> %s", c.Field, from, to)
}

// Count counts items per status: the one way every summary (the plan's
// text and document, the resource list, the UI's bar, the metrics) counts
// them. Each status of the vocabulary is a key, zero included, and a word
// outside it (the zero value) counts as Unknown, so every item is in
// exactly one status and the counts add up to len(items).
func Count[T any](items []T, status func(T) Status) map[Status]int {
	counts := make(map[Status]int, len(Statuses))
	for _, s := range Statuses {
		counts[s] = 0
	}
	for _, it := range items {
		s := status(it)
		if !s.Valid() {
			s = StatusUnknown
		}
		counts[s]++
	}
	return counts
}
