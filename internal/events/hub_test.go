package events

import (
	"fmt"
	"testing"
)

func TestReplayAndSnapshotDecisions(t *testing.T) {
	h := NewHub(3)
	first := h.LastID()
	for i := range 5 {
		if err := h.Publish("resource", map[string]int{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	last := h.LastID()
	cases := []struct {
		name        string
		lastID      string
		wantResumed bool
		wantReplay  int
	}{
		{"fresh client", "", false, 0},
		{"up to date", last, true, 0},
		{"missed two", fmt.Sprintf("%s-%d", h.epoch, 3), true, 2},
		{"missed three, all buffered", fmt.Sprintf("%s-%d", h.epoch, 2), true, 3},
		{"older than the buffer", fmt.Sprintf("%s-%d", h.epoch, 1), false, 0},
		{"before any event, now gone", first, false, 0},
		{"another run of the daemon", "zzz-4", false, 0},
		{"from the future", fmt.Sprintf("%s-%d", h.epoch, 99), false, 0},
		{"garbage", "x", false, 0},
	}
	for _, c := range cases {
		sub, replay, resumed := h.Subscribe(c.lastID)
		if resumed != c.wantResumed || len(replay) != c.wantReplay {
			t.Errorf("%s: resumed=%v replay=%d", c.name, resumed, len(replay))
		}
		if len(replay) > 0 && replay[len(replay)-1].ID != last {
			t.Errorf("%s: replay ends at %s, want %s", c.name, replay[len(replay)-1].ID, last)
		}
		h.Unsubscribe(sub)
	}
}

func TestSlowSubscriberIsDroppedNotBlocking(t *testing.T) {
	h := NewHub(10)
	h.subBuf = 2
	slow, _, _ := h.Subscribe("")
	fast, _, _ := h.Subscribe("")
	var got int
	for i := range 5 {
		h.Publish("pass", i)
		for range len(fast.C) {
			<-fast.C
			got++
		}
	}
	n := 0
	for range slow.C {
		n++
	}
	if !slow.Lagged() || n != 2 || got != 5 || h.Subscribers() != 1 {
		t.Fatalf("slow lagged=%v got %d; fast got %d; subs %d", slow.Lagged(), n, got, h.Subscribers())
	}
	h.Unsubscribe(fast)
	h.Unsubscribe(fast) // twice is harmless
	if _, open := <-fast.C; open || fast.Lagged() {
		t.Fatal("unsubscribed channel still open or marked lagged")
	}
}
