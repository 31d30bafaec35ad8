package store

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"
)

// inUseKey is the PostgreSQL advisory lock a daemon holds shared for its
// life and rotate-key takes exclusively: PostgreSQL's counterpart of the
// SQLite writer lock for commands that must run alone. ("proxmops" with
// its last byte changed, apart from writeLockKey.)
const inUseKey int64 = 0x70726f786d6f7075

// releaseTimeout bounds giving the lock back at the end.
const releaseTimeout = 5 * time.Second

// ErrInUse means a daemon uses the database.
var ErrInUse = errors.New("a proxmops serve uses this database: stop every replica first")

// MarkInUse records, until release, that a daemon uses the database: on
// PostgreSQL a shared advisory lock on a connection of its own, released by
// the server when the process or its connection dies. On SQLite it does
// nothing (the writer lock file does this job).
func (s *Store) MarkInUse(ctx context.Context) (release func(), err error) {
	return s.advisory(ctx, `SELECT pg_try_advisory_lock_shared(?)`)
}

// LockAlone takes the database for a command that must run with no daemon
// on it (rotate-key), until release; ErrInUse while a daemon marks it in
// use. On SQLite it does nothing (LockWriter does this job).
func (s *Store) LockAlone(ctx context.Context) (release func(), err error) {
	return s.advisory(ctx, `SELECT pg_try_advisory_lock(?)`)
}

func (s *Store) advisory(ctx context.Context, try string) (func(), error) {
	if s.db.d != postgres {
		return func() {}, nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	var got bool
	if err := conn.QueryRowContext(ctx, s.db.d.rebind(try), inUseKey).Scan(&got); err != nil {
		conn.Close()
		return nil, fmt.Errorf("database %s: %w", s.where, err)
	}
	if !got {
		conn.Close()
		return nil, fmt.Errorf("database %s: %w", s.where, ErrInUse)
	}
	return func() {
		// Closing a pooled connection only returns it: end the session's
		// locks explicitly, or drop the connection if that fails.
		// Bounded: a daemon cut off from the database must still stop
		// (the server ends the session, and its locks, on its own).
		ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
		defer cancel()
		if _, err := conn.ExecContext(ctx, `SELECT pg_advisory_unlock_all()`); err != nil {
			_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		}
		conn.Close()
	}, nil
}
