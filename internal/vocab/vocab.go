// Package vocab is proxmops's one vocabulary: the words a pass uses to say
// what it found and what it does (Status, Action, Health, SyncPolicy) and
// the shape of one difference (Change). The engine, the controller, the
// HTTP API, the CLI and the UI (web/src/api/generated.ts, written from
// these types by internal/api/tsgen) all speak these words; no other
// package declares them.
//
// Inside the program each word is a typed constant, an enumeration no
// string converts to by accident (a literal "Synced" does not compile where
// a Status is expected). Its word on the wire, fixed by docs/api.md, is
// mapped at the edge by one exhaustive switch per type (String, used by
// MarshalText); Statuses, Healths, Actions and SyncPolicies list the
// words in documented order. Decoding a word that is not in the
// vocabulary is an error (UnmarshalText, Parse*; "" decodes to the zero
// value, which means not set), so a typo in a stored record or a request
// never passes as a new state.
package vocab

import (
	"fmt"
)

// Status is a resource's sync status: does the cluster match the manifest.
// The zero value is not set.
type Status int

// The statuses, in the order of docs/api.md.
const (
	StatusSynced      Status = iota + 1 // the cluster matches the manifest
	StatusOutOfSync                     // it differs; an action would fix it
	StatusProgressing                   // an action is queued or running
	StatusFailed                        // the last action or the plan failed
	StatusConflict                      // something not owned by proxmops is in the way
	StatusUnknown                       // not evaluated (not read, the cluster unreachable, sync disabled)
)

// Statuses lists every status in documented order.
var Statuses = []Status{StatusSynced, StatusOutOfSync, StatusProgressing, StatusFailed, StatusConflict, StatusUnknown}

// String is the status's word ("" when not set or not a word).
func (s Status) String() string {
	switch s {
	case StatusSynced:
		return "Synced"
	case StatusOutOfSync:
		return "OutOfSync"
	case StatusProgressing:
		return "Progressing"
	case StatusFailed:
		return "Failed"
	case StatusConflict:
		return "Conflict"
	case StatusUnknown:
		return "Unknown"
	}
	return ""
}

// Valid reports whether s is a word of the vocabulary.
func (s Status) Valid() bool { return valid(s) }

// ParseStatus reads a status's word.
func ParseStatus(w string) (Status, error) { return parse(Statuses, w, "status") }

// MarshalText writes the status's word.
func (s Status) MarshalText() ([]byte, error) { return marshal(s, "status") }

// UnmarshalText accepts only the vocabulary's words.
func (s *Status) UnmarshalText(b []byte) error { return decode(Statuses, s, b, "status") }

// Health says how the thing on the cluster is doing, apart from whether it
// matches the manifest; ordered from best to worst. The zero value is not
// set.
type Health int

// The healths, best first as in docs/api.md.
const (
	HealthHealthy Health = iota + 1
	HealthProgressing
	HealthSuspended
	HealthMissing
	HealthDegraded
	HealthUnknown
)

// Healths lists every health, best first.
var Healths = []Health{HealthHealthy, HealthProgressing, HealthSuspended, HealthMissing, HealthDegraded, HealthUnknown}

// String is the health's word ("" when not set or not a word).
func (h Health) String() string {
	switch h {
	case HealthHealthy:
		return "Healthy"
	case HealthProgressing:
		return "Progressing"
	case HealthSuspended:
		return "Suspended"
	case HealthMissing:
		return "Missing"
	case HealthDegraded:
		return "Degraded"
	case HealthUnknown:
		return "Unknown"
	}
	return ""
}

// Valid reports whether h is a word of the vocabulary.
func (h Health) Valid() bool { return valid(h) }

// ParseHealth reads a health's word.
func ParseHealth(w string) (Health, error) { return parse(Healths, w, "health") }

// MarshalText writes the health's word.
func (h Health) MarshalText() ([]byte, error) { return marshal(h, "health") }

// UnmarshalText accepts only the vocabulary's words.
func (h *Health) UnmarshalText(b []byte) error { return decode(Healths, h, b, "health") }

// Action is what a pass does, or would do, to a resource. A conflict is
// ActionNone with the status Conflict, never an action of its own. The
// zero value is not set.
type Action int

// The actions.
const (
	ActionCreate Action = iota + 1
	ActionUpdate
	ActionReboot
	ActionDelete
	ActionNone
)

// Actions lists every action in documented order.
var Actions = []Action{ActionCreate, ActionUpdate, ActionReboot, ActionDelete, ActionNone}

// String is the action's word ("" when not set or not a word).
func (a Action) String() string {
	switch a {
	case ActionCreate:
		return "create"
	case ActionUpdate:
		return "update"
	case ActionReboot:
		return "reboot"
	case ActionDelete:
		return "delete"
	case ActionNone:
		return "none"
	}
	return ""
}

// Valid reports whether a is a word of the vocabulary.
func (a Action) Valid() bool { return valid(a) }

// ParseAction reads an action's word.
func ParseAction(w string) (Action, error) { return parse(Actions, w, "action") }

// MarshalText writes the action's word.
func (a Action) MarshalText() ([]byte, error) { return marshal(a, "action") }

// UnmarshalText accepts only the vocabulary's words.
func (a *Action) UnmarshalText(b []byte) error { return decode(Actions, a, b, "action") }

