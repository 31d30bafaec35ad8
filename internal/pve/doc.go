// Package pve is a typed client for the parts of the Proxmox VE REST API
// (/api2/json) that proxmops uses.
//
// It authenticates with an API token, verifies TLS by default (with a CA file,
// a pinned SHA-256 certificate fingerprint, or an explicit opt-out), encodes
// parameters exactly as Proxmox expects them (booleans as 0/1, sshkeys
// percent-encoded with %20, DELETE parameters in the query string), waits for
// asynchronous tasks and reports a failed task as an error carrying Proxmox's
// own text.
//
// Reads (GET) are retried with backoff on transient failures. Writes are never
// retried once the request may have reached the server: when the connection
// drops after a write was sent, the client returns an *UnknownOutcomeError so
// the caller re-reads the cluster and re-plans instead of creating twice.
//
// Errors are typed so that callers can react to the common faults: wrong token
// (*AuthError), missing privilege (*PermissionError, with path and privilege),
// invalid parameters (*ParamError, per parameter), missing objects
// (IsNotFound), lock timeouts (IsLockTimeout), unreachable endpoints
// (*UnreachableError), certificate mismatches (*CertificateError) and failed
// tasks (*TaskError).
package pve
