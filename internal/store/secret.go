package store

import (
	"context"
	"errors"
)

// secretPrefix keeps the records of Secret apart from the settings'.
const secretPrefix = "secret/"

// Secret reads an encrypted record saved by PutSecret (ok false when there
// is none). A record that does not decrypt is an error.
func (s *Store) Secret(ctx context.Context, name string) ([]byte, bool, error) {
	v, err := s.readEncrypted(ctx, secretPrefix+name)
	if errors.Is(err, ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// PutSecret saves value encrypted with the store's key (re-encrypted by a
// key rotation like the settings).
func (s *Store) PutSecret(ctx context.Context, name string, value []byte) error {
	return s.writeEncrypted(ctx, secretPrefix+name, value)
}

// DeleteState removes a value saved by PutState (no error when absent).
func (s *Store) DeleteState(ctx context.Context, key string) error {
	return s.DeleteStateChecked(ctx, key, nil)
}

// DeleteStateChecked is DeleteState with check (nil: none) run first in
// its transaction.
func (s *Store) DeleteStateChecked(ctx context.Context, key string, check Check) error {
	if check == nil {
		_, err := s.db.ExecContext(ctx, `DELETE FROM state WHERE key = ?`, key)
		return err
	}
	return s.checkedExec(ctx, check, `DELETE FROM state WHERE key = ?`, key)
}
