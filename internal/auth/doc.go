// Package auth holds the credential primitives of the daemon: argon2id
// password hashing in PHC form, random 256-bit tokens stored only as
// SHA-256 hashes, CSRF tokens derived from the session token, and a
// failed-login limiter that backs off without ever locking out for good.
// The HTTP flow around them is in internal/server; storage in internal/store.
package auth
