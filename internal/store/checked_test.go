package store

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/pgtest"
)

// A check that refuses (the leader's fence: its term ended) leaves the
// state and the history as they were; one that passes runs in the write's
// own transaction and the write lands.
func TestACheckedWriteLandsOnlyWhenItsCheckPasses(t *testing.T) {
	eachBackend(t, func(t *testing.T, opt Options) {
		ctx := context.Background()
		s := open(t, opt)
		deposed := errors.New("term 1 ended")
		refuse := func(context.Context, *sql.Tx) error { return deposed }
		var inTx int
		pass := func(ctx context.Context, tx *sql.Tx) error {
			inTx++
			// The check sees the transaction the write runs in.
			var one int
			return tx.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
		}
		if err := s.PutState(ctx, "k", []byte("before")); err != nil {
			t.Fatal(err)
		}
		if err := s.PutStateChecked(ctx, "k", []byte("after"), refuse); !errors.Is(err, deposed) {
			t.Fatalf("refused put: %v", err)
		}
		if err := s.DeleteStateChecked(ctx, "k", refuse); !errors.Is(err, deposed) {
			t.Fatalf("refused delete: %v", err)
		}
		if _, err := s.AddHistoryChecked(ctx, "VirtualMachine", "web", api.HistoryEntry{Event: api.EventApplied}, refuse); !errors.Is(err, deposed) {
			t.Fatalf("refused history: %v", err)
		}
		if v, ok, _ := s.State(ctx, "k"); !ok || string(v) != "before" {
			t.Fatalf("state after refused writes: %q %v", v, ok)
		}
		if h, _ := s.History(ctx, "VirtualMachine", "web", 0); len(h) != 0 {
			t.Fatalf("history after a refused write: %+v", h)
		}

		if err := s.PutStateChecked(ctx, "k", []byte("after"), pass); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AddHistoryChecked(ctx, "VirtualMachine", "web", api.HistoryEntry{Event: api.EventApplied}, pass); err != nil {
			t.Fatal(err)
		}
		if v, _, _ := s.State(ctx, "k"); string(v) != "after" {
			t.Fatalf("state after a passed put: %q", v)
		}
		if h, _ := s.History(ctx, "VirtualMachine", "web", 0); len(h) != 1 {
			t.Fatalf("history after a passed write: %+v", h)
		}
		if err := s.DeleteStateChecked(ctx, "k", pass); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := s.State(ctx, "k"); ok {
			t.Fatal("state left after a passed delete")
		}
		if inTx != 3 {
			t.Fatalf("the check ran %d times for 3 writes", inTx)
		}
	})
}

// On PostgreSQL the server ends a store transaction left waiting (its
// process cut off or frozen) instead of letting it hold the write lock
// every replica's writes take; a URL's own setting is kept.
func TestAStoreTransactionLeftWaitingIsEndedByTheServer(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ query, want string }{
		{"", "10s"},
		{"&idle_in_transaction_session_timeout=3000", "3s"},
	} {
		opt := Options{URL: pgtest.Database(t) + c.query, KeyFile: t.TempDir() + "/proxmops.key"}
		s := open(t, opt)
		var got string
		if err := s.DB().QueryRowContext(ctx, `SHOW idle_in_transaction_session_timeout`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Fatalf("URL …%s: idle_in_transaction_session_timeout %s, want %s", c.query, got, c.want)
		}
	}
}
