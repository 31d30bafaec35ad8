package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"time"

	"github.com/proxmops/proxmops/internal/secrets"
)

// keyCheck is a sealed constant that tells on open whether the key matches.
const (
	keyCheckName  = "keycheck"
	keyCheckValue = "proxmops encryption key check"
)

// aad is the associated data of an encrypted record: its identity.
func aad(name string) []byte { return []byte("proxmops/encrypted/" + name) }

func (s *Store) loadKey(ctx context.Context, opt Options) error {
	var key secrets.Key
	switch {
	case opt.EncryptionKey != "":
		k, err := secrets.ParseKey(opt.EncryptionKey)
		if err != nil {
			return fmt.Errorf("PROXMOPS_ENCRYPTION_KEY: %w", err)
		}
		key = k
	default:
		s.keyFile = opt.KeyFile
		if s.keyFile == "" {
			s.keyFile = opt.Path + ".key"
		}
		k, err := secrets.ReadKeyFile(s.keyFile)
		switch {
		case err == nil:
			key = k
		case errors.Is(err, fs.ErrNotExist):
			has, herr := s.hasEncrypted(ctx)
			if herr != nil {
				return herr
			}
			if has {
				return fmt.Errorf("key file %s is missing but the database holds encrypted settings: restore the key file (with PostgreSQL, copy it from the replica that created it) or set PROXMOPS_ENCRYPTION_KEY", s.keyFile)
			}
			if k, err = secrets.GenerateKey(); err != nil {
				return err
			}
			if err := secrets.WriteKeyFile(s.keyFile, k); err != nil {
				return fmt.Errorf("write key file: %w", err)
			}
			s.log.Info("generated a new encryption key", "keyFile", s.keyFile, "keyId", k.ID())
			key = k
		default:
			return err
		}
	}
	c, err := secrets.NewCipher(key)
	if err != nil {
		return err
	}
	s.cipher, s.key = c, key
	if s.keyFile != "" {
		if err := s.finishRotation(ctx, key); err != nil {
			return err
		}
	}
	return s.checkKey(ctx)
}

func (s *Store) hasEncrypted(ctx context.Context) (bool, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM encrypted`).Scan(&n)
	return n > 0, err
}

// checkKey opens the key check record, or writes it on a new database.
func (s *Store) checkKey(ctx context.Context) error {
	v, err := s.readEncrypted(ctx, keyCheckName)
	if errors.Is(err, ErrNotFound) {
		// Insert only if still absent: of replicas first started together
		// with different keys, one wins and the others fail the check.
		if err := s.sealEncrypted(ctx, keyCheckName, []byte(keyCheckValue), false); err != nil {
			return err
		}
		v, err = s.readEncrypted(ctx, keyCheckName)
	}
	if err != nil {
		return fmt.Errorf("the encryption key does not open this database: %w", err)
	}
	if string(v) != keyCheckValue {
		return errors.New("the encryption key check record is corrupt")
	}
	return nil
}

// finishRotation completes a rotation interrupted between writing the new
// key file and renaming it into place: whatever the database holds (old or
// new ciphertexts), it ends sealed with the new key, which then becomes the
// key file.
func (s *Store) finishRotation(ctx context.Context, current secrets.Key) error {
	pendingPath := s.keyFile + ".new"
	next, err := secrets.ReadKeyFile(pendingPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pending key rotation: %w", err)
	}
	s.log.Warn("finishing an interrupted key rotation", "keyFile", s.keyFile, "newKeyId", next.ID())
	if err := s.reencrypt(ctx, current, next); err != nil {
		return fmt.Errorf("finish key rotation: %w", err)
	}
	if err := os.Rename(pendingPath, s.keyFile); err != nil {
		return fmt.Errorf("finish key rotation: %w", err)
	}
	return nil
}

// reencrypt opens every encrypted record with old or next and seals it with
// next, in one transaction; then next is the store's key. It holds the key
// lock throughout so no record is written with old meanwhile.
func (s *Store) reencrypt(ctx context.Context, old, next secrets.Key) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	both, err := secrets.NewCipher(next, old)
	if err != nil {
		return err
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	rows, err := tx.QueryContext(ctx, `SELECT name, value FROM encrypted ORDER BY name`)
	if err != nil {
		return err
	}
	type rec struct {
		name  string
		value []byte
	}
	var recs []rec
	for rows.Next() {
		var r rec
		if err := rows.Scan(&r.name, &r.value); err != nil {
			rows.Close()
			return err
		}
		recs = append(recs, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	now := time.Now().UnixMilli()
	for _, r := range recs {
		pt, err := both.Open(aad(r.name), r.value)
		if err != nil {
			return fmt.Errorf("record %q: %w", r.name, err)
		}
		sealed, err := both.Seal(aad(r.name), pt)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE encrypted SET value = ?, updated_at = ? WHERE name = ?`, sealed, now, r.name); err != nil {
			return err
		}
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	c, err := secrets.NewCipher(next)
	if err != nil {
		return err
	}
	s.cipher, s.key = c, next
	return nil
}

