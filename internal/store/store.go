package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/proxmops/proxmops/internal/secrets"
	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// Errors of the store.
var (
	ErrNotFound  = errors.New("not found")
	ErrExists    = errors.New("already exists")
	ErrLastAdmin = errors.New("the last admin cannot be removed")
	// ErrSetupDone means an account exists: setup is no longer possible.
	ErrSetupDone = errors.New("setup is already done")
	// ErrSetupToken means the setup token is wrong or was already used.
	ErrSetupToken = errors.New("the setup token is wrong or was already used")
)

// Default retention caps of the history.
const (
	DefaultHistoryPerResource = 200
	DefaultHistoryTotal       = 100_000
)

// Options configure Open.
type Options struct {
	// Path is the database file (server.databasePath). Its directory is
	// created (0700) when missing, the file itself with mode 0600.
	Path string
	// EncryptionKey, when not empty, is the key (PROXMOPS_ENCRYPTION_KEY,
	// base64 or hex) and no key file is used.
	EncryptionKey string
	// KeyFile defaults to Path + ".key"; generated on first start.
	KeyFile string
	// HistoryPerResource and HistoryTotal cap the history: the oldest
	// entries beyond either cap are removed. Zero means the default;
	// negative means no cap.
	HistoryPerResource int
	HistoryTotal       int
	// Logger gets notices such as a generated key; nil discards them.
	Logger *slog.Logger
}

// Store is an open database. Its methods are safe for concurrent use.
type Store struct {
	db      *sql.DB
	path    string
	keyFile string // "" when the key comes from the environment
	log     *slog.Logger

	perResource, total int

	mu     sync.RWMutex // guards cipher and key
	cipher *secrets.Cipher
	key    secrets.Key
}

// Open opens (creating when needed) the database, applies pending
// migrations, loads or creates the encryption key, finishes a key rotation
// that was interrupted, and checks that the key matches the database.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if opt.Path == "" {
		return nil, errors.New("store: no database path (server.databasePath)")
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if err := prepareFile(opt.Path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", dsn(opt.Path))
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", opt.Path, err)
	}
	s := &Store{db: db, path: opt.Path, log: opt.Logger,
		perResource: capOr(opt.HistoryPerResource, DefaultHistoryPerResource),
		total:       capOr(opt.HistoryTotal, DefaultHistoryTotal)}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", opt.Path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("database %s: %w", opt.Path, err)
	}
	if err := s.loadKey(ctx, opt); err != nil {
		db.Close()
		return nil, err
	}
	return s, nil
}

func capOr(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func dsn(path string) string {
	q := []string{
		"_pragma=foreign_keys(1)",
		"_pragma=busy_timeout(10000)",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(NORMAL)",
		"_pragma=secure_delete(1)",
		"_txlock=immediate",
	}
	return "file:" + strings.ReplaceAll(path, "?", "%3f") + "?" + strings.Join(q, "&")
}

// prepareFile creates the directory and an empty database file with mode
// 0600, so SQLite (which gives its -wal and -shm files the database's mode)
// never creates a readable one.
func prepareFile(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create database directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	return f.Close()
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Ping checks the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// DB exposes the database to tests of other packages; production code uses
// the methods.
func (s *Store) DB() *sql.DB { return s.db }

// KeyID is the public id of the encryption key in use.
func (s *Store) KeyID() string {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cipher.KeyID()
}

// Version is the schema version of the open database.
func (s *Store) Version(ctx context.Context) (int, error) {
	var v int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v)
	return v, err
}
