package controller

import (
	"strings"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// notificationOf is the notification a history event is: the entry of a
// failure, a drift, or a resource in sync again. A conflict is written as
// a failure and announced as a conflict (noteTransitionLocked). Adoptions
// and rollbacks (a person's doing) and moves (HA's or a migration's, left
// as they are) are not announced: no event of the contract names them.
func notificationOf(ev api.HistoryEvent) api.NotificationEvent {
	switch ev {
	case api.EventFailed:
		return api.NotifyFailed
	case api.EventDrifted:
		return api.NotifyDrift
	case api.EventCreated, api.EventApplied, api.EventSynced, api.EventDeleted:
		return api.NotifySynced
	}
	return ""
}

// notifyLocked hands one transition to the notifier (caller holds mu). A
// fenced replica no longer leads: the leader announces.
func (c *Controller) notifyLocked(n api.Notice) {
	if c.fenced.Load() {
		return
	}
	n.Cluster = c.Name()
	if n.Time.IsZero() {
		n.Time = c.clock.Now()
	}
	n.Time = n.Time.UTC()
	c.opts.Notifier.Notify(n)
}

// noteHealthLocked is the one place a resource's health is announced: a
// degraded notification when it becomes Degraded, once, until it is
// Healthy again (a retry passing through Progressing is no recovery).
// Whatever decides health (the plan, an action's outcome, a health
// check) reaches it through setSummaryLocked (caller holds mu).
func (c *Controller) noteHealthLocked(key string, h vocab.Health, reason string) {
	rec, ok := c.records[key]
	if !ok {
		return
	}
	switch {
	case h == vocab.HealthDegraded && !rec.Degraded:
		rec.Degraded = true
		var commit string
		if c.desired != nil {
			commit = c.desired.commit
		}
		kind, name := splitKey(key)
		c.notifyLocked(api.Notice{Event: api.NotifyDegraded, Kind: kind, Name: name, Revision: commit, Message: reason})
	case h == vocab.HealthHealthy && rec.Degraded:
		rec.Degraded = false
	default:
		return
	}
	c.records[key] = rec
	c.dirty = true
}

// noteSourceLocked announces the source (Git, the manifests, the cluster's
// configuration or observation) becoming unreadable, once until a pass
// reads it well again (caller holds mu).
func (c *Controller) noteSourceLocked(revision string) {
	// The cluster being unobservable is announced like a source that
	// cannot be read: nothing can be reconciled until it is back.
	msg := strings.Join(nonEmpty(c.sourceErr, c.clusterErr), "; ")
	if msg == "" && c.loadErr != nil && len(c.loadErr.Errors) > 0 {
		msg = "manifests at " + short(c.loadErr.Revision) + " are invalid: " + c.loadErr.Errors[0]
	}
	switch {
	case msg != "" && !c.sourceDown:
		c.sourceDown = true
		c.notifyLocked(api.Notice{Event: api.NotifySourceError, Revision: revision, Message: msg})
	case msg == "":
		c.sourceDown = false
	}
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
