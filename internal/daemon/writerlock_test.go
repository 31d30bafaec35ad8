package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
)

const lockChildEnv = "PROXMOPS_TEST_LOCK_CHILD_DB"

type runningDaemon struct {
	addr string
	out  *testwait.Buffer
	stop context.CancelFunc
	done chan error
}

func lockTestConfig(t *testing.T, db string) *config.Config {
	cfg := config.Defaults()
	cfg.Server.DatabasePath = db
	cfg.Source.CacheDir = filepath.Join(filepath.Dir(db), "cache")
	return cfg
}

// startDaemon runs Run on a loopback port; it returns once serving, or the
// error Run ended with.
func startDaemon(t *testing.T, db string) (*runningDaemon, error) {
	t.Helper()
	return startDaemonWith(t, lockTestConfig(t, db))
}

// startDaemonWith is startDaemon with a configuration of the test's own.
func startDaemonWith(t *testing.T, cfg *config.Config) (*runningDaemon, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	d := &runningDaemon{addr: ln.Addr().String(), out: &testwait.Buffer{}, stop: cancel, done: make(chan error, 1)}
	started := make(chan struct{})
	go func() {
		d.done <- Run(ctx, Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
			Listener: ln, SetupOutput: d.out, Started: func(net.Addr) { close(started) }})
	}()
	select {
	case <-started:
		t.Cleanup(func() { d.shutdown(t) })
		return d, nil
	case err := <-d.done:
		cancel()
		ln.Close()
		return nil, err
	case <-time.After(30 * time.Second):
		cancel()
		t.Fatal("daemon did not start")
	}
	return nil, nil
}

func (d *runningDaemon) shutdown(t *testing.T) {
	if d.stop == nil {
		return
	}
	d.stop()
	d.stop = nil
	if err := <-d.done; err != nil && !errors.Is(err, context.Canceled) {
		t.Errorf("daemon ended with %v", err)
	}
}

var setupTokenRE = regexp.MustCompile(`pmsetup_[A-Za-z0-9_-]+`)

func TestSecondDaemonOnOneDatabaseIsRefusedWithTheFirstOnesPIDAndAddress(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	first, err := startDaemon(t, db)
	if err != nil {
		t.Fatal(err)
	}
	token := setupTokenRE.FindString(first.out.String())
	if token == "" {
		t.Fatalf("no setup token: %q", first.out.String())
	}
	_, err = startDaemon(t, db)
	var le *store.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("second daemon: %v", err)
	}
	for _, want := range []string{"pid " + strconv.Itoa(os.Getpid()), first.addr} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("refusal %q lacks %q", err, want)
		}
	}
	first.shutdown(t)
	// Once the first stops, a new one starts, and the setup token the user
	// may already have copied still works: same token, not a new one.
	again, err := startDaemon(t, db)
	if err != nil {
		t.Fatalf("after the first stopped: %v", err)
	}
	if got := setupTokenRE.FindString(again.out.String()); got != token {
		t.Fatalf("setup token changed across restarts: %q then %q", token, got)
	}
}

// TestWriterLockChild is the daemon TestWriterLockIsReleasedWhenTheDaemonIsKilled
// SIGKILLs.
func TestWriterLockChild(t *testing.T) {
	db := os.Getenv(lockChildEnv)
	if db == "" {
		t.Skip("run as a child process by TestWriterLockIsReleasedWhenTheDaemonIsKilled")
	}
	d, err := startDaemon(t, db)
	if err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("child serving on " + d.addr + "\n")
	<-d.done
}

func TestWriterLockIsReleasedWhenTheDaemonIsKilled(t *testing.T) {
	db := filepath.Join(t.TempDir(), "p.db")
	out := &testwait.Buffer{}
	child := exec.Command(os.Args[0], "-test.run=^TestWriterLockChild$", "-test.count=1", "-test.v")
	child.Env = append(os.Environ(), lockChildEnv+"="+db)
	child.Stdout, child.Stderr = out, out
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	if !testwait.Until(60*time.Second, func() bool { return strings.Contains(out.String(), "child serving on") }) {
		t.Fatalf("child did not start: %s", out.String())
	}
	_, err := startDaemon(t, db)
	if err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(child.Process.Pid)) {
		t.Fatalf("while the child runs: %v", err)
	}
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = child.Wait()
	if _, err := startDaemon(t, db); err != nil {
		t.Fatalf("after SIGKILL the lock is still held: %v", err)
	}
}
