package testwait

import (
	"testing"
	"time"
)

func TestUntilReturnsOnceTheConditionHolds(t *testing.T) {
	calls := 0
	if !Until(10*time.Second, func() bool { calls++; return calls == 3 }) {
		t.Fatal("the condition held on the third call, Until said it never did")
	}
	if calls != 3 {
		t.Errorf("%d calls, want 3: Until went on polling after the condition held", calls)
	}
}

func TestUntilGivesUpAfterTheTimeAndChecksOnceMore(t *testing.T) {
	start := time.Now()
	calls := 0
	if Until(30*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("a condition that never holds was reported as met")
	}
	if took := time.Since(start); took < 30*time.Millisecond || took > 5*time.Second {
		t.Errorf("gave up after %s, want about 30ms", took)
	}
	if calls < 2 {
		t.Errorf("%d calls, want the first and one at the deadline", calls)
	}
}
