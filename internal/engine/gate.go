package engine

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// The checks every kind makes before it diffs, and the one decision about
// an owned resource no manifest declares. Each reconciler calls these
// instead of writing its own: a sync-disabled resource, a conflict and a
// prune read the same whatever the kind.

// syncDisabled finishes a's plan when its sync policy is disabled: not
// evaluated, never touched.
func syncDisabled(a *Action) bool {
	if a.Sync != vocab.SyncDisabled {
		return false
	}
	a.Status, a.Reason = vocab.StatusUnknown, "sync disabled by annotation proxmops.dev/sync"
	return true
}

// conflict marks a as blocked by something proxmops does not own (or
// cannot change into what is declared): it is left untouched and needs a
// person.
func (a *Action) conflict(reason string) *Action {
	a.Status, a.Reason = vocab.StatusConflict, reason
	return a
}

// GuestKind is the manifest kind that declares a guest of the cluster: a
// container (a container template too: no kind declares one), a
// template, else a VM.
func GuestKind(g *Guest) string {
	switch {
	case g.Type == "lxc":
		return KindContainer
	case g.Template:
		return KindTemplate
	}
	return KindVirtualMachine
}

// GuestNoun names what a guest is, for reasons: its kind's noun, or
// "container template" for an LXC template, which no kind declares.
func GuestNoun(g *Guest) string {
	if g.Type == "lxc" && g.Template {
		return "container template"
	}
	info, _ := manifest.Info(manifest.Kind(GuestKind(g)))
	return info.Noun
}

// guestGates runs, in order, the gates every guest kind passes before its
// own plan: the adoption of the guest at the VMID (adoptGate), the tagging
// of an untagged guest proxmops made (adoptUntagged), then guestGate. It
// returns the guest to plan with and a finished action, or nil to go on.
func guestGates(pc *planContext, a *Action, kind string, m Meta, g *Guest) (*Guest, *Action) {
	g, done := adoptGate(pc, a, kind, m, g)
	if done != nil {
		return g, done
	}
	if ad := adoptUntagged(pc, a, g); ad != nil {
		return g, ad
	}
	return g, guestGate(a, kind, g)
}

// guestTypeOf is the Proxmox type a guest kind declares (qemu, lxc, from
// the kind table) and whether it is a template.
func guestTypeOf(kind string) (typ string, template bool) {
	info, _ := manifest.Info(manifest.Kind(kind))
	return info.PVEType, kind == KindTemplate
}

// guestGate handles what every guest kind checks first: sync disabled, an
// unfinished create, a guest proxmops does not own or of another type at
// the VMID, a lock. It returns a finished action, or nil to go on.
func guestGate(a *Action, kind string, g *Guest) *Action {
	if syncDisabled(a) {
		return a
	}
	if g == nil {
		return nil
	}
	a.placeOn(g)
	a.Owned = g.Owned
	if unfinished(a, g) {
		return a
	}
	if !g.Owned {
		return a.conflict(fmt.Sprintf("VMID %d is held by %s %q on %s, which proxmops does not own (no %s tag): left untouched", g.VMID, GuestNoun(g), g.Name, g.Node, OwnerTag))
	}
	if typ, template := guestTypeOf(kind); g.Type != typ || g.Template != template {
		a.conflict(fmt.Sprintf("VMID %d holds a %s, but the manifest declares a %s", g.VMID, GuestNoun(g), kind))
		if kind == KindTemplate && g.Type == "qemu" && !g.Template {
			return nil // an owned VM at a template's VMID is an unfinished build
		}
		return a
	}
	if g.Lock != "" {
		a.Status = vocab.StatusProgressing
		a.Reason = fmt.Sprintf("locked by a running %s operation; looked at again next pass", g.Lock)
		return a
	}
	return nil
}

// pruneWhy are the reasons of an owned, undeclared resource: kept (prune
// is off) and gone (deleted by prune).
type pruneWhy struct{ kept, gone string }

// ownedWhy are the usual reasons; subject says what is owned ("owned by
// proxmops", "interface vmbr9 is owned by proxmops").
func ownedWhy(subject string) pruneWhy {
	return pruneWhy{kept: subject + " but no longer in the repository; prune is off, so it is left in place",
		gone: subject + " and no longer in the repository (prune)"}
}

// orphan is the action of an owned resource no manifest declares, before
// the prune decision.
func orphan(kind, name, node string, vmid int, observed map[string]any) *Action {
	return &Action{Kind: kind, Name: name, Node: node, VMID: vmid, Action: vocab.ActionNone, Owned: true,
		Sync: vocab.SyncAuto, Changes: []vocab.Change{}, Observed: observed}
}

// decidePrune is the prune decision for an orphan: with prune off it is
// reported OutOfSync and left in place; with blocked set (why it cannot be
// deleted this pass) it fails; else it is planned for deletion with the
// change del. It reports whether a deletion is planned: the caller then
// gives the action its claim and run.
func decidePrune(pc *planContext, a *Action, why pruneWhy, blocked string, del vocab.Change) bool {
	switch {
	case !pc.e.opts.Prune:
		a.Status, a.Reason = vocab.StatusOutOfSync, why.kept
		if held := pc.e.opts.PruneHeld; held != "" {
			a.Reason = strings.Replace(why.kept, "prune is off", "prune is on but held back ("+held+")", 1)
		}
		return false
	case blocked != "":
		a.refuse(blocked)
		return false
	}
	a.Action, a.Status, a.Reason = vocab.ActionDelete, vocab.StatusOutOfSync, why.gone
	a.Changes = []vocab.Change{del}
	return true
}

// pruneGuests plans, for each owned guest of type typ that match accepts
// and no manifest declares (by VMID, or by name for a kind declared
// without one), its deletion when prune is on. A locked guest is looked at
// again next pass.
func pruneGuests(pc *planContext, kind, typ string, match func(*Guest) bool) []*Action {
	var ids []int
	for id, g := range pc.snap.Guests {
		if g.Type != typ || !g.Owned || !match(g) {
			continue
		}
		if _, ok := pc.declared[id]; ok || declaredByName(pc, kind, g.Name) {
			continue
		}
		ids = append(ids, id)
	}
	sort.Ints(ids)
	prefix, destroy := "vm-", (*execCtx).destroyGuest
	if typ == "lxc" {
		prefix, destroy = "ct-", (*execCtx).destroyContainer
	}
	var out []*Action
	for _, id := range ids {
		g := pc.snap.Guests[id]
		name := g.Name
		if name == "" {
			name = prefix + strconv.Itoa(id)
		}
		a := orphan(kind, name, g.Node, id, observedSummary(g))
		out = append(out, a)
		if g.Lock != "" {
			a.Status, a.Reason = vocab.StatusProgressing, fmt.Sprintf("no longer declared; locked by a running %s operation", g.Lock)
			continue
		}
		if !decidePrune(pc, a, ownedWhy("owned by proxmops"), "", vocab.Change{Field: "vmid", From: strconv.Itoa(id)}) {
			continue
		}
		a.Reason += haDeleteNote(a, g)
		node := g.Node
		a.claim = claim{nodes: []string{node}}
		a.run = func(ctx context.Context, x *execCtx) error { return destroy(x, ctx, node, id) }
	}
	return out
}
