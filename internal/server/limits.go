package server

import (
	"time"

	"github.com/proxmops/proxmops/internal/auth"
)

// LoginLimit is one of the login limits: Threshold failed logins are free,
// then each further failure makes the next attempt wait Base, doubling up to
// Cap; failures are forgotten after Forget without one, or on a success.
// docs/configuration.md ("Login limits") lists the values.
type LoginLimit struct {
	Threshold         int
	Base, Cap, Forget time.Duration
}

// The login limits (OWASP ASVS 4.0 V2.2.1: soft lockout with growing
// delays, never a hard lockout; no more than 100 failures per hour on one
// account). An attempt must pass all three.
var (
	// LoginLimitPerClient bounds one address spraying many accounts.
	LoginLimitPerClient = LoginLimit{Threshold: 10, Base: time.Second, Cap: 5 * time.Minute, Forget: time.Hour}
	// LoginLimitPerClientAccount bounds one address guessing one account.
	LoginLimitPerClientAccount = LoginLimit{Threshold: 5, Base: time.Second, Cap: 5 * time.Minute, Forget: time.Hour}
	// LoginLimitPerAccount bounds many addresses guessing one account.
	LoginLimitPerAccount = LoginLimit{Threshold: 20, Base: time.Second, Cap: 5 * time.Minute, Forget: time.Hour}
)

// passwordChecks is how many argon2id hashes run at once; each takes
// auth.Params.Memory (64 MiB by default), and auth.QueuePerSlot times as
// many may wait before logins are answered 503.
const passwordChecks = 2

func newLoginLimiter(l LoginLimit, now func() time.Time) *auth.Limiter {
	lim := auth.NewLimiter(l.Threshold, l.Base, l.Cap, l.Forget)
	lim.SetClock(now)
	return lim
}
