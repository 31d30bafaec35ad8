package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
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
	reduced, spec := d.without(kind, name)
	target := deletion{}
	if row := rowOf(kind); spec != nil && row != nil && row.deletion != nil {
		t, err := row.deletion(spec)
		if err != nil {
			return nil, err
		}
		target = t
	}
	if target.match == nil {
		target.match = func(a *Action) bool { return a.Name == name }
	}
	if target.list != nil {
		reduced.alsoList = append(reduced.alsoList, *target.list)
	}
	pruning := *e
	pruning.opts.Prune = true
	p, err := pruning.Plan(ctx, reduced, "")
	if err != nil {
		return nil, err
	}
	var found, refused *Action
	for _, a := range p.Actions {
		switch {
		case a.Kind == kind && a.Action == vocab.ActionDelete && target.match(a):
			found = a
		case a.Kind == kind && a.Owned && a.failedPlanning() && target.match(a):
			refused = a // an owned one a guard keeps (a storage holding volumes)
		}
	}
	if found == nil && refused != nil {
		return nil, fmt.Errorf("%s/%s: %s: %w", kind, name, refused.Reason, api.ErrConflict)
	}
	if found == nil {
		if target.vmid > 0 {
			if g := p.pass.snap.Guest(target.vmid); g != nil && !g.Owned {
				return nil, fmt.Errorf("%s/%s: VMID %d is %w", kind, name, target.vmid, ErrNotOwned)
			}
		}
		return nil, fmt.Errorf("%s/%s: %w owned by proxmops on the cluster", kind, name, ErrNothingToDelete)
	}
	found.Reason = "deleted on request"
	p.Actions = []*Action{found}
	p.finish()
	return e.Apply(ctx, p, prog)
}
