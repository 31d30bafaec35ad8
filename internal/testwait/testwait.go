// Package testwait is how tests wait: on a condition, polled, never on a
// fixed sleep.
//
//	testwait.For(t, "the VM to run", 30*time.Second, func() bool { return vm.Running() })
package testwait

import (
	"testing"
	"time"
)

// first and most are the polling intervals: short at first, so a
// condition that is nearly met costs little, then longer, so a slow one
// does not spin.
const (
	first = 5 * time.Millisecond
	most  = 100 * time.Millisecond
)

// Until polls cond until it is true or within has passed, and says whether
// it came true. cond always runs at least once, and once more at the end.
func Until(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for pause := first; ; pause = min(2*pause, most) {
		if cond() {
			return true
		}
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		time.Sleep(min(pause, left))
	}
}

// For fails the test when cond is not true within the given time; what
// names the condition in the failure.
func For(t testing.TB, what string, within time.Duration, cond func() bool) {
	t.Helper()
	if !Until(within, cond) {
		t.Fatalf("timed out after %s waiting for %s", within, what)
	}
}
