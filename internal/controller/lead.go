package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// stateResources is the leader's status list, written after every pass
// when replicated, for the followers' live views.
const stateResources = "controller/resources"

// Lead runs the loop as the leader among replicas until ctx ends (the
// daemon's leader election ends it when leadership is lost or in doubt).
//
// It starts from what the store holds, not from this replica's memory:
// the statuses, the actions the previous leader left in flight (recorded
// as interrupted, never replayed), the pin and cfg, the settings read
// afresh; the first pass pulls Git, re-reads the cluster and plans from
// what it finds. When ctx ends it stops at once, with no shutdown grace:
// running actions are cancelled and nothing more is written to the store,
// since another replica may lead by then; that one records them as
// interrupted and re-reads the cluster.
func (c *Controller) Lead(ctx context.Context, cfg *config.Config) error {
	if err := c.beginTerm(ctx, cfg); err != nil {
		return err
	}
	c.leading.Store(true)
	defer c.leading.Store(false)
	fenced := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(fenced)
		c.fence()
	})
	defer func() {
		if !stop() {
			<-fenced // the next term must not race this one's fence
		}
	}()
	return c.Run(ctx)
}

// beginTerm makes the controller fit to lead again: fresh state from the
// store, a new work context, the given settings at the first pass.
func (c *Controller) beginTerm(ctx context.Context, cfg *config.Config) error {
	c.mu.Lock()
	c.records, c.inflight, c.ready = map[string]record{}, map[string]inflightAction{}, false
	c.mu.Unlock()
	if err := c.loadState(ctx); err != nil {
		return err
	}
	c.pins.mu.Lock()
	err := c.loadPins(ctx)
	c.pins.mu.Unlock()
	if err != nil {
		return err
	}
	c.workCtx, c.workCancel = context.WithCancel(context.WithoutCancel(ctx))
	c.fenced.Store(false)
	c.stopping.Store(false)
	c.abortOnStop.Store(true)
	if cfg != nil {
		c.rtMu.Lock()
		c.pending = cfg.Clone()
		c.rtMu.Unlock()
	}
	c.reqMu.Lock()
	c.nextPull, c.rescanAt = time.Time{}, time.Time{}
	c.reqMu.Unlock()
	return nil
}

// fence stops acting at once: no action starts, running ones are
// cancelled, and the store is no longer written.
func (c *Controller) fence() {
	c.stopping.Store(true)
	first := c.fenced.CompareAndSwap(false, true)
	c.workCancel()
	if first {
		c.log.Warn("leadership ended: actions stopped, nothing more is written; the next leader re-reads the cluster")
	}
}

// Leading tells whether this controller runs the loop as the leader.
func (c *Controller) Leading() bool { return c.leading.Load() }

// saveSnapshot writes the status list for the followers (replicated
// only).
func (c *Controller) saveSnapshot(ctx context.Context) {
	if !c.opts.Replicated || c.fenced.Load() {
		return
	}
	list, err := c.localResources()
	if err == nil {
		var b []byte
		if b, err = json.Marshal(list); err == nil {
			err = c.st.PutState(ctx, c.stateKey(stateResources), b)
		}
	}
	if err != nil {
		c.log.Warn("saving the status list for the other replicas failed", "err", err)
	}
}

// followerResources is the leader's last status list, as it wrote it.
func (c *Controller) followerResources(ctx context.Context) (api.ResourceList, error) {
	var list api.ResourceList
	b, ok, err := c.st.State(ctx, c.stateKey(stateResources))
	if err != nil {
		return list, err
	}
	if !ok {
		return api.ResourceList{Resources: []api.ResourceSummary{},
			PassStatus: api.PassStatus{SourceError: "no replica has led yet: the first leader's first pass fills this list"}}, nil
	}
	if err := json.Unmarshal(b, &list); err != nil {
		return list, fmt.Errorf("the leader's status list is unreadable: %w", err)
	}
	return list, nil
}