// SyncPolicy comes from the annotation proxmops.dev/sync: whether the
// daemon applies a resource's actions by itself. The zero value is not set.
type SyncPolicy int

// The sync policies.
const (
	SyncAuto     SyncPolicy = iota + 1 // applied on every pass
	SyncManual                         // planned; applied only when synced by hand
	SyncDisabled                       // neither planned nor applied
)

// SyncPolicies lists every policy in documented order.
var SyncPolicies = []SyncPolicy{SyncAuto, SyncManual, SyncDisabled}

// String is the policy's word ("" when not set or not a word).
func (p SyncPolicy) String() string {
	switch p {
	case SyncAuto:
		return "auto"
	case SyncManual:
		return "manual"
	case SyncDisabled:
		return "disabled"
	}
	return ""
}

// Valid reports whether p is a word of the vocabulary.
func (p SyncPolicy) Valid() bool { return valid(p) }

// ParseSyncPolicy reads a policy's word.
func ParseSyncPolicy(w string) (SyncPolicy, error) { return parse(SyncPolicies, w, "sync policy") }

// MarshalText writes the policy's word.
func (p SyncPolicy) MarshalText() ([]byte, error) { return marshal(p, "sync policy") }

// UnmarshalText accepts only the vocabulary's words.
func (p *SyncPolicy) UnmarshalText(b []byte) error { return decode(SyncPolicies, p, b, "sync policy") }

// Word is a word of the vocabulary.
type Word interface {
	~int
	fmt.Stringer
}

// valid reports whether w is a word: the switch of its String knows it.
func valid[W Word](w W) bool { return w.String() != "" }

func marshal[W Word](w W, what string) ([]byte, error) {
	if w != 0 && !valid(w) {
		return nil, fmt.Errorf("no %s word for %d", what, int(w))
	}
	return []byte(w.String()), nil
}

func parse[W Word](list []W, w, what string) (W, error) {
	if w == "" { // not set
		return 0, nil
	}
	for _, x := range list {
		if x.String() == w {
			return x, nil
		}
	}
	return 0, fmt.Errorf("unknown %s %q", what, w)
}

func decode[W Word](list []W, w *W, b []byte, what string) error {
	v, err := parse(list, string(b), what)
	if err != nil {
		return err
	}
	*w = v
	return nil
}

// Change is one field that differs between the manifest and the cluster:
// "cores: 2 -> 4". Field is the Proxmox key ("net1", "cores") as the
// cluster names it; Path, when the engine knows it, is the manifest path of
// the same field ("spec.net[1].bridge") so that a reader can align what is
// desired with what is observed without guessing. From is what the cluster
// has, To what the manifest wants; "" is unset. Pending and Hold say what
// becomes of the change: they are data, never part of Field.
type Change struct {
	Field string `json:"field"`
	Path  string `json:"path,omitempty"`
	From  string `json:"from"`
	To    string `json:"to"`
	// Pending: Proxmox already holds the desired value in the guest's
	// pending configuration; it takes effect when the guest restarts.
	Pending bool `json:"pending,omitempty"`
	// Hold, when set, says why the plan lists the change but no action
	// applies it: Proxmox keeps the value as it is, and the action's
	// reason says what to do instead.
	Hold Hold `json:"hold,omitempty"`
}

// Hold is why a listed change is never applied. The zero value is not
// set: the change is applied.
type Hold int

// The holds.
const (
	HoldCreationOnly       Hold = iota + 1 // a key Proxmox sets only when the guest is created
	HoldGrownSinceAdoption                 // a disk grown beyond the manifest and its size at adoption: never shrunk
)

// Holds lists every hold in documented order.
var Holds = []Hold{HoldCreationOnly, HoldGrownSinceAdoption}

// String is the hold's word ("" when not set or not a word).
func (h Hold) String() string {
	switch h {
	case HoldCreationOnly:
		return "creation-only"
	case HoldGrownSinceAdoption:
		return "grown since adoption"
	}
	return ""
}

// Valid reports whether h is a word of the vocabulary.
func (h Hold) Valid() bool { return valid(h) }

// ParseHold reads a hold's word.
func ParseHold(w string) (Hold, error) { return parse(Holds, w, "hold") }

// MarshalText writes the hold's word.
func (h Hold) MarshalText() ([]byte, error) { return marshal(h, "hold") }

// UnmarshalText accepts only the vocabulary's words.
func (h *Hold) UnmarshalText(b []byte) error { return decode(Holds, h, b, "hold") }

// Held reports whether the change is listed only: no action applies it.
func (c Change) Held() bool { return c.Hold != 0 }

// Label is the field as people read it: "memory (pending)",
// "scsi0.format (creation-only)".
func (c Change) Label() string {
	switch {
	case c.Hold != 0:
		return c.Field + " (" + c.Hold.String() + ")"
	case c.Pending:
		return c.Field + " (pending)"
	}
	return c.Field
}

// String renders the change for logs and the CLI.
func (c Change) String() string {
	if c.From == "" && c.To != "" {
		return c.Label() + ": " + c.To
	}
	from, to := c.From, c.To
	if from == "" {
		from = "(unset)"
	}
	if to == "" {
		to = "(unset)"
	}
	return fmt.Sprintf("%s: %s -> %s", c.Label(), from, to)
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
