package store

import (
	"context"
	"crypto/subtle"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/proxmops/proxmops/internal/api"
)

// User is an account as stored.
type User struct {
	ID           int64
	Username     string
	PasswordHash string // argon2id PHC string
	Role         api.Role
	CreatedAt    time.Time
}

// Session is a login session joined with its account, or a single sign-on
// session (Via "oidc", UserID 0: no local account).
type Session struct {
	UserID     int64
	Username   string
	Role       api.Role
	Via        string
	CreatedAt  time.Time
	LastSeenAt time.Time
	ExpiresAt  time.Time
}

// APIToken is an API token as stored (its hash stays inside the store).
type APIToken struct {
	ID         int64
	Name       string
	Role       api.Role
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt *time.Time
}

func ms(t time.Time) int64         { return t.UnixMilli() }
func fromMS(v int64) time.Time     { return time.UnixMilli(v).UTC() }
func notFound(what string) error   { return fmt.Errorf("%s: %w", what, ErrNotFound) }
func userExists(name string) error { return fmt.Errorf("user %q: %w", name, ErrExists) }

// CountUsers is the number of accounts.
func (s *Store) CountUsers(ctx context.Context) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n)
	return n, err
}

// CreateUser adds an account.
func (s *Store) CreateUser(ctx context.Context, username, passwordHash string, role api.Role) (User, error) {
	if err := role.Check(); err != nil {
		return User{}, err
	}
	now := time.Now()
	var id int64
	err := s.db.QueryRowContext(ctx, `INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, ?, ?) RETURNING id`,
		username, passwordHash, role, ms(now)).Scan(&id)
	if isUnique(err) {
		return User{}, userExists(username)
	}
	if err != nil {
		return User{}, err
	}
	return User{ID: id, Username: username, PasswordHash: passwordHash, Role: role, CreatedAt: fromMS(ms(now))}, nil
}

// UserByName finds an account (case-insensitively: user names compare by
// lower(), as the unique index does on PostgreSQL and COLLATE NOCASE on
// SQLite).
func (s *Store) UserByName(ctx context.Context, username string) (User, error) {
	var u User
	var created int64
	err := s.db.QueryRowContext(ctx, `SELECT id, username, password_hash, role, created_at FROM users WHERE lower(username) = lower(?)`, username).
		Scan(&u.ID, &u.Username, &u.PasswordHash, &u.Role, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, notFound("user " + username)
	}
	u.CreatedAt = fromMS(created)
	return u, err
}

// Users lists the accounts by name.
func (s *Store) Users(ctx context.Context) ([]api.User, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT username, role, created_at FROM users ORDER BY lower(username), username`)
	return scanAll(rows, err, func(rows *sql.Rows) (u api.User, err error) {
		var created int64
		err = rows.Scan(&u.Username, &u.Role, &created)
		u.CreatedAt = fromMS(created)
		return u, err
	})
}

// DeleteUser removes an account with its sessions and the API tokens it
// created. The last admin cannot be removed.
func (s *Store) DeleteUser(ctx context.Context, username string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var role api.Role
	err = tx.QueryRowContext(ctx, `SELECT role FROM users WHERE lower(username) = lower(?)`, username).Scan(&role)
	if errors.Is(err, sql.ErrNoRows) {
		return notFound("user " + username)
	}
	if err != nil {
		return err
	}
	if role == api.RoleAdmin {
		var admins int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE role = 'admin'`).Scan(&admins); err != nil {
			return err
		}
		if admins <= 1 {
			return ErrLastAdmin
		}
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM users WHERE lower(username) = lower(?)`, username); err != nil {
		return err
	}
	return tx.Commit()
}

// SetPassword replaces an account's password hash and ends its sessions.
func (s *Store) SetPassword(ctx context.Context, username, passwordHash string) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `UPDATE users SET password_hash = ? WHERE lower(username) = lower(?)`, passwordHash, username)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound("user " + username)
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM sessions WHERE user_id = (SELECT id FROM users WHERE lower(username) = lower(?))`, username); err != nil {
		return err
	}
	return tx.Commit()
}

