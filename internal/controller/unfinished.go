package controller

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// An action cut by the daemon's stop (or failing with an unknown outcome)
// may go on in the cluster: Proxmox runs its task to the end whatever
// becomes of the client that started it (qemu-server API2/Qemu.pm
// create_vm forks a worker that writes the whole config at its end, or
// unlinks it on error). The history first says the action was interrupted
// or failed, then, once the cluster is read again, what became of it.

// settleCreateLocked records "created" for a resource whose create did not
// end in a success when a pass finds it on the cluster, owned (a guest
// still holding only "lock: create" is not owned yet and waits). It
// reports whether it did (caller holds mu). While an action an earlier
// pass submitted runs (busy: a create again, when the guest was missing),
// its own outcome is what the history records; one this pass submits
// (the start the interrupted create did not reach) follows "created".
func (c *Controller) settleCreateLocked(ctx context.Context, key string, a *engine.Action, sum api.ResourceSummary, ds *desiredState, rec *record, busy bool) bool {
	if rec.Unfinished != vocab.ActionCreate || !a.Owned || a.Action == vocab.ActionCreate || busy {
		return false
	}
	kind, name := splitKey(key)
	msg := "found on the cluster although its create reported a failure"
	if rec.Interrupted {
		msg = "the create interrupted by the daemon's stop went on in the cluster and finished: found there after the restart"
	}
	c.addHistoryLocked(ctx, kind, name, api.EventCreated, ds.commit, msg+"; "+foundAs(sum, ds))
	rec.Event, rec.Unfinished, rec.Interrupted = api.EventCreated, 0, false
	return true
}

// settleDeleteLocked records "deleted" for a resource whose delete did not
// end in a success when a pass no longer finds it (gone from the plan, or
// declared again and missing: no delete of it can be running then). It
// reports whether it did.
func (c *Controller) settleDeleteLocked(ctx context.Context, key, commit string, rec *record) bool {
	if rec.Unfinished != vocab.ActionDelete {
		return false
	}
	kind, name := splitKey(key)
	msg := "gone from the cluster although its delete reported a failure"
	if rec.Interrupted {
		msg = "the delete interrupted by the daemon's stop went on in the cluster and finished: gone from the cluster after the restart"
	}
	c.addHistoryLocked(ctx, kind, name, api.EventDeleted, commit, msg)
	rec.Event, rec.Unfinished, rec.Interrupted = api.EventDeleted, 0, false
	return true
}

// syncedMessage is the "synced" entry's message; after an interrupted
// update or reboot it says that the action is not repeated.
func syncedMessage(rec record, ds *desiredState) string {
	msg := "in sync with " + short(ds.commit)
	if rec.Interrupted && rec.Unfinished != 0 && rec.Unfinished != vocab.ActionNone {
		msg += fmt.Sprintf("; the %s interrupted by the daemon's stop is not repeated: the cluster already matches", rec.Unfinished)
	}
	return msg
}

// foundAs says in what state a pass found a resource.
func foundAs(sum api.ResourceSummary, ds *desiredState) string {
	if sum.Status == vocab.StatusSynced {
		return "in sync with " + short(ds.commit)
	}
	if sum.Reason == "" {
		return "status " + sum.Status.String()
	}
	return "status " + sum.Status.String() + ": " + sum.Reason
}
