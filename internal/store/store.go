package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/proxmops/proxmops/internal/config"
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

// idleInTransaction is the longest a store transaction may wait for its
// next statement on PostgreSQL before the server ends it.
const idleInTransaction = 10 * time.Second

// Options configure Open.
type Options struct {
	// Path is the SQLite database file (server.databasePath). Its directory
	// is created (0700) when missing, the file itself with mode 0600.
	Path string
	// URL, instead of Path, is a PostgreSQL database (server.database,
	// postgres:// or postgresql://); the database must exist, the store
	// creates its tables.
	URL string
	// EncryptionKey, when not empty, is the key (PROXMOPS_ENCRYPTION_KEY,
	// base64 or hex) and no key file is used.
	EncryptionKey string
	// KeyFile (server.keyFile) holds the key, generated on first start. With
	// SQLite it defaults to Path + ".key"; with PostgreSQL it (or
	// EncryptionKey) is required, and every replica needs the same key.
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
	db      *db
	path    string // SQLite file, "" on PostgreSQL
	where   string // the database for messages: the file, or the URL without its password
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
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{path: opt.Path, log: opt.Logger,
		perResource: capOr(opt.HistoryPerResource, DefaultHistoryPerResource),
		total:       capOr(opt.HistoryTotal, DefaultHistoryTotal)}
	var err error
	switch {
	case opt.URL != "" && opt.Path != "":
		return nil, errors.New("store: both a SQLite path (server.databasePath) and a PostgreSQL URL (server.database): give one")
	case opt.URL != "":
		s.where = config.RedactDatabaseURL(opt.URL)
		if opt.KeyFile == "" && opt.EncryptionKey == "" {
			return nil, errors.New("with a PostgreSQL database (server.database), give the encryption key: server.keyFile (generated on first start; copy it to every replica) or PROXMOPS_ENCRYPTION_KEY")
		}
		s.db, err = openPostgres(opt.URL)
	case opt.Path != "":
		s.where = opt.Path
		s.db, err = openSQLite(opt.Path)
	default:
		return nil, errors.New("store: no database (server.databasePath or server.database)")
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", s.where, err)
	}
	if err := s.db.PingContext(ctx); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("open database %s: %w", s.where, err)
	}
	if err := migrate(ctx, s.db); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("database %s: %w", s.where, err)
	}
	if err := s.loadKey(ctx, opt); err != nil {
		s.db.Close()
		return nil, err
	}
	return s, nil
}

func openSQLite(path string) (*db, error) {
	if err := prepareFile(path); err != nil {
		return nil, err
	}
	d, err := sql.Open("sqlite", dsn(path))
	if err != nil {
		return nil, err
	}
	return &db{DB: d, d: sqlite}, nil
}

func openPostgres(url string) (*db, error) {
	if err := config.CheckDatabaseURL(url); err != nil {
		return nil, err
	}
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	// A write transaction holds the store's write lock (writeLockKey)
	// from its first statement: a process that goes silent inside one (cut
	// off, frozen) would stall every replica's writes until TCP gives up,
	// hours later. The server ends such a transaction instead; none of ours
	// waits this long between two statements.
	if _, set := cfg.RuntimeParams["idle_in_transaction_session_timeout"]; !set {
		cfg.RuntimeParams["idle_in_transaction_session_timeout"] = strconv.FormatInt(idleInTransaction.Milliseconds(), 10)
	}
	d := stdlib.OpenDB(*cfg)
	// Enough for the daemon's concurrent requests and passes without
	// holding many server connections per replica.
	d.SetMaxOpenConns(16)
	d.SetMaxIdleConns(4)
	d.SetConnMaxIdleTime(5 * time.Minute)
	return &db{DB: d, d: postgres}, nil
}

// ServerOptions are the Options of the database the server section names
// (server.databasePath or server.database, server.keyFile), with the key
// from PROXMOPS_ENCRYPTION_KEY when encryptionKey is not empty.
func ServerOptions(c config.Server, encryptionKey string) Options {
	return Options{Path: c.DatabasePath, URL: c.Database, KeyFile: c.KeyFile, EncryptionKey: encryptionKey}
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

// Dialect is "sqlite" or "postgres".
func (s *Store) Dialect() string { return s.db.d.String() }

// Where names the database for messages: the SQLite file, or the
// PostgreSQL URL with its password hidden.
func (s *Store) Where() string { return s.where }

// KeyFile is the file the encryption key is kept in, "" when the key
// comes from the environment.
func (s *Store) KeyFile() string { return s.keyFile }

// Ping checks the database answers (readiness).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	return s.db.QueryRowContext(ctx, `SELECT 1`).Scan(&one)
}

// Path is the SQLite database file ("" on PostgreSQL).
func (s *Store) Path() string { return s.path }

// DB exposes the database to tests of other packages; production code uses
// the methods.
func (s *Store) DB() *sql.DB { return s.db.DB }

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

// SealValue encrypts a short-lived value the server hands a client (the
// single sign-on login's state in a cookie) with the database's key, bound
// to purpose: it never opens as a stored setting or for another purpose.
func (s *Store) SealValue(purpose string, plaintext []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cipher.Seal([]byte("proxmops/value/"+purpose), plaintext)
}

// OpenValue decrypts what SealValue sealed for purpose.
func (s *Store) OpenValue(purpose string, sealed []byte) ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.cipher.Open([]byte("proxmops/value/"+purpose), sealed)
}
