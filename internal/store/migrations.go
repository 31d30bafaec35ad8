package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// migration is one step of the schema. Steps are never edited once released:
// a change is a new step.
type migration struct {
	version int
	name    string
	sql     string
}

var migrations = []migration{
	{1, "accounts, sessions, tokens, encrypted settings, history", `
CREATE TABLE users (
	id            INTEGER PRIMARY KEY,
	username      TEXT NOT NULL UNIQUE COLLATE NOCASE,
	password_hash TEXT NOT NULL,
	role          TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
	created_at    INTEGER NOT NULL
);
CREATE TABLE sessions (
	token_hash   BLOB PRIMARY KEY,
	user_id      INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
	created_at   INTEGER NOT NULL,
	last_seen_at INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL
);
CREATE INDEX sessions_user ON sessions(user_id);
CREATE TABLE api_tokens (
	id           INTEGER PRIMARY KEY,
	name         TEXT NOT NULL,
	token_hash   BLOB NOT NULL UNIQUE,
	role         TEXT NOT NULL CHECK (role IN ('admin', 'viewer')),
	created_by   INTEGER REFERENCES users(id) ON DELETE CASCADE,
	created_at   INTEGER NOT NULL,
	last_used_at INTEGER
);
CREATE TABLE encrypted (
	name       TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	updated_at INTEGER NOT NULL
);
CREATE TABLE meta (
	key   TEXT PRIMARY KEY,
	value BLOB NOT NULL
);
CREATE TABLE history (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	kind       TEXT NOT NULL,
	name       TEXT NOT NULL,
	event      TEXT NOT NULL,
	commit_sha TEXT NOT NULL,
	time       INTEGER NOT NULL,
	message    TEXT NOT NULL
);
CREATE INDEX history_resource ON history(kind, name, id);
`},
	{2, "controller state", `
CREATE TABLE state (
	key        TEXT PRIMARY KEY,
	value      BLOB NOT NULL,
	updated_at INTEGER NOT NULL
);
`},
	{3, "history user", `
ALTER TABLE history ADD COLUMN user_name TEXT NOT NULL DEFAULT '';
`},
}

// SchemaVersion is the newest schema version this build knows.
func SchemaVersion() int { return migrations[len(migrations)-1].version }

// migrate applies every migration not yet recorded, each in its own
// transaction together with its record.
func migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return fmt.Errorf("read schema version: %w", err)
	}
	if current > SchemaVersion() {
		return fmt.Errorf("the database has schema version %d, newer than this proxmops knows (%d): upgrade proxmops or restore a backup", current, SchemaVersion())
	}
	for _, m := range migrations {
		if m.version <= current {
			continue
		}
		if err := apply(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

func apply(ctx context.Context, db *sql.DB, m migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	// Another process may have migrated between our read and this lock.
	var done int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations WHERE version = ?`, m.version).Scan(&done); err != nil {
		return err
	}
	if done > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("migration %d (%s): %w", m.version, m.name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.version, m.name, time.Now().UnixMilli()); err != nil {
		return err
	}
	return tx.Commit()
}
