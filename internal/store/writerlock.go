package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"
)

// LockPath is the lock file of the SQLite database at dbPath.
func LockPath(dbPath string) string { return dbPath + ".lock" }

// Holder describes the process that holds a database's writer lock.
type Holder struct {
	PID     int       `json:"pid"`
	Command string    `json:"command"`
	Addr    string    `json:"addr,omitempty"`
	Started time.Time `json:"started"`
}

// LockedError means another process holds the writer lock.
type LockedError struct {
	Database string
	Holder   Holder // zero when the holder had not written its details yet
}

func (e *LockedError) Error() string {
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("database %s is in use by another proxmops process (see %s)", e.Database, LockPath(e.Database))
	}
	what := "proxmops " + h.Command
	if h.Addr != "" {
		what += " listening on " + h.Addr
	}
	return fmt.Sprintf("database %s is in use by %s (pid %d, since %s); stop it first, or give this one another database",
		e.Database, what, h.PID, h.Started.UTC().Format(time.RFC3339))
}

// WriterLock is an exclusive flock on <database>.lock, held for a daemon's
// (or rotate-key's) life so only one process ever writes a database. The OS
// releases it when the process dies, even by SIGKILL, so it never goes stale.
type WriterLock struct {
	f      *os.File
	holder Holder
}

// LockWriter takes the writer lock of dbPath without waiting, then records
// who holds it (command, listen address) for the message a second process
// gets. It fails with a *LockedError while another process holds it.
func LockWriter(dbPath, command, addr string) (*WriterLock, error) {
	f, err := os.OpenFile(LockPath(dbPath), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		// Made now (by root, perhaps): the lock belongs to the database's
		// owner, whom the daemon runs as.
		_ = copyOwnerAndMode(LockPath(dbPath), dbPath)
	} else if errors.Is(err, os.ErrExist) {
		f, err = os.OpenFile(LockPath(dbPath), os.O_RDWR, 0)
	}
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, lockedBy(f, dbPath)
		}
		return nil, fmt.Errorf("lock %s: %w", LockPath(dbPath), err)
	}
	l := &WriterLock{f: f, holder: Holder{PID: os.Getpid(), Command: command, Addr: addr, Started: time.Now()}}
	if err := l.write(); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", LockPath(dbPath), err)
	}
	return l, nil
}

// SetAddr records the address actually listened on (a ":0" port is only
// known once listening).
func (l *WriterLock) SetAddr(addr string) error {
	l.holder.Addr = addr
	return l.write()
}

func (l *WriterLock) write() error {
	b, _ := json.Marshal(l.holder)
	if err := l.f.Truncate(0); err != nil {
		return err
	}
	_, err := l.f.WriteAt(append(b, '\n'), 0)
	return err
}

// Release empties the lock file and releases the lock.
func (l *WriterLock) Release() error {
	if l == nil || l.f == nil {
		return nil
	}
	_ = l.f.Truncate(0)
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}

// ProbeWriter tells, without taking it, whether another process holds the
// writer lock of dbPath: a *LockedError when one does, nil when none does
// (or no process ever took it). Nothing is created.
func ProbeWriter(dbPath string) error {
	f, err := os.OpenFile(LockPath(dbPath), os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lock file: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return lockedBy(f, dbPath)
		}
		return fmt.Errorf("lock %s: %w", LockPath(dbPath), err)
	}
	return nil // closing f releases the shared lock
}

// lockedBy is the error of a lock another process holds, naming it from
// what it wrote into the lock file.
func lockedBy(f *os.File, dbPath string) *LockedError {
	le := &LockedError{Database: dbPath}
	if b, err := io.ReadAll(io.LimitReader(f, 4096)); err == nil {
		_ = json.Unmarshal([]byte(strings.TrimSpace(string(b))), &le.Holder)
	}
	return le
}
