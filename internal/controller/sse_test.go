package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestSSEStreamsStatusChanges reads GET /api/v1/events with a real HTTP
// client while a commit makes a resource go Progressing, then Synced.
func TestSSEStreamsStatusChanges(t *testing.T) {
	e := syncedVM(t, 0.2, "a", 420, 1)
	repo := e.repo

	// A session of the first admin; the stream starts with a snapshot of
	// the whole state.
	events, first := serve(t, e, nil).eventsFromSnapshot(t)
	var snap api.ResourceList
	if err := json.Unmarshal([]byte(first[1]), &snap); err != nil || find(snap, "VirtualMachine/a") == nil {
		t.Fatalf("snapshot %q: %v", first[1], err)
	}

	repo.Commit("more cores", map[string]string{"vms/a.yaml": vmManifest("a", 420, 2)})
	e.c.Refresh(context.Background())
	isA := func(want vocab.Status) func(string, string) bool {
		return func(typ, data string) bool {
			var s api.ResourceSummary
			return typ == api.SSEResource && json.Unmarshal([]byte(data), &s) == nil &&
				s.Kind+"/"+s.Name == "VirtualMachine/a" && s.Status == want
		}
	}
	nextEvent(t, events, isA(vocab.StatusProgressing))
	nextEvent(t, events, isA(vocab.StatusSynced))
	nextEvent(t, events, func(typ, _ string) bool { return typ == api.SSEPass })
}

// readSSE parses a text/event-stream into (event, data) pairs.
func readSSE(r io.Reader, out chan<- [2]string) {
	defer close(out)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var typ, data string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if typ != "" || data != "" {
				out <- [2]string{typ, data}
			}
			typ, data = "", ""
		case strings.HasPrefix(line, "event:"):
			typ = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			data += strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
		}
	}
}

// nextEvent waits up to 30 seconds for the next event ok accepts.
func nextEvent(t *testing.T, events <-chan [2]string, ok func(typ, data string) bool) [2]string {
	t.Helper()
	return nextOn(t, events, time.After(30*time.Second), "the event stream ended", "timed out waiting for an event",
		func(ev [2]string) bool { return ok(ev[0], ev[1]) })
}

// nextOn reads c until ok accepts a value and answers it; the test fails
// with ended when c closes first, with timedOut when timeout fires first.
func nextOn[T any](t testing.TB, c <-chan T, timeout <-chan time.Time, ended, timedOut string, ok func(T) bool) T {
	t.Helper()
	for {
		select {
		case v, more := <-c:
			if !more {
				t.Fatal(ended)
			}
			if ok(v) {
				return v
			}
		case <-timeout:
			t.Fatal(timedOut)
		}
	}
}
