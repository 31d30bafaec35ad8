package controller

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Snapshots lists the snapshots of a declared VirtualMachine or Container
// (GET /api/v1/resources/{kind}/{name}/snapshots).
func (c *Controller) Snapshots(ctx context.Context, kind, name string) (api.SnapshotList, error) {
	rt := c.currentRuntime()
	if rt.client == nil {
		return api.SnapshotList{}, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	ds := c.currentDesired()
	if ds == nil {
		return api.SnapshotList{}, c.notLoaded()
	}
	return rt.engine(false, "", c.opts.Logger).GuestSnapshots(ctx, ds.desired, kind, name)
}

// Rollback rolls a declared guest back to a snapshot and waits for it
// (POST /api/v1/resources/{kind}/{name}/rollback). It runs as the
// resource's one job in the dispatcher, records the rollback in the
// history and asks for a re-scan, which shows the guest OutOfSync against
// Git: with sync manual it stays so, with auto the next pass re-applies
// the manifest, as the result's Next says.
func (c *Controller) Rollback(ctx context.Context, kind, name, snapshot string) (api.RollbackResult, error) {
	key := vocab.Key(kind, name)
	if err := c.canAct(); err != nil {
		return api.RollbackResult{}, err
	}
	ds := c.currentDesired()
	if ds == nil {
		return api.RollbackResult{}, c.notLoaded()
	}
	eng := c.currentRuntime().engine(false, "", c.opts.Logger)
	var res api.RollbackResult
	var runErr error
	done := make(chan struct{})
	c.mu.Lock()
	var before *api.ResourceSummary
	if r := c.resources[key]; r != nil {
		sum := r.sum
		before = &sum
	}
	c.mu.Unlock()
	ok := c.dispatcher.Submit(c.workCtx, dispatch.Job{
		Key: key,
		Run: func(jctx context.Context) error {
			res, runErr = eng.Rollback(jctx, ds.desired, kind, name, snapshot, func(m string) {
				c.progress(key, &api.Progress{Message: m})
			})
			return runErr
		},
		Done: func(error) {
			close(done)
			c.afterAction()
		},
	})
	if !ok {
		return api.RollbackResult{}, fmt.Errorf("an action on %s is already running: %w", key, api.ErrConflict)
	}
	select {
	case <-done:
	case <-ctx.Done():
		return api.RollbackResult{}, fmt.Errorf("the rollback of %s goes on, but the request ended: %w", key, ctx.Err())
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if r := c.resources[key]; r != nil && before != nil {
		sum := *before
		sum.Progress = nil
		if runErr == nil {
			sum.Reason = fmt.Sprintf("rolled back to %s; looked at again against Git", res.Snapshot)
		}
		c.setSummaryLocked(r, sum)
	}
	hctx := context.WithoutCancel(ctx)
	if runErr != nil {
		c.addHistoryLocked(hctx, kind, name, api.EventFailed, ds.commit, "rollback failed: "+runErr.Error())
		return api.RollbackResult{}, runErr
	}
	c.addHistoryLocked(hctx, kind, name, api.EventRolledBack, ds.commit, fmt.Sprintf("rolled back to snapshot %s. %s", res.Snapshot, res.Next))
	c.log.Info("guest rolled back", "resource", key, "snapshot", res.Snapshot, "syncPolicy", res.SyncPolicy)
	return res, nil
}