// SetRole changes an account's role. Demoting the last admin fails with
// ErrLastAdmin, as removing it does. Sessions read the role afresh on each
// request, so the change applies at once.
func (s *Store) SetRole(ctx context.Context, username string, role api.Role) (api.User, error) {
	if err := role.Check(); err != nil {
		return api.User{}, err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return api.User{}, err
	}
	defer tx.Rollback()
	var u api.User
	var old api.Role
	var created int64
	err = tx.QueryRowContext(ctx, `SELECT username, role, created_at FROM users WHERE lower(username) = lower(?)`, username).Scan(&u.Username, &old, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return api.User{}, notFound("user " + username)
	}
	if err != nil {
		return api.User{}, err
	}
	u.CreatedAt, u.Role = fromMS(created), role
	if old == role {
		return u, nil
	}
	if old == api.RoleAdmin {
		var admins int
		if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users WHERE role = 'admin'`).Scan(&admins); err != nil {
			return api.User{}, err
		}
		if admins <= 1 {
			return api.User{}, ErrLastAdmin
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE users SET role = ? WHERE lower(username) = lower(?)`, role, u.Username); err != nil {
		return api.User{}, err
	}
	return u, tx.Commit()
}

const setupTokenKey = "setup_token_hash"

// SetSetupToken records the hash of a new one-time setup token, replacing
// any earlier one. It fails with ErrSetupDone once an account exists.
func (s *Store) SetSetupToken(ctx context.Context, tokenHash []byte) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return ErrSetupDone
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, setupTokenKey, tokenHash); err != nil {
		return err
	}
	return tx.Commit()
}

// setupTokenRecord keeps the pending setup token itself, sealed, so every
// start and every replica of the database shows the same one.
const setupTokenRecord = "setup/token"

// EnsureSetupToken returns the database's pending setup token, creating it
// once: while no account exists, the first call stores fresh()'s token
// (its hash to check it, the token sealed to show it again) and every later
// call, from any process on the database, returns that same token. hash is
// how a token's hash is made (auth.HashToken). It fails with ErrSetupDone
// once an account exists.
func (s *Store) EnsureSetupToken(ctx context.Context, fresh func() (token string, hash []byte), hash func(string) []byte) (string, error) {
	s.mu.RLock() // before the transaction, as a key rotation takes them
	defer s.mu.RUnlock()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return "", err
	}
	if n > 0 {
		return "", ErrSetupDone
	}
	var want []byte
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, setupTokenKey).Scan(&want)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", err
	}
	// A sealed token that no longer opens (key lost and replaced) or is not
	// the pending one is replaced, never an error: setup must stay possible.
	if pt, err := openIn(ctx, tx, s.cipher, setupTokenRecord); err == nil && want != nil &&
		subtle.ConstantTimeCompare(hash(string(pt)), want) == 1 {
		return string(pt), nil
	}
	token, h := fresh()
	if _, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value) VALUES (?, ?)
		ON CONFLICT (key) DO UPDATE SET value = excluded.value`, setupTokenKey, h); err != nil {
		return "", err
	}
	if err := sealIn(ctx, tx, s.cipher, setupTokenRecord, []byte(token), true); err != nil {
		return "", err
	}
	return token, tx.Commit()
}

// HasSetupToken tells whether tokenHash is the pending setup token's hash.
func (s *Store) HasSetupToken(ctx context.Context, tokenHash []byte) (bool, error) {
	var want []byte
	err := s.db.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, setupTokenKey).Scan(&want)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return subtle.ConstantTimeCompare(want, tokenHash) == 1, nil
}

// CompleteSetup spends the setup token whose hash is tokenHash to create
// the first admin, in one transaction: the token works once.
func (s *Store) CompleteSetup(ctx context.Context, tokenHash []byte, username, passwordHash string) (User, error) {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return User{}, err
	}
	defer tx.Rollback()
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return User{}, err
	}
	if n > 0 {
		return User{}, ErrSetupDone
	}
	var want []byte
	err = tx.QueryRowContext(ctx, `SELECT value FROM meta WHERE key = ?`, setupTokenKey).Scan(&want)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, ErrSetupToken
	}
	if err != nil {
		return User{}, err
	}
	if subtle.ConstantTimeCompare(want, tokenHash) != 1 {
		return User{}, ErrSetupToken
	}
	now := time.Now()
	var id int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO users (username, password_hash, role, created_at) VALUES (?, ?, 'admin', ?) RETURNING id`,
		username, passwordHash, ms(now)).Scan(&id); err != nil {
		return User{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM meta WHERE key = ?`, setupTokenKey); err != nil {
		return User{}, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM encrypted WHERE name = ?`, setupTokenRecord); err != nil {
		return User{}, err
	}
	if err := tx.Commit(); err != nil {
		return User{}, err
	}
	return User{ID: id, Username: username, PasswordHash: passwordHash, Role: api.RoleAdmin, CreatedAt: fromMS(ms(now))}, nil
}

