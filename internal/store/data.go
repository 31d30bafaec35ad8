package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// The settings saved from the UI: one encrypted record per section, so each
// ciphertext is bound to its section.
const (
	recCluster   = "settings/cluster"
	recSource    = "settings/source"
	recReconcile = "settings/reconcile"
	recForge     = "settings/forge"
)

// Overlay reads the settings saved from the UI. A record that does not
// decrypt (tampered, or sealed with another key) is an error, never a silent
// fallback.
func (s *Store) Overlay(ctx context.Context) (config.Overlay, error) {
	var o config.Overlay
	for _, r := range []struct {
		name string
		dst  any
	}{{recCluster, &o.Cluster}, {recSource, &o.Source}, {recReconcile, &o.Reconcile}, {recForge, &o.Forge}} {
		pt, err := s.readEncrypted(ctx, r.name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return config.Overlay{}, fmt.Errorf("saved settings cannot be read: %w", err)
		}
		if err := json.Unmarshal(pt, r.dst); err != nil {
			return config.Overlay{}, fmt.Errorf("saved settings %s: %w", r.name, err)
		}
	}
	return o, nil
}

// SaveOverlay stores the settings saved from the UI, one encrypted record
// per section present.
func (s *Store) SaveOverlay(ctx context.Context, o config.Overlay) error {
	for _, r := range []struct {
		name string
		v    any
		set  bool
	}{{recCluster, o.Cluster, o.Cluster != nil}, {recSource, o.Source, o.Source != nil}, {recReconcile, o.Reconcile, o.Reconcile != nil}, {recForge, o.Forge, o.Forge != nil}} {
		if !r.set {
			continue
		}
		b, err := json.Marshal(r.v)
		if err != nil {
			return err
		}
		if err := s.writeEncrypted(ctx, r.name, b); err != nil {
			return err
		}
	}
	return nil
}

// Check runs first in a write transaction and vetoes it with an error:
// the leader's fence among replicas (leader.Guard.Check), so the write
// commits only while the writer's term leads.
type Check func(ctx context.Context, tx *sql.Tx) error

// AddHistory records an event of a resource and applies the retention caps.
// A zero Time means now. It returns the entry's id.
func (s *Store) AddHistory(ctx context.Context, kind, name string, e api.HistoryEntry) (int64, error) {
	return s.AddHistoryChecked(ctx, kind, name, e, nil)
}

// AddHistoryChecked is AddHistory with check (nil: none) run first in its
// transaction.
func (s *Store) AddHistoryChecked(ctx context.Context, kind, name string, e api.HistoryEntry, check Check) (int64, error) {
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	if check != nil {
		if err := check(ctx, tx.Tx); err != nil {
			return 0, err
		}
	}
	var id int64
	var a api.Actor
	if e.Actor != nil {
		a = *e.Actor
	}
	if err := tx.QueryRowContext(ctx, `INSERT INTO history (kind, name, event, commit_sha, time, message, actor_kind, actor_name, actor_via, actor_delivery, actor_token)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		kind, name, string(e.Event), e.Commit, ms(e.Time), e.Message, string(a.Kind), a.Name, a.Via, a.Delivery, a.Token).Scan(&id); err != nil {
		return 0, err
	}
	if s.perResource > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM history WHERE kind = ? AND name = ? AND id <=
			(SELECT id FROM history WHERE kind = ? AND name = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
			kind, name, kind, name, s.perResource); err != nil {
			return 0, err
		}
	}
	if s.total > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM history WHERE id <=
			(SELECT id FROM history ORDER BY id DESC LIMIT 1 OFFSET ?)`, s.total); err != nil {
			return 0, err
		}
	}
	return id, tx.Commit()
}

// History lists a resource's events, newest first, at most limit (<= 0: all).
func (s *Store) History(ctx context.Context, kind, name string, limit int) ([]api.HistoryEntry, error) {
	q, args := `SELECT id, event, commit_sha, time, message, `+actorColumns+` FROM history
		WHERE kind = ? AND name = ? ORDER BY id DESC`, []any{kind, name}
	if limit > 0 {
		q, args = q+` LIMIT ?`, append(args, limit)
	}
	rows, err := s.db.QueryContext(ctx, q, args...)
	return scanHistory(rows, err, false)
}

// HistoryAt lists the events recorded at one commit, whichever resource,
// newest first, at most limit (<= 0: all), each naming its resource.
func (s *Store) HistoryAt(ctx context.Context, commit string, limit int) ([]api.HistoryEntry, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, kind, name, event, commit_sha, time, message, `+actorColumns+` FROM history
		WHERE commit_sha = ? ORDER BY id DESC LIMIT ?`, commit, limit)
	return scanHistory(rows, err, true)
}

// scanHistory reads the rows of a history query: id, then kind and name
// when withResource, then event, commit_sha, time, message and the actor.
func scanHistory(rows *sql.Rows, err error, withResource bool) ([]api.HistoryEntry, error) {
	return scanAll(rows, err, func(rows *sql.Rows) (e api.HistoryEntry, err error) {
		var event string
		var t int64
		var a api.Actor
		dst := []any{&e.ID}
		if withResource {
			dst = append(dst, &e.Kind, &e.Name)
		}
		dst = append(dst, &event, &e.Commit, &t, &e.Message, &a.Kind, &a.Name, &a.Via, &a.Delivery, &a.Token)
		err = rows.Scan(dst...)
		e.Event, e.Time, e.Actor = api.HistoryEvent(event), fromMS(t), actorOrNil(a)
		return e, err
	})
}

// scanAll reads every row of a query with scan, closing the rows: an
// empty list, never nil, when there are none; err is the query's.
func scanAll[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []T{}
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

const actorColumns = `actor_kind, actor_name, actor_via, actor_delivery, actor_token`

// actorOrNil is nil for an entry recorded without an actor.
func actorOrNil(a api.Actor) *api.Actor {
	if a.Kind == "" {
		return nil
	}
	return &a
}

// CountHistory is the number of history entries kept.
func (s *Store) CountHistory(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM history`).Scan(&n)
	return n, err
}

// State reads a value the controller saved (ok false when none).
func (s *Store) State(ctx context.Context, key string) (value []byte, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT value FROM state WHERE key = ?`, key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	return value, err == nil, err
}

// PutState saves a value for the controller (not encrypted: no secrets).
func (s *Store) PutState(ctx context.Context, key string, value []byte) error {
	return s.PutStateChecked(ctx, key, value, nil)
}

const putState = `INSERT INTO state (key, value, updated_at) VALUES (?, ?, ?)
	ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`

// PutStateChecked is PutState with check (nil: none) run first in its
// transaction.
func (s *Store) PutStateChecked(ctx context.Context, key string, value []byte, check Check) error {
	if check == nil {
		_, err := s.db.ExecContext(ctx, putState, key, value, ms(time.Now()))
		return err
	}
	return s.checkedExec(ctx, check, putState, key, value, ms(time.Now()))
}

// checkedExec runs one statement after check in a transaction.
func (s *Store) checkedExec(ctx context.Context, check Check, q string, args ...any) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := check(ctx, tx.Tx); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, q, args...); err != nil {
		return err
	}
	return tx.Commit()
}
