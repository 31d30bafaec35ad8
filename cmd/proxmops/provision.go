package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/store"
)

// lazyStore is the daemon's database, opened only when provisioning first
// needs its key or a pinned host key: plan and apply share the key pair and
// the pins with `proxmops serve`.
type lazyStore struct {
	opt store.Options
	// prefix is a cluster's state prefix in a clusters list (as the
	// daemon keeps them: api.ClusterStatePrefix), "" for the single
	// cluster section: host key pins of one cluster say nothing of another's.
	prefix string
	// readOnly is a command that must leave no database behind (plan):
	// a SQLite file that is not there is not made, and reading from it
	// is an error that says so.
	readOnly bool
	once     sync.Once
	st       *store.Store
	err      error
}

func (l *lazyStore) open(ctx context.Context) (*store.Store, error) {
	l.once.Do(func() {
		if l.err = stateOutsideWorkTree(config.Server{DatabasePath: l.opt.Path, Database: l.opt.URL, KeyFile: l.opt.KeyFile}); l.err != nil {
			return
		}
		if l.readOnly && l.opt.URL == "" {
			if _, err := os.Stat(l.opt.Path); errors.Is(err, fs.ErrNotExist) {
				l.err = &noDatabaseError{path: l.opt.Path}
				return
			}
		}
		l.st, l.err = store.Open(ctx, l.opt)
	})
	return l.st, l.err
}

// noDatabaseError is a read-only command's answer when the daemon's
// database is not where the configuration says: what proxmops records
// there (which storages it made) cannot be known, and the command does not
// make an empty database to pretend otherwise.
type noDatabaseError struct{ path string }

func (e *noDatabaseError) Error() string {
	return fmt.Sprintf("proxmops keeps what it made that Proxmox cannot mark (storages) in the daemon's database, and there is none at %s: run with the daemon's database (server.databasePath or server.database) to tell whether it is proxmops'", e.path)
}

func (l *lazyStore) close() {
	if l.st != nil {
		l.st.Close()
	}
}

func (l *lazyStore) Secret(ctx context.Context, name string) ([]byte, bool, error) {
	st, err := l.open(ctx)
	if err != nil {
		return nil, false, err
	}
	return st.Secret(ctx, name)
}

func (l *lazyStore) PutSecret(ctx context.Context, name string, v []byte) error {
	st, err := l.open(ctx)
	if err != nil {
		return err
	}
	return st.PutSecret(ctx, name, v)
}

func (l *lazyStore) State(ctx context.Context, key string) ([]byte, bool, error) {
	st, err := l.open(ctx)
	if err != nil {
		return nil, false, err
	}
	return st.State(ctx, l.prefix+key)
}

func (l *lazyStore) PutState(ctx context.Context, key string, v []byte) error {
	st, err := l.open(ctx)
	if err != nil {
		return err
	}
	return st.PutState(ctx, l.prefix+key, v)
}

func (l *lazyStore) DeleteState(ctx context.Context, key string) error {
	st, err := l.open(ctx)
	if err != nil {
		return err
	}
	return st.DeleteState(ctx, l.prefix+key)
}

// provisioner builds the CLI's provisioner on the configured key file and
// the daemon's database.
func provisioner(cfg *config.Config) (*provision.Runner, *lazyStore) {
	ls := &lazyStore{opt: store.ServerOptions(cfg.Server, os.Getenv(envEncryptionKey))}
	return provision.NewRunner(provision.NewKeys(ls, cfg.Provision.SSHKeyFile)), ls
}
