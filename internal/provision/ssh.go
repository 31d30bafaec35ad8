package provision

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"
)

// Target is where and as whom a guest is provisioned.
type Target struct {
	// ID is the guest's "Kind/name", the key of its pinned host key.
	ID string
	// VMID of the guest now: a pin made for another VMID is replaced.
	VMID int
	Host string
	Port int // default 22
	User string
}

func (t Target) addr() string {
	port := t.Port
	if port == 0 {
		port = 22
	}
	return net.JoinHostPort(t.Host, strconv.Itoa(port))
}

// conn is one SSH connection to a guest, with SFTP opened when first
// needed (and a shell fallback when the server has no SFTP subsystem).
type conn struct {
	c       *ssh.Client
	sftp    *sftp.Client
	noSFTP  bool
	user    string
	maxTail int
}

// dial connects to the guest, retrying while its SSH server is not up yet
// (a guest just started, cloud-init still writing the key) until wait has
// passed. A host key that differs from the pinned one is never retried.
func (r *Runner) dial(ctx context.Context, t Target, wait time.Duration, progress func(string)) (*conn, error) {
	signer, err := r.Keys.Signer(ctx)
	if err != nil {
		return nil, err
	}
	user := t.User
	if user == "" {
		user = "root"
	}
	cfg := &ssh.ClientConfig{
		User:            user,
		Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
		HostKeyCallback: r.Keys.hostKeyCallback(ctx, t.ID, t.VMID),
		Timeout:         15 * time.Second,
	}
	deadline := time.Now().Add(wait)
	delay := 250 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := dialOnce(ctx, t.addr(), cfg)
		if err == nil {
			return &conn{c: c, user: user, maxTail: r.tailBytes()}, nil
		}
		var hk *HostKeyError
		if errors.As(err, &hk) || ctx.Err() != nil || time.Now().Add(delay).After(deadline) {
			return nil, fmt.Errorf("connecting to %s as %s: %w", t.addr(), user, err)
		}
		if attempt == 1 && progress != nil {
			progress(fmt.Sprintf("waiting for SSH on %s (%v)", t.addr(), err))
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
	}
}

func dialOnce(ctx context.Context, addr string, cfg *ssh.ClientConfig) (*ssh.Client, error) {
	d := net.Dialer{Timeout: cfg.Timeout}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	// The handshake knows no context: bound it by a deadline.
	nc.SetDeadline(time.Now().Add(cfg.Timeout))
	cc, chans, reqs, err := ssh.NewClientConn(nc, addr, cfg)
	if err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetDeadline(time.Time{})
	return ssh.NewClient(cc, chans, reqs), nil
}

func (c *conn) close() {
	if c.sftp != nil {
		c.sftp.Close()
	}
	c.c.Close()
}

// ExitError is a command that ran and exited non-zero.
type ExitError struct {
	Status int
	Tail   string
}

func (e *ExitError) Error() string { return "exit status " + strconv.Itoa(e.Status) }

// run runs a command line through /bin/sh -c, with stdin when not nil, and
// returns the tail of its combined output.
func (c *conn) run(ctx context.Context, cmdline string, stdin io.Reader) (string, error) {
	s, err := c.c.NewSession()
	if err != nil {
		return "", fmt.Errorf("opening an SSH session: %w", err)
	}
	defer s.Close()
	out := &tail{max: c.maxTail}
	s.Stdout, s.Stderr = out, out
	if stdin != nil {
		s.Stdin = stdin
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			s.Signal(ssh.SIGKILL)
			s.Close()
		case <-done:
		}
	}()
	err = s.Run("/bin/sh -c " + quote(cmdline))
	if ctx.Err() != nil {
		return out.String(), ctx.Err()
	}
	var ee *ssh.ExitError
	switch {
	case errors.As(err, &ee):
		return out.String(), &ExitError{Status: ee.ExitStatus(), Tail: out.String()}
	case err != nil:
		var missing *ssh.ExitMissingError
		if errors.As(err, &missing) {
			return out.String(), fmt.Errorf("the command ended without an exit status (connection lost?)")
		}
		return out.String(), err
	}
	return out.String(), nil
}

// sftpClient opens SFTP once; nil when the server has no SFTP subsystem.
func (c *conn) sftpClient() *sftp.Client {
	if c.sftp == nil && !c.noSFTP {
		cl, err := sftp.NewClient(c.c)
		if err != nil {
			c.noSFTP = true
			return nil
		}
		c.sftp = cl
	}
	return c.sftp
}

// writeFile writes data to p with mode, atomically (a temporary file in the
// same directory renamed over p), creating missing parent directories.
func (c *conn) writeFile(ctx context.Context, p string, data []byte, mode uint32) error {
	dir := path.Dir(p)
	tmp := path.Join(dir, ".proxmops-"+path.Base(p)+".tmp")
	if cl := c.sftpClient(); cl != nil {
		err := func() error {
			if err := cl.MkdirAll(dir); err != nil {
				return fmt.Errorf("creating %s: %w", dir, err)
			}
			f, err := cl.OpenFile(tmp, osCreateTrunc)
			if err != nil {
				return fmt.Errorf("writing %s: %w", tmp, err)
			}
			if _, err := f.Write(data); err != nil {
				f.Close()
				return fmt.Errorf("writing %s: %w", tmp, err)
			}
			if err := f.Close(); err != nil {
				return fmt.Errorf("writing %s: %w", tmp, err)
			}
			if err := cl.Chmod(tmp, fileMode(mode)); err != nil {
				return fmt.Errorf("chmod %s: %w", tmp, err)
			}
			if err := cl.PosixRename(tmp, p); err != nil {
				cl.Remove(tmp)
				return fmt.Errorf("renaming %s to %s: %w", tmp, p, err)
			}
			return nil
		}()
		return err
	}
	cmd := fmt.Sprintf("mkdir -p -- %s && cat > %s && chmod %o %s && mv -f -- %s %s",
		quote(dir), quote(tmp), mode, quote(tmp), quote(tmp), quote(p))
	if out, err := c.run(ctx, cmd, bytes.NewReader(data)); err != nil {
		return fmt.Errorf("writing %s: %w: %s", p, err, lastLines(out, 5))
	}
	return nil
}

// mkdirAll creates a directory and its parents.
func (c *conn) mkdirAll(ctx context.Context, dir string) error {
	if cl := c.sftpClient(); cl != nil {
		if err := cl.MkdirAll(dir); err != nil {
			return fmt.Errorf("creating %s: %w", dir, err)
		}
		return nil
	}
	if out, err := c.run(ctx, "mkdir -p -- "+quote(dir), nil); err != nil {
		return fmt.Errorf("creating %s: %w: %s", dir, err, lastLines(out, 5))
	}
	return nil
}

// chown gives paths to owner, in batches that keep command lines short.
func (c *conn) chown(ctx context.Context, owner string, paths []string) error {
	const batch = 200
	for len(paths) > 0 {
		n := min(batch, len(paths))
		args := make([]string, n)
		for i, p := range paths[:n] {
			args[i] = quote(p)
		}
		if out, err := c.run(ctx, "chown "+quote(owner)+" -- "+strings.Join(args, " "), nil); err != nil {
			return fmt.Errorf("chown %s: %w: %s", owner, err, lastLines(out, 5))
		}
		paths = paths[n:]
	}
	return nil
}

// quote makes s one word for /bin/sh.
func quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// tail keeps the last max bytes written to it.
type tail struct {
	max  int
	buf  []byte
	lost bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	return len(p), nil
}

func (t *tail) String() string { return string(t.buf) }

// lastLines returns the last n non-empty lines of s, joined by newlines.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
