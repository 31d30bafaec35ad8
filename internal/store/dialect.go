package store

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
)

// dialect is what differs between SQLite and PostgreSQL, kept here so the
// queries are written once: they use `?` placeholders (rewritten to $n for
// PostgreSQL), INSERT … RETURNING for new ids, ON CONFLICT upserts, integer
// milliseconds for times and byte slices for BLOB/bytea, which both engines
// accept as they are. Only the migrations' DDL is written per dialect.
type dialect int

const (
	sqlite dialect = iota
	postgres
)

func (d dialect) String() string {
	if d == postgres {
		return "postgres"
	}
	return "sqlite"
}

// writeLockKey is the PostgreSQL advisory lock every write transaction
// takes first, so transactions run one after another across all replicas as
// they do on SQLite (BEGIN IMMEDIATE): the checks inside them (last admin,
// setup token spent once, migrations applied once) stay race-free without
// SERIALIZABLE retries. The value is "proxmops" in ASCII.
const writeLockKey int64 = 0x70726f786d6f7073

// rebind rewrites `?` placeholders outside string literals and quoted
// identifiers to PostgreSQL's $1, $2, ….
func (d dialect) rebind(q string) string {
	if d != postgres || !strings.Contains(q, "?") {
		return q
	}
	var b strings.Builder
	b.Grow(len(q) + 8)
	n := 0
	var quote byte
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '\'' || c == '"':
			quote = c
		case c == '?':
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// isUnique tells whether err is a unique constraint violation.
func isUnique(err error) bool {
	if err == nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code == "23505" // unique_violation
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

// db is the store's handle: database/sql with the dialect's placeholders.
// The embedded *sql.DB gives Close and Ping; every query method is ours.
type db struct {
	*sql.DB
	d dialect
}

func (x *db) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return x.DB.ExecContext(ctx, x.d.rebind(q), args...)
}

func (x *db) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return x.DB.QueryContext(ctx, x.d.rebind(q), args...)
}

func (x *db) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return x.DB.QueryRowContext(ctx, x.d.rebind(q), args...)
}

func (x *db) Exec(q string, args ...any) (sql.Result, error) {
	return x.ExecContext(context.Background(), q, args...)
}

func (x *db) Query(q string, args ...any) (*sql.Rows, error) {
	return x.QueryContext(context.Background(), q, args...)
}

func (x *db) QueryRow(q string, args ...any) *sql.Row {
	return x.QueryRowContext(context.Background(), q, args...)
}

// BeginTx starts a write transaction: on SQLite the DSN makes it BEGIN
// IMMEDIATE; on PostgreSQL it takes the store's write lock first.
func (x *db) BeginTx(ctx context.Context, opts *sql.TxOptions) (*tx, error) {
	t, err := x.DB.BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	if x.d == postgres {
		if _, err := t.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, writeLockKey); err != nil {
			t.Rollback()
			return nil, err
		}
	}
	return &tx{Tx: t, d: x.d}, nil
}

// tx is a transaction with the dialect's placeholders.
type tx struct {
	*sql.Tx
	d dialect
}

func (x *tx) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return x.Tx.ExecContext(ctx, x.d.rebind(q), args...)
}

func (x *tx) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return x.Tx.QueryContext(ctx, x.d.rebind(q), args...)
}

func (x *tx) QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row {
	return x.Tx.QueryRowContext(ctx, x.d.rebind(q), args...)
}
