package daemon

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pgtest"
)

// No TestMain here: pgtest gives these few tests a server each.

func pgTestConfig(t *testing.T, url, dir string) *config.Config {
	cfg := config.Defaults()
	cfg.Server.Database, cfg.Server.DatabasePath = url, ""
	cfg.Server.KeyFile = filepath.Join(dir, "proxmops.key")
	cfg.Source.CacheDir = filepath.Join(dir, "cache")
	return cfg
}

// On PostgreSQL the SQLite writer lock does not apply: a second daemon on
// the database starts beside the first, and both show the database's one
// setup token.
func TestSecondDaemonOnOnePostgreSQLDatabaseStarts(t *testing.T) {
	url, dir := pgtest.Database(t), t.TempDir()
	first, err := startDaemonWith(t, pgTestConfig(t, url, dir))
	if err != nil {
		t.Fatal(err)
	}
	second, err := startDaemonWith(t, pgTestConfig(t, url, dir))
	if err != nil {
		t.Fatalf("second daemon on PostgreSQL: %v", err)
	}
	t1, t2 := setupTokenRE.FindString(first.out.String()), setupTokenRE.FindString(second.out.String())
	if t1 == "" || t1 != t2 {
		t.Fatalf("setup tokens %q and %q", t1, t2)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".lock") || strings.Contains(e.Name(), "setup-token") {
			t.Errorf("file %s beside a PostgreSQL daemon", e.Name())
		}
	}
	// Without the key file, a daemon on a database holding secrets is
	// refused with the way out in the message.
	os.Remove(filepath.Join(dir, "proxmops.key"))
	if _, err := startDaemonWith(t, pgTestConfig(t, url, dir)); err == nil || !strings.Contains(err.Error(), "copy it from the replica") {
		t.Fatalf("without the key file: %v", err)
	}
}
