package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pgtest"
	"github.com/proxmops/proxmops/internal/secrets"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// backend makes a new empty database: the Options that open it (again).
type backend struct {
	name  string
	fresh func(t *testing.T) Options
}

// backends are the engines every store test runs on.
var backends = []backend{
	{"sqlite", func(t *testing.T) Options {
		return Options{Path: filepath.Join(t.TempDir(), "db", "proxmops.db")}
	}},
	{"postgres", func(t *testing.T) Options {
		return Options{URL: pgtest.Database(t), KeyFile: filepath.Join(t.TempDir(), "proxmops.key")}
	}},
}

// eachBackend runs f on a new database of every backend.
func eachBackend(t *testing.T, f func(t *testing.T, opt Options)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { f(t, b.fresh(t)) })
	}
}

// keyFile is where the store keeps the key of opt.
func keyFile(opt Options) string {
	if opt.KeyFile != "" {
		return opt.KeyFile
	}
	return opt.Path + ".key"
}

func open(t *testing.T, opt Options) *Store {
	t.Helper()
	s, err := Open(context.Background(), opt)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ptr[T any](v T) *T { return &v }

func TestMigrationsAreVersionedAndRerunnable(t *testing.T) { eachBackend(t, testMigrations) }

func testMigrations(t *testing.T, base Options) {
	ctx := context.Background()
	s := open(t, base)
	if _, err := s.CreateUser(ctx, "alice", "hash", api.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	v, err := s.Version(ctx)
	if err != nil || v != SchemaVersion() {
		t.Fatalf("version %d, %v; want %d", v, err, SchemaVersion())
	}
	s.Close()

	// Re-opening applies nothing twice and keeps the data.
	s2 := open(t, base)
	var rows int
	if err := s2.db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&rows); err != nil || rows != len(migrations) {
		t.Fatalf("schema_migrations has %d rows (%v), want %d", rows, err, len(migrations))
	}
	if n, _ := s2.CountUsers(ctx); n != 1 {
		t.Fatalf("users after reopen: %d", n)
	}
	// A database from the first release only gets the later steps.
	if err := undoActorStep(s2); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.db.Exec(`DELETE FROM schema_migrations WHERE version >= 2; DROP TABLE state; ALTER TABLE history DROP COLUMN user_name; DROP TABLE pull_requests`); err != nil {
		t.Fatal(err)
	}
	s2.Close()
	s3 := open(t, base)
	if err := s3.PutState(ctx, "k", []byte("v")); err != nil {
		t.Fatalf("state table not recreated: %v", err)
	}
	if _, err := s3.AddHistory(ctx, "VirtualMachine", "a", api.HistoryEntry{Event: api.EventAdopted, Actor: &api.Actor{Kind: api.ActorUser, Name: "alice"}}); err != nil {
		t.Fatalf("history user column not added: %v", err)
	}
	if err := s3.PutPullRequest(ctx, api.PullRequest{Forge: "github", Number: 1}); err != nil {
		t.Fatalf("pull_requests table not recreated: %v", err)
	}
	// A newer schema is refused.
	if _, err := s3.db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (999, 'future', 0)`); err != nil {
		t.Fatal(err)
	}
	s3.Close()
	if _, err := Open(ctx, base); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("newer schema: %v", err)
	}
	files := []string{keyFile(base)}
	if base.Path != "" {
		files = append(files, base.Path)
	}
	for _, p := range files {
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v", p, fi.Mode().Perm(), err)
		}
	}
}

func TestHistoryRetention(t *testing.T) { eachBackend(t, testHistoryRetention) }

func testHistoryRetention(t *testing.T, opt Options) {
	ctx := context.Background()
	opt.HistoryPerResource, opt.HistoryTotal = 3, 5
	s := open(t, opt)
	for i := range 5 {
		if _, err := s.AddHistory(ctx, "VirtualMachine", "a", api.HistoryEntry{Event: api.EventDrifted, Message: string(rune('0' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "VirtualMachine", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 3 || h[0].Message != "4" || h[2].Message != "2" {
		t.Fatalf("per-resource cap: %+v", h)
	}
	for i := range 4 {
		if _, err := s.AddHistory(ctx, "Container", "b", api.HistoryEntry{Event: api.EventApplied, Commit: "c", Message: string(rune('0' + i))}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := s.CountHistory(ctx); n != 5 {
		t.Fatalf("total cap: %d entries, want 5", n)
	}
	// The overall cap removes the oldest entries, whichever resource.
	h, _ = s.History(ctx, "VirtualMachine", "a", 0)
	b, _ := s.History(ctx, "Container", "b", 0)
	if len(h) != 2 || len(b) != 3 || h[0].Message != "4" {
		t.Fatalf("after total cap: a=%+v b=%+v", h, b)
	}
	if one, _ := s.History(ctx, "Container", "b", 1); len(one) != 1 || one[0].Message != "3" {
		t.Fatalf("limit: %+v", one)
	}
}

// A history entry keeps who caused it; entries without a user read back
// with none.
func TestHistoryKeepsTheUser(t *testing.T) { eachBackend(t, testHistoryUser) }

func testHistoryUser(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	for _, e := range []api.HistoryEntry{
		{Event: api.EventSynced, Commit: "c1", Message: "synced"},
		{Event: api.EventAdopted, Commit: "c2", Message: "adopted", Actor: &api.Actor{Kind: api.ActorUser, Name: "alice", Via: api.ViaOIDC}},
	} {
		if _, err := s.AddHistory(ctx, "VirtualMachine", "a", e); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.History(ctx, "VirtualMachine", "a", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 2 || *h[0].Actor != (api.Actor{Kind: api.ActorUser, Name: "alice", Via: api.ViaOIDC}) || h[0].Commit != "c2" || h[1].Actor != nil {
		t.Fatalf("history: %+v", h)
	}
}

func TestTamperedCiphertextIsRefused(t *testing.T) { eachBackend(t, testTampered) }

func testTampered(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	o := config.Overlay{Cluster: &config.ClusterOverlay{TokenSecret: ptr("s3cret-cluster")},
		Source: &config.SourceOverlay{Token: ptr("s3cret-git")}}
	if err := s.SaveOverlay(ctx, o); err != nil {
		t.Fatal(err)
	}
	got, err := s.Overlay(ctx)
	if err != nil || *got.Cluster.TokenSecret != "s3cret-cluster" {
		t.Fatalf("read back: %+v %v", got, err)
	}
	// One flipped bit.
	var v []byte
	if err := s.db.QueryRow(`SELECT value FROM encrypted WHERE name = ?`, recCluster).Scan(&v); err != nil {
		t.Fatal(err)
	}
	v[len(v)-20] ^= 1
	if _, err := s.db.Exec(`UPDATE encrypted SET value = ? WHERE name = ?`, v, recCluster); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Overlay(ctx); !errors.Is(err, secrets.ErrTampered) {
		t.Fatalf("flipped bit: %v", err)
	}
	// A valid ciphertext moved onto another record.
	if err := s.SaveOverlay(ctx, o); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.Exec(`UPDATE encrypted SET value = (SELECT value FROM encrypted WHERE name = ?) WHERE name = ?`, recSource, recCluster); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Overlay(ctx); !errors.Is(err, secrets.ErrTampered) {
		t.Fatalf("swapped records: %v", err)
	}
}

func TestWrongOrMissingKeyIsRefused(t *testing.T) { eachBackend(t, testWrongKey) }

func testWrongKey(t *testing.T, base Options) {
	ctx := context.Background()
	s := open(t, base)
	s.Close()
	other, _ := secrets.GenerateKey()
	withKey := base
	withKey.EncryptionKey = other.String()
	if _, err := Open(ctx, withKey); !errors.Is(err, secrets.ErrWrongKey) {
		t.Fatalf("wrong key: %v", err)
	}
	os.Remove(keyFile(base))
	if _, err := Open(ctx, base); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing key file: %v", err)
	}
	if err := os.WriteFile(keyFile(base), []byte(other.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, base); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("readable key file: %v", err)
	}
}

func TestRotationKeepsEverythingReadable(t *testing.T) { eachBackend(t, testRotation) }

func testRotation(t *testing.T, base Options) {
	ctx := context.Background()
	kf := keyFile(base)
	s := open(t, base)
	o := config.Overlay{Cluster: &config.ClusterOverlay{TokenSecret: ptr("pve-secret")},
		Source: &config.SourceOverlay{SSHKey: ptr("-----BEGIN KEY-----"), RepoURL: ptr("file:///r")}}
	if err := s.SaveOverlay(ctx, o); err != nil {
		t.Fatal(err)
	}
	oldKey, _ := os.ReadFile(kf)
	oldID := s.KeyID()
	newID, err := s.RotateKey(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	newKey, _ := os.ReadFile(kf)
	if newID == oldID || string(newKey) == string(oldKey) || s.KeyID() != newID {
		t.Fatalf("key not rotated: %s -> %s", oldID, newID)
	}
	var ids []string
	rows, _ := s.db.Query(`SELECT value FROM encrypted`)
	for rows.Next() {
		var v []byte
		rows.Scan(&v)
		ids = append(ids, secrets.SealedKeyID(v))
	}
	rows.Close()
	for _, id := range ids {
		if id != newID {
			t.Fatalf("record still sealed with %s", id)
		}
	}
	got, err := s.Overlay(ctx)
	if err != nil || *got.Source.SSHKey != "-----BEGIN KEY-----" || *got.Cluster.TokenSecret != "pve-secret" {
		t.Fatalf("after rotation: %+v %v", got, err)
	}
	s.Close()
	s2 := open(t, base)
	if got, err := s2.Overlay(ctx); err != nil || *got.Cluster.TokenSecret != "pve-secret" {
		t.Fatalf("after reopen: %+v %v", got, err)
	}
	// With the key in the environment, the new key is given.
	s2.Close()
	envKey, _ := secrets.ParseKey(string(newKey))
	os.Remove(kf)
	withEnv := base
	withEnv.EncryptionKey = envKey.String()
	s3 := open(t, withEnv)
	if _, err := s3.RotateKey(ctx, ""); err == nil {
		t.Fatal("env rotation without a new key succeeded")
	}
	next, _ := secrets.GenerateKey()
	if _, err := s3.RotateKey(ctx, next.String()); err != nil {
		t.Fatal(err)
	}
	s3.Close()
	withEnv.EncryptionKey = next.String()
	s4 := open(t, withEnv)
	if got, err := s4.Overlay(ctx); err != nil || *got.Cluster.TokenSecret != "pve-secret" {
		t.Fatalf("after env rotation: %+v %v", got, err)
	}
}

func TestInterruptedRotationIsFinishedOnOpen(t *testing.T) {
	for _, b := range backends {
		for _, committed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/committed=%v", b.name, committed), func(t *testing.T) {
				testInterruptedRotation(t, b.fresh(t), committed)
			})
		}
	}
}

func testInterruptedRotation(t *testing.T, base Options, committed bool) {
	ctx := context.Background()
	kf := keyFile(base)
	s := open(t, base)
	if err := s.SaveOverlay(ctx, config.Overlay{Source: &config.SourceOverlay{Token: ptr("git-token")}}); err != nil {
		t.Fatal(err)
	}
	next, _ := secrets.GenerateKey()
	if err := secrets.WriteKeyFile(kf+".new", next); err != nil {
		t.Fatal(err)
	}
	if committed { // crashed after the transaction, before the rename
		s.mu.RLock()
		old := s.key
		s.mu.RUnlock()
		if err := s.reencrypt(ctx, old, next); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s2 := open(t, base)
	if s2.KeyID() != next.ID() {
		t.Fatalf("committed=%v: key %s, want %s", committed, s2.KeyID(), next.ID())
	}
	if _, err := os.Stat(kf + ".new"); !os.IsNotExist(err) {
		t.Fatalf("pending key file left: %v", err)
	}
	if got, err := s2.Overlay(ctx); err != nil || *got.Source.Token != "git-token" {
		t.Fatalf("committed=%v: %+v %v", committed, got, err)
	}
}

func TestSetupTokenIsSingleUse(t *testing.T) { eachBackend(t, testSetupToken) }

func testSetupToken(t *testing.T, opt Options) {
	ctx := context.Background()
	s := open(t, opt)
	if err := s.SetSetupToken(ctx, []byte("hash-1")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteSetup(ctx, []byte("wrong"), "admin", "h"); !errors.Is(err, ErrSetupToken) {
		t.Fatalf("wrong token: %v", err)
	}
	if _, err := s.CompleteSetup(ctx, []byte("hash-1"), "admin", "h"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CompleteSetup(ctx, []byte("hash-1"), "admin2", "h"); !errors.Is(err, ErrSetupDone) {
		t.Fatalf("second use: %v", err)
	}
	if err := s.SetSetupToken(ctx, []byte("hash-2")); !errors.Is(err, ErrSetupDone) {
		t.Fatalf("new token after setup: %v", err)
	}
	if err := s.DeleteUser(ctx, "ADMIN"); !errors.Is(err, ErrLastAdmin) {
		t.Fatalf("deleting the last admin: %v", err)
	}
}

// The events of one commit are listed across resources, newest first, each
// naming its resource; other commits' are not.
func TestHistoryAtListsOneCommitAcrossResources(t *testing.T) {
	ctx := context.Background()
	s := open(t, Options{Path: filepath.Join(t.TempDir(), "p.db")})
	c1, c2 := strings.Repeat("a", 40), strings.Repeat("b", 40)
	for _, e := range []struct {
		kind, name string
		entry      api.HistoryEntry
	}{
		{"VirtualMachine", "app-01", api.HistoryEntry{Event: api.EventCreated, Commit: c1, Message: "create done"}},
		{"Container", "dns-01", api.HistoryEntry{Event: api.EventFailed, Commit: c1, Message: "create failed"}},
		{"VirtualMachine", "app-01", api.HistoryEntry{Event: api.EventApplied, Commit: c2, Message: "update done"}},
		{"Iso", "debian-12", api.HistoryEntry{Event: api.EventCreated, Commit: c1, Message: "download done", Actor: &api.Actor{Kind: api.ActorToken, Name: "alice"}}},
	} {
		if _, err := s.AddHistory(ctx, e.kind, e.name, e.entry); err != nil {
			t.Fatal(err)
		}
	}
	h, err := s.HistoryAt(ctx, c1, 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h {
		by := ""
		if e.Actor != nil {
			by = e.Actor.String()
		}
		got = append(got, e.Kind+"/"+e.Name+" "+string(e.Event)+" "+e.Message+" "+by)
	}
	want := []string{"Iso/debian-12 created download done token alice", "Container/dns-01 failed create failed ", "VirtualMachine/app-01 created create done "}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("history at %s:\n%s\nwant:\n%s", c1, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if one, _ := s.HistoryAt(ctx, c1, 1); len(one) != 1 || one[0].Name != "debian-12" {
		t.Fatalf("limit: %+v", one)
	}
	if none, err := s.HistoryAt(ctx, strings.Repeat("c", 40), 0); err != nil || len(none) != 0 {
		t.Fatalf("unknown commit: %+v %v", none, err)
	}
	// A resource's own history does not repeat whose it is.
	if own, _ := s.History(ctx, "VirtualMachine", "app-01", 0); len(own) != 2 || own[0].Kind != "" || own[0].Name != "" {
		t.Fatalf("own history: %+v", own)
	}
}

// undoActorStep takes a database back to the schema before history
// actors and single sign-on sessions.
func undoActorStep(s *Store) error {
	for _, q := range []string{`DROP TABLE oidc_sessions`, `ALTER TABLE history DROP COLUMN actor_kind`,
		`ALTER TABLE history DROP COLUMN actor_name`, `ALTER TABLE history DROP COLUMN actor_via`,
		`ALTER TABLE history DROP COLUMN actor_delivery`, `ALTER TABLE history DROP COLUMN actor_token`, `DELETE FROM schema_migrations WHERE version >= 5`} {
		if _, err := s.db.Exec(q); err != nil {
			return err
		}
	}
	return nil
}

// The user_name column held a user, or a token by the prefix "token:";
// the upgrade turns both into typed actors.
func TestHistoryUserNamesBecomeTypedActors(t *testing.T) { eachBackend(t, testUserNamesToActors) }

func testUserNamesToActors(t *testing.T, base Options) {
	ctx := context.Background()
	s := open(t, base)
	if err := undoActorStep(s); err != nil {
		t.Fatal(err)
	}
	for _, who := range []string{"", "alice", "token:ci", "token:my laptop (cli, bob.smith)"} {
		if _, err := s.db.Exec(`INSERT INTO history (kind, name, event, commit_sha, time, message, user_name) VALUES ('VirtualMachine', 'a', 'adopted', 'c', 1, ?, ?)`, who, who); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s2 := open(t, base)
	h, err := s2.History(ctx, "VirtualMachine", "a", 0)
	if err != nil || len(h) != 4 {
		t.Fatalf("history: %+v %v", h, err)
	}
	want := []*api.Actor{{Kind: api.ActorCLI, Name: "bob.smith", Token: "my laptop"}, {Kind: api.ActorToken, Name: "ci"}, {Kind: api.ActorUser, Name: "alice"}, nil}
	for i, w := range want {
		if (w == nil) != (h[i].Actor == nil) || w != nil && *w != *h[i].Actor {
			t.Errorf("entry %d: actor %+v, want %+v", i, h[i].Actor, w)
		}
	}
}
