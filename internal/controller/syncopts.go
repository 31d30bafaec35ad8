package controller

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// allKeys in a request's pruneFor or rebootFor means every resource.
const allKeys = "*"

// Sync syncs one resource (kind and name given) or all of them with the
// options of this sync only, as Argo CD's sync dialog does: prune deletes
// owned resources no longer declared even when reconcile.prune is off;
// reboot applies changes that need one by rebooting, as applyMode: reboot
// would. A dry run changes nothing and answers the plan of that sync.
func (c *Controller) Sync(ctx context.Context, kind, name string, o api.SyncOptions) (*api.Plan, error) {
	one := kind != "" || name != ""
	key := vocab.Key(kind, name)
	if one {
		c.mu.Lock()
		r := c.resources[key]
		c.mu.Unlock()
		if r == nil {
			return nil, fmt.Errorf("no resource %s: %w", key, api.ErrNotFound)
		}
		if r.sum.SyncPolicy == vocab.SyncDisabled {
			return nil, fmt.Errorf("%s has sync disabled (annotation proxmops.dev/sync: disabled): %w", key, api.ErrConflict)
		}
	}
	if o.DryRun {
		return c.dryRun(ctx, kind, name, o)
	}
	if err := c.canAct(); err != nil {
		return nil, err
	}
	scope := allKeys
	req := request{pull: true, force: true}
	reads := c.currentRuntime().reads
	if one {
		if c.dispatcher.Busy(key) {
			return nil, fmt.Errorf("an action on %s is already running: %w", key, api.ErrConflict)
		}
		scope = key
		req = request{keys: map[string]bool{key: true}}
		c.mu.Lock()
		if r := c.resources[key]; r != nil {
			reads.Refresh(r.sum.VMID) // a sync acts on what the guest has now
		}
		c.mu.Unlock()
	} else {
		reads.RefreshAll()
	}
	if o.Prune {
		req.pruneFor = map[string]bool{scope: true}
	}
	if o.Reboot {
		req.rebootFor = map[string]bool{scope: true}
	}
	req.by = map[string]api.Actor{scope: api.ActorFrom(ctx)}
	c.ask(req)
	return nil, nil
}

// dryRun plans the sync without applying it.
func (c *Controller) dryRun(ctx context.Context, kind, name string, o api.SyncOptions) (*api.Plan, error) {
	rt := c.currentRuntime()
	if rt.client == nil {
		return nil, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	ds := c.currentDesired()
	if ds == nil {
		return nil, c.notLoaded()
	}
	scope := map[string]bool{allKeys: true}
	if kind != "" {
		scope = map[string]bool{vocab.Key(kind, name): true}
	}
	desired := ds.desired
	if o.Reboot {
		desired = withReboot(desired, scope)
	}
	// As the pass: no prune from an empty load, and the reasons say why.
	prune := rt.cfg.Reconcile.Prune || o.Prune
	eng := rt.engine(prune && len(ds.set.Resources) > 0, pruneHeld(prune, true, ds), c.opts.Logger)
	p, err := eng.Plan(ctx, desired, ds.commit)
	if err != nil {
		return nil, fmt.Errorf("observing the cluster: %w", err)
	}
	if kind != "" {
		if p.Find(kind, name) == nil {
			return nil, fmt.Errorf("no resource %s/%s: %w", kind, name, api.ErrNotFound)
		}
		p = p.Only(vocab.Key(kind, name))
	}
	doc := p.Document()
	return &doc, nil
}

// withReboot is d with applyMode reboot on the guests in scope ("*": all),
// for one sync; d itself is shared with the loop and stays as loaded.
func withReboot(d *engine.Desired, scope map[string]bool) *engine.Desired {
	in := func(m *engine.Meta) bool { return scope[allKeys] || scope[vocab.Key(m.Kind, m.Name)] }
	return d.Map(func(s engine.Spec) engine.Spec {
		switch v := s.(type) {
		case *engine.VMSpec:
			if in(&v.Meta) {
				cp := *v
				cp.ApplyMode = "reboot"
				return &cp
			}
		case *engine.ContainerSpec:
			if in(&v.Meta) {
				cp := *v
				cp.ApplyMode = "reboot"
				return &cp
			}
		}
		return s
	})
}

// prunedHere says whether this pass may apply the prune deletion of key: by
// configuration, or because this sync asked for prune on it (or on all).
func (r request) prunedHere(key string, configured bool) bool {
	return configured || r.pruneFor[allKeys] || r.pruneFor[key]
}
