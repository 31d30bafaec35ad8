package controller

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Adopt takes ownership of the unowned guest of a declared resource
// (POST /api/v1/resources/{kind}/{name}/adopt), exactly as `proxmops
// adopt` does (engine.PlanAdoption, engine.ApplyAdoption): the ownership
// tag only, the other differences left to a sync. With dryRun it only
// plans. It runs as the resource's one job in the dispatcher, records
// "adopted" in the history with the commit and user, and asks for a
// re-scan. A refusal, or a resource that is not a Conflict, wraps
// api.ErrConflict with the reason.
func (c *Controller) Adopt(ctx context.Context, kind, name string, dryRun bool) (api.AdoptResult, error) {
	key := vocab.Key(kind, name)
	if !manifest.IsGuest(kind) {
		return api.AdoptResult{}, fmt.Errorf("only a VirtualMachine, Template or Container adopts a guest, not a %s: %w", kind, api.ErrInvalid)
	}
	if !dryRun {
		if err := c.canAct(); err != nil {
			return api.AdoptResult{}, err
		}
	}
	rt := c.currentRuntime()
	if rt.client == nil {
		return api.AdoptResult{}, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	ds := c.currentDesired()
	if ds == nil {
		return api.AdoptResult{}, fmt.Errorf("the repository was never loaded: %w", api.ErrNotReady)
	}
	eng := rt.engine(false, "", c.opts.Logger)
	if dryRun {
		ad, err := eng.PlanAdoption(ctx, ds.desired, ds.commit, key)
		if err != nil {
			return api.AdoptResult{}, err
		}
		return adoptResult(kind, name, ds.commit, ad, true), nil
	}
	var ad *engine.Adoption
	runErr, err := c.runWaiting(ctx, key, "the adoption", func(jctx context.Context) (err error) {
		c.progress(key, &api.Progress{Message: "adopting"})
		if ad, err = eng.PlanAdoption(jctx, ds.desired, ds.commit, key); err == nil {
			err = eng.ApplyAdoption(jctx, ad, nil)
		}
		return err
	})
	if err != nil {
		return api.AdoptResult{}, err
	}
	if runErr != nil {
		return api.AdoptResult{}, runErr
	}
	c.mu.Lock()
	c.addEntryLocked(context.WithoutCancel(ctx), kind, name, api.HistoryEntry{Event: api.EventAdopted,
		Commit: ds.commit, Message: ad.HistoryMessage(ds.commit)})
	c.mu.Unlock()
	c.log.Info("guest adopted", "resource", key, "vmid", ad.VMID, "node", ad.Node, "by", api.ActorFrom(ctx).String())
	return adoptResult(kind, name, ds.commit, ad, false), nil
}

func adoptResult(kind, name, commit string, ad *engine.Adoption, dryRun bool) api.AdoptResult {
	res := api.AdoptResult{Kind: kind, Name: name, Node: ad.Node, VMID: ad.VMID, Revision: commit, DryRun: dryRun, Adopted: !dryRun}
	if doc := ad.Plan.Document(); len(doc.Actions) == 1 {
		res.Plan = doc.Actions[0]
	}
	if dryRun {
		res.Message = fmt.Sprintf("adopting tags VMID %d on %s with %s and %s, records its disk sizes (%s) in its description and changes nothing else; a sync then applies the other changes listed",
			ad.VMID, ad.Node, engine.OwnerTag, engine.AdoptedTag, ad.Record)
	} else {
		res.Message = fmt.Sprintf("adopted: VMID %d on %s now carries %s and %s, its disk sizes (%s) recorded in its description; the other changes listed wait for a sync",
			ad.VMID, ad.Node, engine.OwnerTag, engine.AdoptedTag, ad.Record)
	}
	return res
}
