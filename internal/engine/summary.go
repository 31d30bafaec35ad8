package engine

import (
	"fmt"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/vocab"
)

// StatusOf is a planned resource's one status: Unknown when the plan set
// none, else the status the plan set (Conflict included: it is a status
// only).
func StatusOf(a *Action) vocab.Status {
	if !a.Status.Valid() { // not set, or not a word
		return vocab.StatusUnknown
	}
	return a.Status
}

// Summarize counts a plan's resources: each in exactly one status
// (vocab.Count, the function the controller's resource list and metrics
// use), and the actions a sync would carry out, which only an OutOfSync
// resource that is not blocked has. A create that cannot be planned is
// counted Failed, never "to create".
func Summarize(actions []*Action) Summary {
	s := Summary{Statuses: vocab.Count(actions, StatusOf)}
	for _, a := range actions {
		if a.NeedsReboot && a.Action != vocab.ActionReboot && StatusOf(a) == vocab.StatusOutOfSync {
			s.NeedsReboot++
		}
		if StatusOf(a) != vocab.StatusOutOfSync || a.BlockedBy != "" {
			continue
		}
		switch a.Action {
		case vocab.ActionCreate:
			s.Create++
		case vocab.ActionUpdate:
			s.Update++
		case vocab.ActionReboot:
			s.Reboot++
		case vocab.ActionDelete:
			s.Delete++
		}
	}
	s.Conflict = s.Statuses[vocab.StatusConflict]
	s.Failed = s.Statuses[vocab.StatusFailed]
	s.Unknown = s.Statuses[vocab.StatusUnknown]
	return s
}

// checkNodes fails every declared resource whose node the cluster does not
// have and that exists nowhere yet, with the nodes it has: that is the
// reason, not the storage, template or read errors that follow from it
// (and that a dependent resource would otherwise quote). It runs before
// privileges and dependencies are resolved.
func checkNodes(p *Plan, snap *Observation) {
	if snap == nil || len(snap.Nodes) == 0 {
		return
	}
	nodes := slices.Clone(snap.Nodes)
	slices.Sort(nodes)
	for _, a := range p.Actions {
		if a.Node == "" || a.File == "" || a.Observed != nil || a.Conflicted() || a.Sync == vocab.SyncDisabled ||
			slices.Contains(nodes, a.Node) {
			continue
		}
		a.refuse(NodeMissing(a.Node, nodes))
		if a.Action == vocab.ActionNone {
			a.Action = vocab.ActionCreate
		}
	}
}

// NodeMissing is the reason of a resource declared on a node that is not
// in the cluster.
func NodeMissing(node string, nodes []string) string {
	return fmt.Sprintf("node %s does not exist; the cluster has %s", node, strings.Join(nodes, ", "))
}
