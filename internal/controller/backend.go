package controller

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/check"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/dispatch"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/source"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Resources is the status list.
func (c *Controller) Resources(ctx context.Context) (api.ResourceList, error) {
	if c.opts.Replicated && !c.leading.Load() {
		return c.followerResources(ctx)
	}
	return c.localResources()
}

// localResources is the status list of this controller's passes.
func (c *Controller) localResources() (api.ResourceList, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	list := api.ResourceList{
		PassStatus: api.PassStatus{
			LastPass:       c.lastPass,
			PassDurationMs: c.passDur.Milliseconds(),
			SourceError:    c.sourceErr,
			ClusterError:   c.clusterErr,
			LastObserved:   c.observedAt,
			LoadError:      c.loadErr,
			Counts:         c.statusCounts(),
		},
		Resources: c.sortedSummariesLocked(),
	}
	if c.lastPass == nil {
		// Before the first pass: what the settings already say is missing.
		rt := c.currentRuntime()
		list.SourceError, list.ClusterError = rt.sourceErr, rt.clusterErr
	}
	if c.desired != nil {
		list.Revision, list.RevisionMessage = c.desired.commit, c.desired.message
	}
	list.Pinned = c.pins.current()
	return list, nil
}

// Resource is one resource with its desired manifest, what the cluster
// has and the planned changes; the server adds the history.
func (c *Controller) Resource(ctx context.Context, kind, name string) (api.ResourceDetail, error) {
	c.mu.Lock()
	r := c.resources[vocab.Key(kind, name)]
	if r == nil {
		c.mu.Unlock()
		return api.ResourceDetail{}, fmt.Errorf("no resource %s/%s: %w", kind, name, api.ErrNotFound)
	}
	d := api.ResourceDetail{ResourceSummary: r.sum, FieldPaths: pvefields.FieldPaths(kind)}
	if r.desired != nil {
		d.Desired = r.desired
	}
	if r.observed != nil {
		d.Observed = r.observed
	}
	vmid := 0
	if r.sum.VMID > 0 && r.observed != nil {
		vmid = r.sum.VMID
		if at, ok := c.currentRuntime().reads.ReadAt(vmid); ok {
			at = at.UTC()
			d.ConfigReadAt = &at
		}
	}
	c.mu.Unlock()
	c.lookedAt(vmid)
	// A security group's rules or an IP set's entries are read at the
	// drift-check cadence, as a guest's configuration is: looked at, they
	// are read again at once.
	if rt := c.currentRuntime(); vmid == 0 && rt != nil && rt.reads.RefreshEntries(kind, name) {
		c.askRescan()
	}
	if c.opts.Cluster != "" {
		// A named cluster's history is kept under its own name.
		h, err := c.st.History(ctx, kind, c.historyName(name), historyLimit)
		if err != nil {
			return api.ResourceDetail{}, err
		}
		d.History = h
	}
	return d, nil
}

// historyLimit is how many history entries a resource's detail shows, as
// the server shows for the single cluster.
const historyLimit = 100

// SyncAll starts a full pass now: Git is pulled and every runnable action
// is applied, even when reconcile.autoSync is off.
func (c *Controller) SyncAll(ctx context.Context) error {
	_, err := c.Sync(ctx, "", "", api.SyncOptions{})
	return err
}

// SyncOne syncs one resource now, also when its sync policy is manual.
func (c *Controller) SyncOne(ctx context.Context, kind, name string) error {
	_, err := c.Sync(ctx, kind, name, api.SyncOptions{})
	return err
}

// Refresh pulls Git now, then runs a pass.
func (c *Controller) Refresh(ctx context.Context) error {
	if c.currentRuntime().syncer == nil {
		return fmt.Errorf("%s: %w", c.currentRuntime().sourceErr, api.ErrNotReady)
	}
	c.ask(request{pull: true, by: map[string]api.Actor{allKeys: api.ActorFrom(ctx)}})
	return nil
}

// canAct refuses actions when the daemon may not change the cluster.
func (c *Controller) canAct() error {
	if c.opts.Replicated && !c.leading.Load() {
		return fmt.Errorf("this replica follows: only the leader acts (see GET /api/v1/replicas): %w", api.ErrNotReady)
	}
	rt := c.currentRuntime()
	switch {
	case rt.cfg.Reconcile.DryRun:
		return fmt.Errorf("the daemon runs in dry-run mode (reconcile.dryRun): it plans but never changes the cluster: %w", api.ErrConflict)
	case rt.client == nil:
		return fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	case c.stopping.Load():
		return fmt.Errorf("the daemon is stopping: %w", api.ErrNotReady)
	}
	return nil
}

