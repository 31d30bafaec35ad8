package controller

import (
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// markUnobservedLocked turns every resource of a pass that could not
// observe the cluster Unknown, with the cluster's error as the reason
// (caller holds mu). What the last good observation read stays in place
// (the detail's observed state) and LastObserved says when that was; the
// declared resources of the loaded commit that were never observed appear
// too, so a new commit is visible while the cluster is down. Nothing is
// written to the history or the records: the outage says nothing about a
// resource, and the pass that sees the cluster again judges it against its
// last known status. A resource whose action is still queued or running
// keeps that action's summary until its outcome is recorded.
func (c *Controller) markUnobservedLocked(ds *desiredState) {
	reason := "cluster unreachable: " + c.clusterErr
	for key, desired := range ds.byKey {
		if c.resources[key] == nil {
			kind, name := splitKey(key)
			md := desired.Meta()
			sum := api.ResourceSummary{Kind: kind, Name: name, Node: desired.Node(), VMID: desired.VMID(),
				SyncPolicy: md.Sync(), File: desired.Source().File, DependsOn: dependenciesOf(desired), Tags: append([]string{}, md.Tags...),
				Summary: manifest.Summary(desired)}
			c.resources[key] = &resource{desired: desired, sum: sum}
		}
	}
	for key, r := range c.resources {
		if c.dispatcher.Busy(key) {
			continue
		}
		if d := ds.byKey[key]; d != nil {
			r.desired = d
		}
		sum := r.sum
		sum.Status, sum.Health = vocab.StatusUnknown, vocab.HealthUnknown
		sum.Action, sum.Changes, sum.NeedsReboot, sum.Progress = vocab.ActionNone, []vocab.Change{}, false, nil
		sum.Reason = reason
		sum.LastObserved = nil
		if r.action != nil && c.observedAt != nil {
			// Planned by an earlier pass: it was read then.
			at := *c.observedAt
			sum.LastObserved = &at
		}
		c.setSummaryLocked(r, sum)
	}
}

// noteClusterUp sets the cluster's gauges from a pass that tried to
// observe it: up, the last observation and, from one that observed it,
// the drift-check period its plan worked to.
func (c *Controller) noteClusterUp(ev api.PassEvent) {
	up := 0.0
	if ev.ClusterError == "" {
		up = 1
	}
	c.m.ClusterUp.WithLabelValues(c.Name()).Set(up)
	if ev.LastObserved != nil {
		c.m.LastObservation.WithLabelValues(c.Name()).Set(float64(ev.LastObserved.UnixNano()) / float64(time.Second))
	}
	if ev.ClusterError == "" {
		c.m.DriftPeriod.WithLabelValues(c.Name()).Set(c.currentRuntime().reads.Period().Seconds())
	}
}
