package engine

import (
	"context"
	"errors"
	"strings"
)

// guestPower holds the power operations of one guest, VM or container.
type guestPower struct {
	shutdown      func() error
	start, reboot func() (string, error)
}

// convergePower is the last step of updating a guest, the same for VMs and
// containers: bring the power state to the declared one, reboot to apply
// pending changes when the manifest asks for it, and report the changes
// that were refused (a shrink, a creation-only field) as the step's error.
func (x *execCtx) convergePower(ctx context.Context, uo updateOptions, running, needsReboot bool, refused []string, p guestPower) error {
	switch {
	case uo.state == "stopped" && running:
		if err := p.shutdown(); err != nil {
			return err
		}
	case uo.state == "running" && !running:
		if err := x.task(ctx, "starting", p.start); err != nil {
			return err
		}
	case running && uo.state != "stopped" && uo.rebootIfNeeded && needsReboot:
		if err := x.task(ctx, "rebooting to apply pending changes", p.reboot); err != nil {
			return err
		}
	}
	if len(refused) > 0 {
		return errors.New(strings.Join(refused, "; "))
	}
	return nil
}
