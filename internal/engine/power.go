package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/pve"
)

// guestPower holds the power operations of one guest, VM or container.
type guestPower struct {
	shutdown      func() error
	start, reboot func() (string, error)
	// For a guest under HA: its resource id, the shutdown request (a
	// hastop task with the timeout) and the status read that says whether
	// it is HA-managed and how far it got.
	sid         string
	haManaged   bool // as observed; the status read right before acting wins
	requestStop func(secs int) (string, error)
	status      func() (pve.VMStatus, error)
}

// convergePower is the last step of updating a guest, the same for VMs and
// containers: bring the power state to the declared one, reboot to apply
// pending changes when the manifest asks for it, and report the changes
// that were refused (a shrink, a creation-only field) as the step's error.
// An HA-managed guest is started and stopped through the HA stack; proxmops
// never asks it for a hard stop (the HA stack itself forces a VM's
// shutdown at the timeout).
//
// running is the power state the plan saw; unless fresh (read right after
// proxmops created the guest), it is read again from status/current before
// a start, stop or reboot: the plan may be older than the guest's state (a
// plan shown, then confirmed; a daemon's plan applied after an earlier
// action; someone at the console), and Proxmox refuses a start of a
// running guest and a reboot of a stopped one.
func (x *execCtx) convergePower(ctx context.Context, uo updateOptions, running, fresh, needsReboot bool, refused []string, p guestPower) error {
	if !fresh && p.status != nil && powerActs(uo, running, needsReboot) {
		if st, err := p.status(); err == nil {
			running = st.Status == "running"
		}
	}
	switch {
	case uo.state == "stopped" && running:
		if ha, st := x.underHA(p); ha {
			if err := x.haPower(ctx, p, st, "stopped", uo.shutdownTimeout); err != nil {
				return err
			}
		} else if err := p.shutdown(); err != nil {
			return err
		}
	case uo.state == "running" && !running && fresh:
		if err := x.startFresh(ctx, p); err != nil {
			return err
		}
	case uo.state == "running" && !running:
		if ha, st := x.underHA(p); ha {
			if err := x.haPower(ctx, p, st, "running", 0); err != nil {
				return err
			}
		} else if err := x.task(ctx, "starting", p.start); err != nil {
			return err
		}
	case running && uo.state != "stopped" && uo.rebootIfNeeded && needsReboot:
		// A reboot has no HA branch in Proxmox: the guest stays up as far
		// as the HA stack can tell.
		if err := x.task(ctx, "rebooting to apply pending changes", p.reboot); err != nil {
			return err
		}
	}
	if len(refused) > 0 {
		return &terminalError{strings.Join(refused, "; ")}
	}
	return nil
}

// powerActs says whether convergePower would start, stop or reboot a
// guest in that power state.
func powerActs(uo updateOptions, running, needsReboot bool) bool {
	switch {
	case uo.state == "stopped" && running, uo.state == "running" && !running:
		return true
	}
	return running && uo.state != "stopped" && uo.rebootIfNeeded && needsReboot
}

// underHA says whether the guest is HA-managed now: its status/current
// says so (ha.managed); when it cannot be read, the observation decides.
func (x *execCtx) underHA(p guestPower) (bool, pve.VMStatus) {
	if p.status == nil {
		return p.haManaged, pve.VMStatus{}
	}
	if st, err := p.status(); err == nil {
		return st.HA.Managed != 0, st
	}
	return p.haManaged, pve.VMStatus{}
}

// haErrorState is the error for a guest whose HA service is in the error
// state: the HA stack takes no request for it but "disabled"
// (check_service_state in API2/HA/Resources.pm).
func haErrorState(sid string) error {
	return fmt.Errorf("the HA stack has %s in its error state and takes no start or stop for it: fix the cause, set its HA state to disabled (ha-manager set %s --state disabled), then apply again", sid, sid)
}

// haSettle is how long the HA stack may take to act on a request beyond
// the shutdown timeout: the CRM and then the LRM act in 10-second rounds.
const haSettle = 2 * time.Minute

