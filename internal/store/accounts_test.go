package store

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
)

// Accounts, sessions and API tokens behave the same on every backend: user
// names are unique whatever their case, the last admin stays, a password
// change ends sessions, removing a user removes its sessions and tokens.
func TestAccountsSessionsAndTokens(t *testing.T) { eachBackend(t, testAccounts) }

func testAccounts(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	alice, err := s.CreateUser(ctx, "Alice", "h1", api.RoleAdmin)
	if err != nil || alice.ID == 0 {
		t.Fatalf("create: %+v %v", alice, err)
	}
	if _, err := s.CreateUser(ctx, "alice", "h", api.RoleViewer); !errors.Is(err, ErrExists) {
		t.Fatalf("same name in another case: %v", err)
	}
	bob, err := s.CreateUser(ctx, "bob", "h2", api.RoleViewer)
	if err != nil || bob.ID == alice.ID {
		t.Fatalf("second user: %+v %v", bob, err)
	}
	if _, err := s.CreateUser(ctx, "carol", "h", "root"); err == nil {
		t.Fatal("unknown role accepted")
	}
	if u, err := s.UserByName(ctx, "ALICE"); err != nil || u.ID != alice.ID || u.Username != "Alice" || u.PasswordHash != "h1" {
		t.Fatalf("by name: %+v %v", u, err)
	}
	if _, err := s.UserByName(ctx, "nobody"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown user: %v", err)
	}
	users, err := s.Users(ctx)
	if err != nil || len(users) != 2 || users[0].Username != "Alice" || users[1].Username != "bob" {
		t.Fatalf("users: %+v %v", users, err)
	}
	if _, err := s.SetRole(ctx, "alice", api.RoleViewer); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("demoting the last admin: %v", err)
	}
	if u, err := s.SetRole(ctx, "BOB", api.RoleAdmin); err != nil || u.Role != api.RoleAdmin {
		t.Fatalf("promote: %+v %v", u, err)
	}

	now := time.Now().Truncate(time.Millisecond)
	if err := s.CreateSession(ctx, []byte("sess-a"), alice.ID, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateSession(ctx, []byte("sess-b"), bob.ID, now, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	ss, err := s.SessionByHash(ctx, []byte("sess-a"))
	if err != nil || ss.Username != "Alice" || ss.Role != api.RoleAdmin || !ss.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Fatalf("session: %+v %v", ss, err)
	}
	if err := s.TouchSession(ctx, []byte("sess-a"), now.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ss, _ := s.SessionByHash(ctx, []byte("sess-a")); !ss.LastSeenAt.Equal(now.Add(time.Minute)) {
		t.Fatalf("touched: %+v", ss)
	}
	if err := s.SetPassword(ctx, "ALICE", "h3"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, []byte("sess-a")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("session after password change: %v", err)
	}
	if err := s.SetPassword(ctx, "nobody", "h"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("password of unknown user: %v", err)
	}
	// Idle and expired sessions go; a live one stays.
	if err := s.CreateSession(ctx, []byte("sess-old"), alice.ID, now.Add(-3*time.Hour), now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeleteStaleSessions(ctx, now, 2*time.Hour); err != nil || n != 1 {
		t.Fatalf("stale sessions: %d %v", n, err)
	}

	tok, err := s.CreateAPIToken(ctx, "ci", api.RoleViewer, []byte("tok-hash"), bob.ID)
	if err != nil || tok.ID == 0 {
		t.Fatalf("token: %+v %v", tok, err)
	}
	anon, err := s.CreateAPIToken(ctx, "bootstrap", api.RoleAdmin, []byte("tok-hash-2"), 0)
	if err != nil || anon.ID == tok.ID {
		t.Fatalf("token without creator: %+v %v", anon, err)
	}
	if _, err := s.CreateAPIToken(ctx, "dup", api.RoleViewer, []byte("tok-hash"), 0); err == nil {
		t.Fatal("a token hash twice")
	}
	got, err := s.APITokenByHash(ctx, []byte("tok-hash"))
	if err != nil || got.CreatedBy != "bob" || got.LastUsedAt != nil {
		t.Fatalf("token by hash: %+v %v", got, err)
	}
	if err := s.TouchAPIToken(ctx, tok.ID, now); err != nil {
		t.Fatal(err)
	}
	list, err := s.APITokens(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "ci" || list[0].LastUsedAt == nil || !list[0].LastUsedAt.Equal(now) || list[1].LastUsedAt != nil {
		t.Fatalf("tokens: %+v %v", list, err)
	}
	// Removing bob removes his session and his token, not the other one.
	if err := s.DeleteUser(ctx, "Bob"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.SessionByHash(ctx, []byte("sess-b")); !errors.Is(err, ErrNotFound) {
		t.Fatalf("session of a removed user: %v", err)
	}
	if ok, err := s.APITokenExists(ctx, tok.ID); ok || err != nil {
		t.Fatalf("token of a removed user: %v %v", ok, err)
	}
	if err := s.DeleteAPIToken(ctx, anon.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAPIToken(ctx, anon.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("deleting twice: %v", err)
	}
	if n, _ := s.CountUsers(ctx); n != 1 {
		t.Fatalf("users left: %d", n)
	}
}

func TestHistoryByCommitCountsEventsPerCommit(t *testing.T) { eachBackend(t, testHistoryByCommit) }

func testHistoryByCommit(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	for _, e := range []struct {
		name   string
		event  api.HistoryEvent
		commit string
	}{{"a", api.EventApplied, "c1"}, {"b", api.EventApplied, "c1"}, {"a", api.EventDrifted, "c1"}, {"a", api.EventApplied, "c2"}, {"c", api.EventApplied, "c3"}} {
		if _, err := s.AddHistory(ctx, "VirtualMachine", e.name, api.HistoryEntry{Event: e.event, Commit: e.commit, Time: at}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.HistoryByCommit(ctx, []string{"c1", "c2", "none"})
	if err != nil || len(got) != 2 || got["c1"][api.EventApplied] != 2 || got["c1"][api.EventDrifted] != 1 || got["c2"][api.EventApplied] != 1 {
		t.Fatalf("%+v %v", got, err)
	}
	h, err := s.History(ctx, "VirtualMachine", "a", 0)
	if err != nil || len(h) != 3 || !h[0].Time.Equal(at) || h[0].Commit != "c2" || h[0].ID <= h[1].ID {
		t.Fatalf("history: %+v %v", h, err)
	}
}

// Several processes on one database (replicas on PostgreSQL; a daemon and
// a CLI command on SQLite) open it at once and race for the setup token:
// the migrations run once and the token makes exactly one admin.
func TestConcurrentOpensAndSetupAreSerialised(t *testing.T) { eachBackend(t, testConcurrent) }

func testConcurrent(t *testing.T, opt Options) {
	ctx := context.Background()
	first := open(t, opt) // creates the key file the others read
	first.Close()
	const n = 4
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, opt) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		t.Cleanup(func() { stores[i].Close() })
	}
	var rows int
	if err := stores[0].db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(migrations) {
		t.Fatalf("schema_migrations: %d %v", rows, err)
	}
	if err := stores[0].SetSetupToken(ctx, []byte("setup")); err != nil {
		t.Fatal(err)
	}
	wins := make(chan string, n)
	for i := range n {
		wg.Go(func() {
			name := fmt.Sprintf("admin%d", i)
			if _, err := stores[i].CompleteSetup(ctx, []byte("setup"), name, "h"); err == nil {
				wins <- name
			} else if !errors.Is(err, ErrSetupDone) && !errors.Is(err, ErrSetupToken) {
				t.Errorf("%s: %v", name, err)
			}
		})
	}
	wg.Wait()
	close(wins)
	if len(wins) != 1 {
		t.Fatalf("%d setups succeeded with one token", len(wins))
	}
	if c, _ := stores[1].CountUsers(ctx); c != 1 {
		t.Fatalf("%d accounts", c)
	}
}

// The setup token belongs to the database: processes starting together on
// it (replicas) all get the one token, which works once and is then gone.
func TestSetupTokenIsCreatedOncePerDatabase(t *testing.T) { eachBackend(t, testEnsureSetupToken) }

func testEnsureSetupToken(t *testing.T, opt Options) {
	ctx := context.Background()
	open(t, opt).Close() // the key file
	hash := func(tok string) []byte { h := sha256.Sum256([]byte(tok)); return h[:] }
	var made atomic.Int32
	fresh := func() (string, []byte) {
		tok := fmt.Sprintf("pmsetup_%d", made.Add(1))
		return tok, hash(tok)
	}
	const n = 4
	tokens := make([]string, n)
	stores := make([]*Store, n)
	var wg sync.WaitGroup
	for i := range n {
		stores[i] = open(t, opt)
		wg.Go(func() {
			var err error
			if tokens[i], err = stores[i].EnsureSetupToken(ctx, fresh, hash); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	for _, tok := range tokens {
		if tok != tokens[0] || tok == "" {
			t.Fatalf("tokens %q (made %d)", tokens, made.Load())
		}
	}
	if made.Load() != 1 {
		t.Fatalf("%d tokens made", made.Load())
	}
	if _, err := stores[1].CompleteSetup(ctx, hash(tokens[0]), "admin", "h"); err != nil {
		t.Fatal(err)
	}
	var left int
	if err := stores[0].db.QueryRow(`SELECT COUNT(*) FROM encrypted WHERE name = ?`, setupTokenRecord).Scan(&left); err != nil || left != 0 {
		t.Fatalf("sealed token left: %d %v", left, err)
	}
	if _, err := stores[2].EnsureSetupToken(ctx, fresh, hash); !errors.Is(err, ErrSetupDone) {
		t.Fatalf("after setup: %v", err)
	}
}
