package engine

import (
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// guestWords name a guest kind in a plan's reasons.
type guestWords struct{ it, restart, restarts string }

// planGuestUpdate fills an action from the diff of an existing guest and
// its power state. needsReboot says whether the diff waits for a restart
// of the running guest.
func planGuestUpdate(a *Action, g *Guest, d *pvefields.Diff, needsReboot bool, uo updateOptions, w guestWords) {
	a.Changes = d.Changes()
	var reasons []string
	if len(d.Config) > 0 || len(d.Resizes) > 0 || d.Cidata != nil {
		var fields []string
		for _, c := range d.Config {
			fields = append(fields, strings.SplitN(c.Field, ".", 2)[0])
		}
		for _, r := range d.Resizes {
			fields = append(fields, r.Slot)
		}
		if d.Cidata != nil {
			fields = append(fields, "userData")
		}
		reasons = append(reasons, fmt.Sprintf("%s differ from the manifest", strings.Join(uniqStrings(fields), ", ")))
	}
	reasons = append(reasons, d.Refused...)
	reasons = append(reasons, d.Grown...)
	if len(d.CreationOnly) > 0 {
		reasons = append(reasons, fmt.Sprintf("%s can only be set when %s is created: the change is not applied (recreate %s to get it)", fieldNames(d.CreationOnly, ", "), w.it, w.it))
	}
	power := ""
	running := g.Running()
	switch {
	case uo.state == "running" && !running:
		power = "start"
		a.Changes = append(a.Changes, vocab.Change{Field: "state", From: g.Status, To: "running"})
		reasons = append(reasons, w.it+" is "+g.Status+", the manifest wants it running")
	case uo.state == "stopped" && running:
		power = "stop"
		a.Changes = append(a.Changes, vocab.Change{Field: "state", From: "running", To: "stopped"})
		reasons = append(reasons, w.it+" runs, the manifest wants it stopped")
	}
	if power != "" && g.HAManaged() {
		reasons = append(reasons, haPowerNote(g, power))
	}
	reboot := running && power == "" && needsReboot
	if reboot {
		a.NeedsReboot = true
		if uo.rebootIfNeeded {
			reasons = append(reasons, "applied by a reboot (applyMode: reboot)")
		} else {
			reasons = append(reasons, fmt.Sprintf("takes effect after a %s (set applyMode: reboot to %s automatically)", w.restart, w.restart))
		}
	}
	for _, p := range d.Pending {
		a.Changes = append(a.Changes, vocab.Change{Field: p.Field, Path: p.Path, From: p.From, To: p.To, Pending: true})
	}
	if len(d.Pending) > 0 {
		fields := make([]string, 0, len(d.Pending))
		for _, p := range d.Pending {
			fields = append(fields, p.Field)
		}
		reasons = append(reasons, fmt.Sprintf("%s pending until %s %s", strings.Join(fields, ", "), w.it, w.restarts))
	}
	switch {
	case !d.Empty() || power != "":
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
	case reboot && uo.rebootIfNeeded:
		a.Action, a.Status = vocab.ActionReboot, vocab.StatusOutOfSync
	case reboot || len(d.CreationOnly) > 0 || len(d.Grown) > 0:
		a.Status = vocab.StatusOutOfSync
	default:
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
		return
	}
	a.Reason = joinReasons(reasons)
}

// diffGuest compares gs with the guest's effective configuration.
func diffGuest(gs *pvefields.GuestSpec, g *Guest) *pvefields.Diff {
	return pvefields.DiffQemu(gs, g.observed())
}

// observed is the guest as the field tables compare it.
func (g *Guest) observed() pvefields.Observed {
	return pvefields.Observed{VMID: g.VMID, Effective: g.Effective, Current: g.Current, Pending: g.Pending, PendingDelete: g.PendingDelete,
		Adopted: g.Owned && g.Adopted, AdoptLine: g.adoptionLine(), TagCase: g.tagCase, Running: g.Running()}
}
