package controller

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
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

	// A session of the first admin, set up with the server's setup token.
	c := serveAPI(t, e)
	hc, base := c.HC, c.Base
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/v1/events", nil)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Fatalf("content type %q", ct)
	}
	events := make(chan [2]string, 256)
	go readSSE(resp.Body, events)

	// The stream starts with a snapshot of the whole state.
	first := nextEvent(t, events, func(typ, _ string) bool { return typ == api.SSESnapshot })
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

func nextEvent(t *testing.T, events <-chan [2]string, ok func(typ, data string) bool) [2]string {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, more := <-events:
			if !more {
				t.Fatal("the event stream ended")
			}
			if ok(ev[0], ev[1]) {
				return ev
			}
		case <-timeout:
			t.Fatal("timed out waiting for an event")
		}
	}
}
