// Package store is the daemon's database, SQLite (modernc.org/sqlite, no
// cgo; Options.Path) or PostgreSQL (pgx through database/sql; Options.URL):
// accounts, sessions, API tokens, the settings saved from the UI (encrypted
// with internal/secrets, one record per section, each bound to its record
// name), per-resource history with retention caps, and a small key/value
// table for the controller's own state.
//
// The schema is built by numbered migrations recorded in schema_migrations,
// each written for both engines; Open applies those not yet applied in one
// transaction under the write lock, so opening an existing database again
// is a no-op, processes opening one together apply each step once, and a
// database written by a newer proxmops is refused. Queries are written once
// with `?` placeholders; dialect.go adapts them. On PostgreSQL every write
// transaction first takes one advisory lock, so writes are serialised across
// replicas as SQLite's BEGIN IMMEDIATE serialises them across processes.
//
// Secrets never reach the database in clear: passwords are argon2id PHC
// strings (internal/auth), session, API and setup tokens are SHA-256 hashes,
// and the settings are AES-256-GCM ciphertexts.
package store