// CreateSession records a session by the hash of its token.
func (s *Store) CreateSession(ctx context.Context, tokenHash []byte, userID int64, now, expires time.Time) error {
	_, err := s.db.ExecContext(ctx, `INSERT INTO sessions (token_hash, user_id, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?)`,
		tokenHash, userID, ms(now), ms(now), ms(expires))
	return err
}

// SessionByHash finds a session and its account, or a single sign-on
// session. Expiry is the caller's decision (it knows the idle timeout).
func (s *Store) SessionByHash(ctx context.Context, tokenHash []byte) (Session, error) {
	var ss Session
	var created, seen, expires int64
	err := s.db.QueryRowContext(ctx, `SELECT u.id, u.username, u.role, s.created_at, s.last_seen_at, s.expires_at
		FROM sessions s JOIN users u ON u.id = s.user_id WHERE s.token_hash = ?`, tokenHash).
		Scan(&ss.UserID, &ss.Username, &ss.Role, &created, &seen, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		ss.Via = api.ViaOIDC
		err = s.db.QueryRowContext(ctx, `SELECT username, role, created_at, last_seen_at, expires_at
			FROM oidc_sessions WHERE token_hash = ?`, tokenHash).Scan(&ss.Username, &ss.Role, &created, &seen, &expires)
	}
	if errors.Is(err, sql.ErrNoRows) {
		return Session{}, notFound("session")
	}
	ss.CreatedAt, ss.LastSeenAt, ss.ExpiresAt = fromMS(created), fromMS(seen), fromMS(expires)
	return ss, err
}

