package fanout

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/logring"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
)

type replica struct {
	f       *Fanout
	hub     *events.Hub
	logs    *logring.Ring
	log     *slog.Logger
	signals chan string
}

func startReplica(t *testing.T, dbURL, name string) *replica {
	t.Helper()
	return startReplicaWith(t, dbURL, name, nil)
}

func startReplicaWith(t *testing.T, dbURL, name string, snapshot func(context.Context) (any, bool)) *replica {
	t.Helper()
	r := &replica{hub: events.NewHub(64), logs: logring.New(100), signals: make(chan string, 8)}
	r.log = slog.New(r.logs.Handler(slog.DiscardHandler, slog.LevelInfo))
	f, err := New(Options{URL: dbURL, Replica: name, Hub: r.hub, Logs: r.logs, OnSignal: func(s string) { r.signals <- s }, Snapshot: snapshot})
	if err != nil {
		t.Fatal(err)
	}
	r.f = f
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := f.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case <-f.Ready():
	case <-time.After(20 * time.Second):
		t.Fatal("the fan-out never listened")
	}
	return r
}

func next(t *testing.T, sub *events.Subscription) events.Event {
	t.Helper()
	select {
	case ev := <-sub.C:
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no event arrived")
		return events.Event{}
	}
}

// Events published on one replica reach the other's hub in order, small
// ones in the notification and one over the 8000-byte limit through the
// table, and reach the publisher's own hub exactly once.
func TestEventsReachTheOtherReplicaInOrderWhateverTheirSize(t *testing.T) {
	dbURL := testDB(t)
	a, b := startReplica(t, dbURL, "a"), startReplica(t, dbURL, "b")
	subA, _, _ := a.hub.Subscribe("")
	subB, _, _ := b.hub.Subscribe("")
	big := api.ResourceSummary{Kind: "VM", Name: "big", Reason: strings.Repeat("x", 20000)}
	sent := []struct {
		typ     string
		payload any
	}{
		{api.SSEResource, api.ResourceSummary{Kind: "VM", Name: "web-1"}},
		{api.SSEResource, big},
		{api.SSEPass, api.PassEvent{Revision: "abc"}},
	}
	for _, s := range sent {
		if err := a.f.Publish(s.typ, s.payload); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range sent {
		want, _ := json.Marshal(s.payload)
		for _, got := range []events.Event{next(t, subA), next(t, subB)} {
			if got.Type != s.typ || string(got.Data) != string(want) {
				t.Fatalf("event %d: got %s %.80s, want %s %.80s", i, got.Type, got.Data, s.typ, want)
			}
		}
	}
	select {
	case ev := <-subA.C:
		t.Fatalf("a got its own event back: %s", ev.Type)
	case <-time.After(300 * time.Millisecond):
	}
}

// A replica's log lines show on the other with the replica they came
// from, and are not sent back.
func TestLogLinesReachTheOtherReplicaOnce(t *testing.T) {
	dbURL := testDB(t)
	a, b := startReplica(t, dbURL, "a"), startReplica(t, dbURL, "b")
	a.log.Info("applying", "resource", "VM/web-1")
	var got api.LogLine
	testwait.For(t, "the line on b", 10*time.Second, func() bool {
		for _, l := range b.logs.Lines(0) {
			if l.Msg == "applying" {
				got = l
				return true
			}
		}
		return false
	})
	if got.Attrs[RelayedFrom] != "a" || got.Attrs["resource"] != "VM/web-1" {
		t.Fatalf("relayed line: %+v", got)
	}
	b.log.Info("following")
	testwait.For(t, "b's own line on a", 10*time.Second, func() bool {
		for _, l := range a.logs.Lines(0) {
			if l.Msg == "following" {
				return true
			}
		}
		return false
	})
	n := 0
	for _, l := range a.logs.Lines(0) {
		if l.Msg == "applying" {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("a holds its line %d times: %+v", n, a.logs.Lines(0))
	}
}

func TestSignalsReachTheOthersOnly(t *testing.T) {
	dbURL := testDB(t)
	a, b := startReplica(t, dbURL, "a"), startReplica(t, dbURL, "b")
	a.f.Signal("settings")
	select {
	case s := <-b.signals:
		if s != "settings" {
			t.Fatalf("b got %q", s)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b got no signal")
	}
	select {
	case s := <-a.signals:
		t.Fatalf("a got its own signal %q", s)
	case <-time.After(300 * time.Millisecond):
	}
}

// A follower's listening connection is lost and comes back: what the leader
// published meanwhile never reached it, so it asks for the leader's status
// list, which arrives as one "snapshot" event its browsers apply whole. A
// first connection asks for nothing.
func TestAReplicaListeningAgainGetsTheLeadersCurrentList(t *testing.T) {
	dbURL := testDB(t)
	current := api.ResourceList{PassStatus: api.PassStatus{Revision: "r1"}, Resources: []api.ResourceSummary{{Kind: "VM", Name: "web-1", Status: vocab.StatusProgressing}}}
	var mu sync.Mutex
	leader := startReplicaWith(t, dbURL, "a", func(context.Context) (any, bool) {
		mu.Lock()
		defer mu.Unlock()
		return current, true
	})
	follower := startReplicaWith(t, dbURL, "b", func(context.Context) (any, bool) { return nil, false })
	sub, _, _ := follower.hub.Subscribe("")
	if n := follower.f.Resyncs(); n != 0 {
		t.Fatalf("%d resyncs at the first connection", n)
	}

	admin := pgtest.Connect(t, dbURL)
	var ended int
	if err := admin.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
		WHERE application_name = 'proxmops fan-out listener (b)'`).Scan(&ended); err != nil || ended != 1 {
		t.Fatalf("ending b's listening session: %d ended, %v", ended, err)
	}
	// The leader moves on while b does not listen: this event is lost to b.
	mu.Lock()
	current = api.ResourceList{PassStatus: api.PassStatus{Revision: "r2"}, Resources: []api.ResourceSummary{{Kind: "VM", Name: "web-1", Status: vocab.StatusSynced}}}
	mu.Unlock()
	if err := leader.f.Publish(api.SSEResource, current.Resources[0]); err != nil {
		t.Fatal(err)
	}

	deadline := time.After(20 * time.Second)
	for {
		select {
		case ev := <-sub.C:
			if ev.Type != api.SSESnapshot {
				continue // the lost event, if b listened again in time for it
			}
			var got api.ResourceList
			if err := json.Unmarshal(ev.Data, &got); err != nil {
				t.Fatal(err)
			}
			if got.Revision != "r2" || len(got.Resources) != 1 || got.Resources[0].Status != vocab.StatusSynced {
				t.Fatalf("b's snapshot after listening again: %+v", got)
			}
			if n := follower.f.Resyncs(); n != 1 {
				t.Fatalf("%d resyncs, want 1", n)
			}
			return
		case <-deadline:
			t.Fatalf("b listened again (%d resyncs) but got no status list", follower.f.Resyncs())
		}
	}
}