// RotateKey re-encrypts every secret with a new key. With a key file, it
// generates the key, writes it beside the old one as <keyFile>.new, re-
// encrypts in one transaction, then renames it into place (Open finishes a
// rotation cut short at any point). With the key from the environment,
// newKey (base64 or hex) is required and the caller must then start the
// daemon with it. It returns the new key's id.
func (s *Store) RotateKey(ctx context.Context, newKey string) (string, error) {
	s.mu.RLock()
	old := s.key
	s.mu.RUnlock()
	var err error
	if s.keyFile == "" {
		if newKey == "" {
			return "", errors.New("the key comes from PROXMOPS_ENCRYPTION_KEY: give the new key (PROXMOPS_NEW_ENCRYPTION_KEY) to rotate")
		}
		next, err := secrets.ParseKey(newKey)
		if err != nil {
			return "", fmt.Errorf("new key: %w", err)
		}
		if err := s.reencrypt(ctx, old, next); err != nil {
			return "", err
		}
		return next.ID(), nil
	}
	var next secrets.Key
	if newKey != "" {
		if next, err = secrets.ParseKey(newKey); err != nil {
			return "", fmt.Errorf("new key: %w", err)
		}
	} else if next, err = secrets.GenerateKey(); err != nil {
		return "", err
	}
	pendingPath := s.keyFile + ".new"
	if err := secrets.WriteKeyFile(pendingPath, next); err != nil {
		return "", fmt.Errorf("write new key file: %w", err)
	}
	// The daemon runs as its own user: a key file that became root's
	// (rotate-key run with sudo) would keep it from starting.
	if err := copyOwnerAndMode(pendingPath, s.keyFile); err != nil {
		os.Remove(pendingPath)
		return "", fmt.Errorf("new key file: %w", err)
	}
	if err := s.reencrypt(ctx, old, next); err != nil {
		os.Remove(pendingPath)
		return "", err
	}
	if err := os.Rename(pendingPath, s.keyFile); err != nil {
		return "", fmt.Errorf("the secrets are re-encrypted with the key in %s but it could not replace %s: %w (the next start finishes this)", pendingPath, s.keyFile, err)
	}
	return next.ID(), nil
}

// copyOwnerAndMode gives dst the owner, group and permission bits of src.
func copyOwnerAndMode(dst, src string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.Chmod(dst, fi.Mode().Perm()); err != nil {
		return err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	if err := os.Chown(dst, int(st.Uid), int(st.Gid)); err != nil {
		return fmt.Errorf("cannot give it the owner of %s (uid %d, gid %d): %w; run rotate-key as that user or as root", src, st.Uid, st.Gid, err)
	}
	return nil
}

func (s *Store) readEncrypted(ctx context.Context, name string) ([]byte, error) {
	s.mu.RLock()
	c := s.cipher
	s.mu.RUnlock()
	return openIn(ctx, s.db, c, name)
}

func (s *Store) writeEncrypted(ctx context.Context, name string, plaintext []byte) error {
	return s.sealEncrypted(ctx, name, plaintext, true)
}

// sealEncrypted saves a record sealed with the current key, replacing an
// existing one only when replace is set.
func (s *Store) sealEncrypted(ctx context.Context, name string, plaintext []byte, replace bool) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return sealIn(ctx, s.db, s.cipher, name, plaintext, replace)
}

// execer is the store's db or one of its transactions.
type execer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, q string, args ...any) *sql.Row
}

// sealIn saves a record sealed with c. Callers in a transaction hold s.mu
// (read) from before it began, so a key rotation never interleaves.
func sealIn(ctx context.Context, x execer, c *secrets.Cipher, name string, plaintext []byte, replace bool) error {
	sealed, err := c.Seal(aad(name), plaintext)
	if err != nil {
		return err
	}
	conflict := `DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`
	if !replace {
		conflict = `DO NOTHING`
	}
	_, err = x.ExecContext(ctx, `INSERT INTO encrypted (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) `+conflict, name, sealed, time.Now().UnixMilli())
	return err
}

// openIn reads a record and opens it with c (ErrNotFound when absent).
func openIn(ctx context.Context, x execer, c *secrets.Cipher, name string) ([]byte, error) {
	var v []byte
	err := x.QueryRowContext(ctx, `SELECT value FROM encrypted WHERE name = ?`, name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	pt, err := c.Open(aad(name), v)
	if err != nil {
		return nil, fmt.Errorf("encrypted record %q: %w", name, err)
	}
	return pt, nil
}