// CreateOIDCSession records a single sign-on session: the provider's
// subject, the name shown and the role its groups map to at this login.
func (s *Store) CreateOIDCSession(ctx context.Context, tokenHash []byte, subject, username string, role api.Role, now, expires time.Time) error {
	if err := role.Check(); err != nil {
		return err
	}
	_, err := s.db.ExecContext(ctx, `INSERT INTO oidc_sessions (token_hash, subject, username, role, created_at, last_seen_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		tokenHash, subject, username, role, ms(now), ms(now), ms(expires))
	return err
}

// sessionTables are the tables sessions live in.
var sessionTables = []string{"sessions", "oidc_sessions"}

// TouchSession records activity on a session.
func (s *Store) TouchSession(ctx context.Context, tokenHash []byte, now time.Time) error {
	for _, t := range sessionTables {
		if _, err := s.db.ExecContext(ctx, `UPDATE `+t+` SET last_seen_at = ? WHERE token_hash = ?`, ms(now), tokenHash); err != nil {
			return err
		}
	}
	return nil
}

// DeleteSession ends a session.
func (s *Store) DeleteSession(ctx context.Context, tokenHash []byte) error {
	for _, t := range sessionTables {
		if _, err := s.db.ExecContext(ctx, `DELETE FROM `+t+` WHERE token_hash = ?`, tokenHash); err != nil {
			return err
		}
	}
	return nil
}

// DeleteStaleSessions removes sessions past their expiry or idle longer
// than idle, and returns how many.
func (s *Store) DeleteStaleSessions(ctx context.Context, now time.Time, idle time.Duration) (int64, error) {
	var n int64
	for _, t := range sessionTables {
		res, err := s.db.ExecContext(ctx, `DELETE FROM `+t+` WHERE expires_at <= ? OR last_seen_at <= ?`, ms(now), ms(now.Add(-idle)))
		if err != nil {
			return n, err
		}
		m, err := res.RowsAffected()
		if err != nil {
			return n, err
		}
		n += m
	}
	return n, nil
}

// CreateAPIToken records an API token by its hash.
func (s *Store) CreateAPIToken(ctx context.Context, name string, role api.Role, tokenHash []byte, createdBy int64) (APIToken, error) {
	if err := role.Check(); err != nil {
		return APIToken{}, err
	}
	now := time.Now()
	var by any
	if createdBy > 0 {
		by = createdBy
	}
	var id int64
	if err := s.db.QueryRowContext(ctx, `INSERT INTO api_tokens (name, token_hash, role, created_by, created_at) VALUES (?, ?, ?, ?, ?) RETURNING id`,
		name, tokenHash, role, by, ms(now)).Scan(&id); err != nil {
		return APIToken{}, err
	}
	return APIToken{ID: id, Name: name, Role: role, CreatedAt: fromMS(ms(now))}, nil
}

// APITokenByHash finds an API token.
func (s *Store) APITokenByHash(ctx context.Context, tokenHash []byte) (APIToken, error) {
	var t APIToken
	var created int64
	var used sql.NullInt64
	var by sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT t.id, t.name, t.role, u.username, t.created_at, t.last_used_at
		FROM api_tokens t LEFT JOIN users u ON u.id = t.created_by WHERE t.token_hash = ?`, tokenHash).
		Scan(&t.ID, &t.Name, &t.Role, &by, &created, &used)
	if errors.Is(err, sql.ErrNoRows) {
		return APIToken{}, notFound("API token")
	}
	if err != nil {
		return APIToken{}, err
	}
	t.CreatedBy, t.CreatedAt = by.String, fromMS(created)
	if used.Valid {
		u := fromMS(used.Int64)
		t.LastUsedAt = &u
	}
	return t, nil
}

// TouchAPIToken records the use of an API token.
func (s *Store) TouchAPIToken(ctx context.Context, id int64, now time.Time) error {
	_, err := s.db.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE id = ?`, ms(now), id)
	return err
}

// APITokens lists the API tokens, oldest first.
func (s *Store) APITokens(ctx context.Context) ([]api.Token, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT id, name, role, created_at, last_used_at FROM api_tokens ORDER BY id`)
	return scanAll(rows, err, func(rows *sql.Rows) (t api.Token, err error) {
		var id, created int64
		var used sql.NullInt64
		if err := rows.Scan(&id, &t.Name, &t.Role, &created, &used); err != nil {
			return t, err
		}
		t.ID, t.CreatedAt = fmt.Sprint(id), fromMS(created)
		if used.Valid {
			u := fromMS(used.Int64)
			t.LastUsedAt = &u
		}
		return t, nil
	})
}

// DeleteAPIToken revokes an API token.
func (s *Store) DeleteAPIToken(ctx context.Context, id int64) error {
	res, err := s.db.ExecContext(ctx, `DELETE FROM api_tokens WHERE id = ?`, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return notFound(fmt.Sprintf("API token %d", id))
	}
	return nil
}

// APITokenExists tells whether the API token id is still valid.
func (s *Store) APITokenExists(ctx context.Context, id int64) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM api_tokens WHERE id = ?`, id).Scan(&n)
	return n > 0, err
}
