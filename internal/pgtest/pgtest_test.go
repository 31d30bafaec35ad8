package pgtest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { Main(m) }

func TestDatabasesAreSeparateAndReachableByPortAndSocket(t *testing.T) {
	ctx := context.Background()
	srv := Shared(t)
	a, b := srv.CreateDatabase(t), srv.CreateDatabase(t)
	if a == b {
		t.Fatalf("same database twice: %s", a)
	}
	ca := Connect(t, a)
	if _, err := ca.Exec(ctx, `CREATE TABLE only_in_a (x int)`); err != nil {
		t.Fatal(err)
	}
	cb := Connect(t, b)
	var n int
	if err := cb.QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("table of a seen in b: %d %v", n, err)
	}
	// The same database over the Unix socket.
	name := a[strings.LastIndex(a, "/")+1 : strings.Index(a, "?")]
	cs := Connect(t, srv.SocketURL(name))
	if err := cs.QueryRow(ctx, `SELECT COUNT(*) FROM pg_tables WHERE tablename = 'only_in_a'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("socket: %d %v", n, err)
	}
	// Never the superuser's own role when run as root.
	var superuser string
	if err := cs.QueryRow(ctx, `SELECT current_user`).Scan(&superuser); err != nil || superuser != "postgres" {
		t.Fatalf("user %q %v", superuser, err)
	}
}

func TestStopEndsTheServerAndRemovesItsDirectory(t *testing.T) {
	srv, err := Start()
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	pid := srv.cmd.Process.Pid
	if err := srv.Stop(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(srv.Dir()); !os.IsNotExist(err) {
		t.Fatalf("directory left: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("postmaster %d still there: %v", pid, err)
	}
	ctx := context.Background()
	if c, err := pgx.Connect(ctx, srv.URL("postgres")); err == nil {
		c.Close(ctx)
		t.Fatal("connected after Stop")
	}
}

func TestBinDirFindsInstalledBinaries(t *testing.T) {
	dir, err := BinDir()
	if errors.Is(err, ErrNoBinaries) {
		t.Skip(err)
	}
	if err != nil || !isExec(dir+"/initdb") || !isExec(dir+"/postgres") {
		t.Fatalf("%q %v", dir, err)
	}
	// Without PATH, the distributions' versioned directories are found.
	if m, _ := filepath.Glob("/usr/lib/postgresql/*/bin/initdb"); len(m) > 0 {
		t.Setenv("PATH", "")
		if d, err := BinDir(); err != nil || !strings.HasPrefix(d, "/usr/lib/postgresql/") {
			t.Fatalf("without PATH: %q %v", d, err)
		}
	}
}