// haPower brings an HA-managed guest to a power state. Proxmox turns the
// start of such a guest into a hastart task ("ha-manager set <sid> --state
// started") and its shutdown into a hastop task ("ha-manager crm-command
// stop <sid> <timeout>", which also sets the requested state to stopped);
// both end as soon as the request is queued, and the HA stack acts on its
// next rounds. A stop would be "crm-command stop <sid> 0", a hard stop,
// which proxmops never asks for. So: request, then wait for the guest.
func (x *execCtx) haPower(ctx context.Context, p guestPower, st pve.VMStatus, want string, timeout time.Duration) error {
	if st.HA.State == "error" {
		return haErrorState(p.sid)
	}
	msg, request := "asking the HA stack to start it ("+p.sid+")", p.start
	if want == "stopped" {
		if timeout <= 0 {
			timeout = x.e.opts.ShutdownTimeout
		}
		secs := max(int(timeout/time.Second), 1)
		msg = fmt.Sprintf("asking the HA stack to shut it down (%s, up to %ds)", p.sid, secs)
		request = func() (string, error) { return p.requestStop(secs) }
	} else {
		timeout = 0
	}
	if err := x.task(ctx, msg, request); err != nil {
		return err
	}
	return x.awaitHA(ctx, p, want, timeout)
}

// startFresh starts a guest proxmops just made without reading its status
// first: it is stopped, and under HA only if someone added it meanwhile
// (Proxmox refuses HA resources for guests that do not exist and destroys
// none still under HA without purge); then Proxmox itself turns the start
// into a hastart task (qemu-server API2/Qemu.pm vm_start, pve-container
// API2/LXC/Status.pm vm_start), whose type says to await the HA stack as
// haPower does.
func (x *execCtx) startFresh(ctx context.Context, p guestPower) error {
	var upid string
	if err := x.task(ctx, "starting", func() (string, error) {
		u, err := p.start()
		upid = u
		return u, err
	}); err != nil {
		return err
	}
	if u, err := pve.ParseUPID(upid); err == nil && u.Type == "hastart" && p.status != nil {
		return x.awaitHA(ctx, p, "running", 0)
	}
	return nil
}

// awaitHA waits, after a request to the HA stack, for the guest to be in
// the wanted power state.
func (x *execCtx) awaitHA(ctx context.Context, p guestPower, want string, timeout time.Duration) error {
	x.progress("waiting for the HA stack to have it "+want, "", -1)
	deadline := time.Now().Add(timeout + haSettle)
	delay := 100 * time.Millisecond
	for {
		st, err := p.status()
		switch {
		case err == nil && st.Status == want:
			return nil
		case err == nil && st.HA.State == "error":
			return haErrorState(p.sid)
		case err != nil && ctx.Err() != nil:
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s is not %s %s after the HA stack was asked (HA-managed guests are stopped and started only through it)", p.sid, want, timeout+haSettle)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
		delay = min(2*delay, 2*time.Second)
	}
}

// leaveHA removes a guest from the HA resources before it is deleted, so
// the HA stack neither restarts it nor stands between proxmops and the
// delete (which also purges it from HA, as destroy with purge=1 does).
func (x *execCtx) leaveHA(ctx context.Context, st pve.VMStatus, sid string) error {
	if st.HA.Managed == 0 {
		return nil
	}
	x.progress("removing "+sid+" from the HA resources", "", -1)
	err := x.e.client.HADeleteResource(ctx, sid)
	var api *pve.APIError
	if errors.As(err, &api) && strings.Contains(api.Message, "not HA managed") {
		return nil // removed meanwhile
	}
	if err != nil {
		return fmt.Errorf("removing %s from the HA resources before the delete: %w", sid, err)
	}
	return nil
}

// markHA notes on an action that the HA stack manages its guest.
func markHA(a *Action, g *Guest) {
	if g.HAManaged() {
		a.HA = g.HASID()
	}
}

// haPowerNote says in a plan how the power change of an HA-managed guest
// is carried out. The HA stack's shutdown of a VM is forced at the timeout
// (pve-ha-manager Resources/PVEVM.pm shutdown: forceStop), that of a
// container is not (PVECT.pm): the container keeps running and its
// service goes to the error state (LRM.pm exec_resource_agent).
func haPowerNote(g *Guest, power string) string {
	if power != "stop" {
		return fmt.Sprintf("HA-managed as %s: the HA stack is asked to start it and the guest is awaited", g.HASID())
	}
	note := fmt.Sprintf("HA-managed as %s: the HA stack is asked for a shutdown and the guest is awaited; ", g.HASID())
	if g.Type == "lxc" {
		return note + "a container still running at the shutdown timeout is not forced: it keeps running and its HA service goes to the error state"
	}
	return note + "the HA stack stops a VM still running at the shutdown timeout hard (forceStop)"
}

// haDeleteNote completes the reason of a delete of an HA-managed guest.
func haDeleteNote(a *Action, g *Guest) string {
	if !g.HAManaged() {
		return ""
	}
	markHA(a, g)
	return fmt.Sprintf("; HA-managed as %s: removed from the HA resources first", g.HASID())
}
