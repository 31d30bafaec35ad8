// Package store is the daemon's SQLite database (modernc.org/sqlite, no cgo):
// accounts, sessions, API tokens, the settings saved from the UI (encrypted
// with internal/secrets, one record per section, each bound to its record
// name), per-resource history with retention caps, and a small key/value
// table for the controller's own state.
//
// The schema is built by numbered migrations recorded in schema_migrations;
// Open applies those not yet applied, so opening an existing database again
// is a no-op, and a database written by a newer proxmops is refused.
//
// Secrets never reach the database in clear: passwords are argon2id PHC
// strings (internal/auth), session, API and setup tokens are SHA-256 hashes,
// and the settings are AES-256-GCM ciphertexts.
package store
