package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/proxmops/proxmops/internal/vocab"
)

// ErrNotOwned is returned by Delete for a resource proxmops does not own.
var ErrNotOwned = errors.New("not owned by proxmops")

// ErrNothingToDelete is returned by Delete when the resource does not exist
// on the cluster.
var ErrNothingToDelete = errors.New("nothing to delete")

// Delete removes one resource from the cluster now (the UI's and API's
// one-shot delete), checking ownership exactly as prune does: only an owned
// guest, or a volume proven downloaded by proxmops (volowner.go), is
// deleted. If its manifest is still in d, the next pass creates it again.
func (e *Engine) Delete(ctx context.Context, d *Desired, kind, name string, prog Progress) (*Report, error) {
	if d == nil {
		d = &Desired{}
	}
	reduced := &Desired{}
	match := reduceKinds(d, reduced, kind, name) // containers, networks, SDN
	targetVMID, targetVol := 0, ""
	for _, s := range d.VMs {
		if kind == KindVirtualMachine && s.Name == name {
			targetVMID = s.VMID
			continue
		}
		reduced.VMs = append(reduced.VMs, s)
	}
	for _, s := range d.Templates {
		if kind == KindTemplate && s.Name == name {
			targetVMID = s.VMID
			continue
		}
		reduced.Templates = append(reduced.Templates, s)
	}
	for _, s := range d.Isos {
		if kind == KindIso && s.Name == name {
			vol, err := isoVolume(s)
			if err != nil {
				return nil, err
			}
			targetVol = vol
			reduced.alsoList = append(reduced.alsoList, [2]string{s.Node, s.Storage})
			continue
		}
		reduced.Isos = append(reduced.Isos, s)
	}
	pruning := *e
	pruning.opts.Prune = true
	p, err := pruning.Plan(ctx, reduced, "")
	if err != nil {
		return nil, err
	}
	var found *Action
	for _, a := range p.Actions {
		if a.Kind != kind || a.Action != vocab.ActionDelete {
			continue
		}
		switch {
		case match != nil:
			if match(a) {
				found = a
			}
		case kind == KindIso && targetVol != "" && a.Observed["volid"] == targetVol,
			kind != KindIso && targetVMID > 0 && a.VMID == targetVMID,
			targetVMID == 0 && targetVol == "" && a.Name == name:
			found = a
		}
	}
	if found == nil {
		if targetVMID > 0 {
			if g := p.pass.snap.Guest(targetVMID); g != nil && !g.Owned {
				return nil, fmt.Errorf("%s/%s: VMID %d is %w", kind, name, targetVMID, ErrNotOwned)
			}
		}
		return nil, fmt.Errorf("%s/%s: %w owned by proxmops on the cluster", kind, name, ErrNothingToDelete)
	}
	found.Reason = "deleted on request"
	p.Actions = []*Action{found}
	p.finish()
	return e.Apply(ctx, p, prog)
}