// Delete deletes one resource from the cluster, once. Ownership is checked
// exactly as prune checks it: the engine plans the deletion only for a
// resource proxmops owns. A resource still declared in Git comes back on
// the next pass unless its manifest goes or its sync policy is manual.
func (c *Controller) Delete(ctx context.Context, kind, name string) error {
	key := vocab.Key(kind, name)
	c.mu.Lock()
	r := c.resources[key]
	var observed, owned, conflict bool
	if r != nil {
		observed, owned, conflict = r.observed != nil, r.sum.Owned, r.sum.Status == vocab.StatusConflict
	}
	c.mu.Unlock()
	switch {
	case r == nil:
		return fmt.Errorf("no resource %s: %w", key, api.ErrNotFound)
	case conflict || (observed && !owned):
		return fmt.Errorf("%s is not owned by proxmops (no managed-by-proxmops marker), so it is never deleted: %w", key, api.ErrNotOwned)
	case !observed:
		return fmt.Errorf("%s does not exist on the cluster: %w", key, api.ErrNotFound)
	}
	if err := c.canAct(); err != nil {
		return err
	}
	rt := c.currentRuntime()
	ds := c.currentDesired()
	if ds == nil {
		return c.notLoaded()
	}
	commit := ds.commit
	eng := rt.engine(true, "", c.opts.Logger)
	obs := &observer{c: c, commit: commit}
	ok := c.dispatcher.Submit(c.workCtx, dispatch.Job{
		Key: key,
		Run: func(jctx context.Context) error {
			_, err := eng.Delete(jctx, ds.desired, kind, name, obs)
			return err
		},
		Done: func(err error) {
			switch {
			case err == nil || obs.finished.Load():
			case obs.neverStarted():
				c.dropQueued(key)
			default:
				c.finish(key, vocab.ActionDelete, commit, nil, err.Error(), failedAttempt{}, 0, "")
			}
			c.afterAction()
		},
	})
	if !ok {
		return fmt.Errorf("an action on %s is already running: %w", key, api.ErrConflict)
	}
	c.mu.Lock()
	by := api.ActorFrom(ctx)
	c.markInflightLocked(ctx, key, vocab.ActionDelete, commit, by)
	c.log.Info("delete requested", "resource", key, "by", by.String())
	if r := c.resources[key]; r != nil {
		sum := r.sum
		sum.Status, sum.Health, sum.Action = vocab.StatusProgressing, vocab.HealthProgressing, vocab.ActionDelete
		sum.Reason, sum.Changes, sum.NeedsReboot = "deletion requested by hand", []vocab.Change{}, false
		sum.Progress = &api.Progress{Message: "delete queued"}
		c.setSummaryLocked(r, sum)
	}
	c.mu.Unlock()
	if _, declared := ds.byKey[key]; declared {
		c.log.Info("deleting a resource still declared in Git: the next pass creates it again unless its manifest is removed or its sync policy is manual", "resource", key)
	}
	return nil
}

// Plan is the plan document for a revision: "" is the watched one (the
// last good load); another branch, tag or commit is checked out on the
// side, for a pull request's impact preview.
func (c *Controller) Plan(ctx context.Context, revision string) (api.Plan, error) {
	rt := c.currentRuntime()
	if rt.client == nil {
		return api.Plan{}, fmt.Errorf("%s: %w", rt.clusterErr, api.ErrNotReady)
	}
	var ds *desiredState
	if revision == "" {
		if ds = c.currentDesired(); ds == nil {
			return api.Plan{}, c.notLoaded()
		}
	} else {
		if rt.syncer == nil {
			return api.Plan{}, fmt.Errorf("%s: %w", rt.sourceErr, api.ErrNotReady)
		}
		res, err := rt.syncer.ReadAt(ctx, revision)
		if err != nil {
			if errors.Is(err, source.ErrRevisionNotFound) || errors.Is(err, source.ErrPathNotFound) {
				return api.Plan{}, fmt.Errorf("%v: %w", err, api.ErrNotFound)
			}
			return api.Plan{}, err
		}
		if ds, err = c.load(res); err != nil {
			if inner := errors.Unwrap(err); inner != nil {
				err = inner
			}
			return api.Plan{}, invalidRevision(res.Commit.Hash, err)
		}
	}
	// Prune as the loop would, so the preview shows the deletions a merge
	// causes, and none from an empty load (the loop's guard, named).
	prune := rt.cfg.Reconcile.Prune && len(ds.set.Resources) > 0
	eng := rt.engine(prune, pruneHeld(rt.cfg.Reconcile.Prune, true, ds), c.opts.Logger)
	p, err := eng.Plan(ctx, ds.desired, ds.commit)
	if err != nil {
		return api.Plan{}, fmt.Errorf("observing the cluster: %w", err)
	}
	doc := p.Document()
	if revision == "" {
		// The head failed: say so, or the last good plan passes for the head's.
		c.mu.Lock()
		doc.LoadError = c.loadErr
		c.mu.Unlock()
	}
	return doc, nil
}

// TestSettings runs proxmops check (internal/check) on a cluster
// connection and a Git source, read into a throw-away cache.
func (c *Controller) TestSettings(ctx context.Context, v *config.Config) (api.TestResult, error) {
	ctx, cancel := context.WithTimeout(ctx, 45*time.Second)
	defer cancel()
	tmp, err := os.MkdirTemp("", "proxmops-source-test-")
	if err != nil {
		return api.TestResult{}, err
	}
	defer os.RemoveAll(tmp)
	return check.Run(ctx, check.Options{Config: v, Name: c.opts.Cluster, Secrets: c.opts.Secrets, AdjustClient: c.opts.PVE,
		Sync: func(ctx context.Context, s config.Source) (*source.Result, error) {
			s.CacheDir = tmp
			syncer, err := c.newSyncer(s)
			if err != nil {
				return nil, err
			}
			return syncer.Sync(ctx)
		}}), nil
}

// configProblems says what the settings leave missing (before a pass).
func (c *Controller) configProblems() string {
	rt := c.currentRuntime()
	var p []string
	for _, e := range []string{rt.sourceErr, rt.clusterErr} {
		if e != "" {
			p = append(p, e)
		}
	}
	return strings.Join(p, "; ")
}
