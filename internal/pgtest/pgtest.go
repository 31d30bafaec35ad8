// Package pgtest starts a throwaway PostgreSQL server for tests: initdb into
// a temporary directory, trust authentication, listening on a Unix socket in
// that directory and on a free loopback port, run as the `postgres` user when
// the test runs as root (PostgreSQL refuses to run as root).
//
// One server serves a whole test binary: call Main from TestMain, then
// Database in each test for a database of its own, dropped on cleanup.
//
//	func TestMain(m *testing.M) { pgtest.Main(m) }
//
//	func TestX(t *testing.T) {
//		url := pgtest.Database(t) // postgres://postgres@127.0.0.1:PORT/t_3_x?sslmode=disable
//	}
//
// Tests are skipped, with a message saying so, only when no PostgreSQL
// binaries are installed; any other failure fails the test.
package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver of OpenDB
)

// ErrNoBinaries means no PostgreSQL installation was found.
var ErrNoBinaries = errors.New("no PostgreSQL binaries (initdb, postgres) in PATH or /usr/lib/postgresql/*/bin: install PostgreSQL (Debian: apt-get install postgresql) to run these tests")

// BinDir finds the directory holding initdb and postgres: PATH first, then
// the distributions' versioned directories, newest version first.
func BinDir() (string, error) {
	if p, err := exec.LookPath("initdb"); err == nil {
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "postgres")); err == nil {
			return dir, nil
		}
	}
	var dirs []string
	for _, pat := range []string{"/usr/lib/postgresql/*/bin", "/usr/pgsql-*/bin", "/usr/local/pgsql/bin"} {
		m, _ := filepath.Glob(pat)
		dirs = append(dirs, m...)
	}
	sort.SliceStable(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, d := range dirs {
		if isExec(filepath.Join(d, "initdb")) && isExec(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

var digits = regexp.MustCompile(`[0-9]+`)

func version(dir string) int {
	n, _ := strconv.Atoi(digits.FindString(dir))
	return n
}

func isExec(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}

// Server is a running throwaway PostgreSQL.
type Server struct {
	dir  string // temporary directory: data/, the socket, the log
	port int
	cmd  *exec.Cmd
	done chan struct{} // closed when the postmaster exited
	err  error         // its exit status, once done

	seq atomic.Int64
}

// Start initialises a cluster in a new temporary directory and starts it.
func Start() (*Server, error) {
	bin, err := BinDir()
	if err != nil {
		return nil, err
	}
	cred, base, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(base, "proxmops-pg-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	if err := s.start(bin, cred); err != nil {
		s.cleanup()
		return nil, err
	}
	return s, nil
}

// runAs is who runs PostgreSQL: nil (this process' user) unless root, then
// the `postgres` account (or `nobody`), with the temporary directory under
// /tmp so that account can reach it.
func runAs() (*syscall.Credential, string, error) {
	if os.Geteuid() != 0 {
		return nil, "", nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, _ := strconv.ParseUint(u.Uid, 10, 32)
		gid, _ := strconv.ParseUint(u.Gid, 10, 32)
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, "/tmp", nil
	}
	return nil, "", errors.New("running as root, and neither a postgres nor a nobody account exists to run PostgreSQL as")
}

func (s *Server) start(bin string, cred *syscall.Credential) error {
	if cred != nil {
		if err := os.Chown(s.dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return err
		}
	}
	data := filepath.Join(s.dir, "data")
	initdb := command(cred, filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres",
		"--auth=trust", "--encoding=UTF8", "--no-locale", "--no-sync")
	if out, err := initdb.CombinedOutput(); err != nil {
		return fmt.Errorf("initdb: %v\n%s", err, out)
	}
	var last error
	for range 5 { // a free port can be taken between choosing and binding it
		port, err := freePort()
		if err != nil {
			return err
		}
		if last = s.run(bin, cred, data, port); last == nil {
			return nil
		}
		if !strings.Contains(last.Error(), "could not bind") && !strings.Contains(last.Error(), "in use") {
			return last
		}
	}
	return last
}

func (s *Server) run(bin string, cred *syscall.Credential, data string, port int) error {
	logPath := filepath.Join(s.dir, "postgres.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	if cred != nil {
		_ = os.Chown(logPath, int(cred.Uid), int(cred.Gid))
	}
	cmd := command(cred, filepath.Join(bin, "postgres"), "-D", data,
		"-k", s.dir, "-h", "127.0.0.1", "-p", strconv.Itoa(port),
		// Throwaway data: durability costs time and buys nothing.
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "shared_buffers=16MB", "-c", "max_connections=300",
		"-c", "logging_collector=off", "-c", "log_min_messages=warning")
	cmd.Stdout, cmd.Stderr = logf, logf
	// The postmaster dies with this process, even when the test binary is
	// killed on a timeout (the setting survives the credential change).
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	s.cmd, s.port, s.done = cmd, port, make(chan struct{})
	go func() { s.err = cmd.Wait(); close(s.done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		s.kill()
		b, _ := os.ReadFile(logPath)
		return fmt.Errorf("postgres did not start: %w\n%s", err, b)
	}
	return nil
}

func command(cred *syscall.Credential, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Env = []string{"LC_ALL=C", "LANG=C", "PATH=/usr/bin:/bin"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	return cmd
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.URL("postgres"))
		cancel()
		if err == nil {
			return conn.Close(context.Background())
		}
		select {
		case <-s.done:
			return fmt.Errorf("postgres exited: %v", s.err)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// URL is the connection URL of database db over the loopback port.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, url.PathEscape(db))
}

// SocketURL is the connection URL of database db over the Unix socket.
func (s *Server) SocketURL(db string) string {
	return fmt.Sprintf("postgres://postgres@/%s?host=%s&port=%d", url.PathEscape(db), url.QueryEscape(s.dir), s.port)
}

// Port is the loopback TCP port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir is the server's temporary directory (data/, the socket, postgres.log).
func (s *Server) Dir() string { return s.dir }

// Exec runs statements on the maintenance database "postgres".
func (s *Server) Exec(ctx context.Context, sql string, args ...any) error {
	conn, err := pgx.Connect(ctx, s.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

var unsafe = regexp.MustCompile(`[^a-z0-9_]+`)

// CreateDatabase creates a new empty database named after the test and
// returns its URL; it is dropped (connections closed first) on cleanup.
func (s *Server) CreateDatabase(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("t_%d_%s", s.seq.Add(1), unsafe.ReplaceAllString(strings.ToLower(t.Name()), "_"))
	if len(name) > 63 {
		name = name[:63]
	}
	ctx := context.Background()
	if err := s.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := s.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: drop database %s: %v", name, err)
		}
	})
	return s.URL(name)
}

// Stop shuts the server down (fast shutdown, then kill) and removes its
// directory.
func (s *Server) Stop() error {
	if s == nil {
		return nil
	}
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			s.kill()
		}
	}
	return s.cleanup()
}

func (s *Server) kill() {
	_ = s.cmd.Process.Kill()
	<-s.done
}

func (s *Server) cleanup() error { return os.RemoveAll(s.dir) }

// The server shared by a test binary (see Main).
var (
	shared struct {
		sync.Mutex
		main    bool // Main is in use: the server lives until the binary ends
		started bool
		srv     *Server
		err     error
	}
)

// Main runs the tests of a binary with one shared server, started on first
// use and stopped after the last test: call it from TestMain.
func Main(m *testing.M) {
	shared.Lock()
	shared.main = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stop:", err)
		}
	}
	shared.Unlock()
	os.Exit(code)
}

// Shared returns the binary's server (starting it on first use). Without
// Main, the test gets a server of its own, stopped on its cleanup. It skips
// the test when no PostgreSQL is installed, and fails it when one does not
// start.
func Shared(t testing.TB) *Server {
	t.Helper()
	shared.Lock()
	if !shared.main {
		shared.Unlock()
		s, err := Start()
		check(t, err)
		t.Cleanup(func() { _ = s.Stop() })
		return s
	}
	defer shared.Unlock()
	if !shared.started {
		shared.started = true
		shared.srv, shared.err = Start()
	}
	check(t, shared.err)
	return shared.srv
}

func check(t testing.TB, err error) {
	t.Helper()
	if errors.Is(err, ErrNoBinaries) {
		t.Skip("pgtest:", err)
	}
	if err != nil {
		t.Fatal("pgtest:", err)
	}
}

// Database returns the URL of a new database on the binary's server, for
// this test only.
func Database(t testing.TB) string {
	t.Helper()
	return Shared(t).CreateDatabase(t)
}

// Connect is a connection to dbURL, closed when the test ends.
func Connect(t testing.TB, dbURL string) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// OpenDB is a connection pool of database/sql on dbURL, closed when the
// test ends.
func OpenDB(t testing.TB, dbURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
