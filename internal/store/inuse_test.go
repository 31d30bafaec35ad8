package store

import (
	"context"
	"errors"
	"testing"
)

// On PostgreSQL, daemons mark the database in use (several at once) and a
// command that must run alone is refused until the last one is gone; on
// SQLite both are no-ops (the writer lock file does the job).
func TestCommandsThatRunAloneWaitForEveryDaemon(t *testing.T) { eachBackend(t, testInUse) }

func testInUse(t *testing.T, opt Options) {
	ctx := context.Background()
	a, b, cmd := open(t, opt), open(t, opt), open(t, opt)
	relA, err := a.MarkInUse(ctx)
	if err != nil {
		t.Fatal(err)
	}
	relB, err := b.MarkInUse(ctx)
	if err != nil {
		t.Fatalf("a second daemon: %v", err)
	}
	_, err = cmd.LockAlone(ctx)
	if opt.URL == "" {
		if err != nil {
			t.Fatalf("sqlite: %v", err)
		}
		return
	}
	if !errors.Is(err, ErrInUse) {
		t.Fatalf("while two daemons run: %v", err)
	}
	relA()
	if _, err := cmd.LockAlone(ctx); !errors.Is(err, ErrInUse) {
		t.Fatalf("while one daemon runs: %v", err)
	}
	relB()
	relCmd, err := cmd.LockAlone(ctx)
	if err != nil {
		t.Fatalf("with no daemon: %v", err)
	}
	if _, err := a.MarkInUse(ctx); !errors.Is(err, ErrInUse) {
		t.Fatalf("a daemon while the command runs: %v", err)
	}
	relCmd()
	if rel, err := a.MarkInUse(ctx); err != nil {
		t.Fatalf("a daemon after the command: %v", err)
	} else {
		rel()
	}
}
