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
	c.mu.Lock()
	var before *api.ResourceSummary
	if r := c.resources[key]; r != nil {
		sum := r.sum
		before = &sum
	}
	c.mu.Unlock()
	runErr, err := c.runWaiting(ctx, key, "the rollback", func(jctx context.Context) (err error) {
		res, err = eng.Rollback(jctx, ds.desired, kind, name, snapshot, func(m string) {
			c.progress(key, &api.Progress{Message: m})
		})
		return err
	})
	if err != nil {
		return api.RollbackResult{}, err
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

// runWaiting runs run as key's one job in the dispatcher and waits for it
// to end: runErr is what run returned. err says why it was not run (an
// action on key is running) or not waited for (ctx, the request, ended
// first: the job goes on, and what, "the rollback", names it).
func (c *Controller) runWaiting(ctx context.Context, key, what string, run func(context.Context) error) (runErr, err error) {
	var jobErr error // written by the job, read only once it is done
	done := make(chan struct{})
	ok := c.dispatcher.Submit(c.workCtx, dispatch.Job{
		Key: key,
		Run: func(jctx context.Context) error {
			jobErr = run(jctx)
			return jobErr
		},
		Done: func(error) {
			close(done)
			c.afterAction()
		},
	})
	if !ok {
		return nil, fmt.Errorf("an action on %s is already running: %w", key, api.ErrConflict)
	}
	select {
	case <-done:
		return jobErr, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("%s of %s goes on, but the request ended: %w", what, key, ctx.Err())
	}
}
