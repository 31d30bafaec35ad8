package engine

// A rollback of an HA-managed guest. Proxmox's rollback stops the guest
// itself (pve-guest-common AbstractConfig.pm snapshot_rollback,
// __snapshot_rollback_vm_stop) and holds the config lock "rollback" while
// the volumes roll back; the HA stack's LRM restarts a stopped service
// whose requested state is started (pve-ha-manager LRM.pm
// exec_resource_agent), and that start fails on the lock, again and again
// until the service ends in the error state. So proxmops sets the HA
// resource to "ignored" first (Config.pm service_check_ha_state: an ignored
// resource behaves as unmanaged, and the CRM drops its service), waits
// until the CRM has let go of it, rolls back, and restores the requested
// state.

import (
	"context"
	"fmt"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
)

// haHold is an HA resource set to ignored for a rollback.
type haHold struct {
	sid, state string // the requested state to restore
}

// haRequestedState is the requested state of an HA resource ("" is the
// default, started).
func haRequestedState(r pve.HAResource) string {
	if r.State == "" || r.State == "enabled" {
		return "started"
	}
	return r.State
}

// holdHA takes an HA-managed guest away from the HA stack for a rollback;
// nil when the guest is not HA-managed. It refuses a service in the error
// state, and says so when the HA resource cannot be set (Sys.Console on /).
func (e *Engine) holdHA(ctx context.Context, t *guestTarget, progress func(string)) (*haHold, error) {
	if t.ha.Managed == 0 {
		return nil, nil
	}
	sid := pve.HASID(t.typ, t.vmid)
	if t.ha.State == "error" {
		return nil, haErrorState(sid)
	}
	res, err := e.client.HAResource(ctx, sid)
	if err != nil {
		return nil, fmt.Errorf("reading the HA resource %s: %w", sid, err)
	}
	h := &haHold{sid: sid, state: haRequestedState(res)}
	progress(fmt.Sprintf("setting the HA resource %s to ignored for the rollback, so that the HA stack does not restart the guest Proxmox stops (it goes back to %s afterwards)", sid, h.state))
	if err := e.client.HASetState(ctx, sid, "ignored"); err != nil {
		return nil, fmt.Errorf("%s/%s is HA-managed as %s: the HA stack would restart the guest during the rollback, so proxmops sets the resource to ignored first, and could not (this needs Sys.Console on /): %w", t.kind, t.name, sid, err)
	}
	deadline := time.Now().Add(haSettle)
	for delay := 50 * time.Millisecond; ; delay = min(2*delay, 2*time.Second) {
		st, err := e.client.HAServiceCRMState(ctx, sid)
		if err == nil && st == "" {
			return h, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			rerr := e.releaseHA(ctx, h)
			return nil, fmt.Errorf("the HA stack still manages %s %s after it was set to ignored (restoring it: %v)", sid, haSettle, rerr)
		}
		select {
		case <-ctx.Done():
		case <-time.After(delay):
		}
	}
}

// releaseHA puts the HA resource's requested state back, even when ctx has
// been cancelled; the HA stack then takes the guest over as it is.
func (e *Engine) releaseHA(ctx context.Context, h *haHold) error {
	if h == nil {
		return nil
	}
	if err := e.client.HASetState(context.WithoutCancel(ctx), h.sid, h.state); err != nil {
		return fmt.Errorf("the HA resource %s is left ignored; set it back with ha-manager set %s --state %s: %w", h.sid, h.sid, h.state, err)
	}
	return nil
}
