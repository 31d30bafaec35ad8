package pve

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// APIError is an HTTP error answer from Proxmox that no more specific type
// describes. Message is Proxmox's reason phrase (or body message).
type APIError struct {
	Method     string
	Path       string
	StatusCode int
	Message    string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: %d %s", e.Method, e.Path, e.StatusCode, e.Message)
}

// AuthError is a 401: the token is missing, unknown or its secret is wrong.
type AuthError struct {
	TokenID string
	Message string
}

func (e *AuthError) Error() string {
	return fmt.Sprintf("authentication failed for API token %q: %s (check tokenId and tokenSecret)", e.TokenID, e.Message)
}

// PermissionError is a 403. Path and Privilege are parsed from Proxmox's
// "Permission check failed (/vms/100, VM.Config.CPU)" when present.
type PermissionError struct {
	Method    string
	Endpoint  string
	Path      string
	Privilege string
	Message   string
}

func (e *PermissionError) Error() string {
	if e.Privilege != "" {
		return fmt.Sprintf("%s %s: permission denied: the API token lacks privilege %s on %s", e.Method, e.Endpoint, e.Privilege, e.Path)
	}
	return fmt.Sprintf("%s %s: permission denied: %s", e.Method, e.Endpoint, e.Message)
}

// ParamError is a 400 "Parameter verification failed." with one message per
// parameter.
type ParamError struct {
	Method  string
	Path    string
	Message string
	Params  map[string]string
}

func (e *ParamError) Error() string {
	keys := make([]string, 0, len(e.Params))
	for k := range e.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.TrimSpace(e.Params[k]))
	}
	msg := e.Message
	if msg == "" {
		msg = "parameter verification failed"
	}
	if len(parts) == 0 {
		return fmt.Sprintf("%s %s: %s", e.Method, e.Path, msg)
	}
	return fmt.Sprintf("%s %s: %s: %s", e.Method, e.Path, strings.TrimSuffix(msg, "."), strings.Join(parts, "; "))
}

// UnreachableError means no HTTP answer was obtained at all (DNS, refused
// connection, timeout before any byte was sent).
type UnreachableError struct {
	Endpoint string
	Err      error
}

func (e *UnreachableError) Error() string {
	return fmt.Sprintf("Proxmox VE at %s is unreachable: %v", e.Endpoint, e.Err)
}

func (e *UnreachableError) Unwrap() error { return e.Err }

// UnknownOutcomeError means a write was sent but no answer came back: it may
// or may not have been carried out. Callers must re-read the cluster before
// deciding again; retrying blindly could create a guest twice.
type UnknownOutcomeError struct {
	Method string
	Path   string
	Err    error
}

func (e *UnknownOutcomeError) Error() string {
	return fmt.Sprintf("%s %s: outcome unknown (the connection failed after the request was sent; re-read the cluster before retrying): %v", e.Method, e.Path, e.Err)
}

func (e *UnknownOutcomeError) Unwrap() error { return e.Err }

// CertificateError is a TLS verification failure. With a pinned fingerprint,
// Expected and Actual are both set; otherwise Actual carries the presented
// certificate's fingerprint so that it can be checked and pinned.
type CertificateError struct {
	Expected string
	Actual   string
	Err      error
}

func (e *CertificateError) Error() string {
	if e.Expected != "" {
		return fmt.Sprintf("TLS certificate fingerprint mismatch: expected %s, server presented %s", e.Expected, e.Actual)
	}
	if e.Actual != "" {
		return fmt.Sprintf("TLS certificate not trusted (%v); the server's SHA-256 fingerprint is %s: pin it with cluster.fingerprint or give cluster.caFile", e.Err, e.Actual)
	}
	return fmt.Sprintf("TLS certificate not trusted: %v", e.Err)
}

func (e *CertificateError) Unwrap() error { return e.Err }

// TaskError is a task that ended with an exit status other than OK or
// "WARNINGS: N". Log holds its last log lines.
type TaskError struct {
	UPID       string
	Type       string
	ExitStatus string
	Log        []string
}

func (e *TaskError) Error() string {
	msg := fmt.Sprintf("task %s failed: %s", e.Type, e.ExitStatus)
	if len(e.Log) > 0 {
		last := e.Log[len(e.Log)-1]
		if !strings.Contains(msg, strings.TrimPrefix(last, "TASK ERROR: ")) {
			msg += " (" + last + ")"
		}
	}
	return msg
}

var permissionRe = regexp.MustCompile(`Permission check failed \(([^,]+),\s*([^)]+)\)`)

func parsePermission(msg string) (path, priv string) {
	if m := permissionRe.FindStringSubmatch(msg); m != nil {
		return strings.TrimSpace(m[1]), strings.TrimSpace(m[2])
	}
	return "", ""
}

// IsNotFound reports whether err says the object does not exist.
func IsNotFound(err error) bool {
	if err == nil {
		return false
	}
	var ae *APIError
	if errors.As(err, &ae) {
		if ae.StatusCode == 404 {
			return true
		}
		return notFoundMessage(ae.Message)
	}
	var te *TaskError
	if errors.As(err, &te) {
		return notFoundMessage(te.ExitStatus)
	}
	return false
}

func notFoundMessage(msg string) bool {
	m := strings.ToLower(msg)
	return strings.Contains(m, "does not exist") || strings.Contains(m, "unable to find configuration file") ||
		strings.Contains(m, "no such ")
}

// IsLockTimeout reports whether err is Proxmox's "can't lock file ... got
// timeout": another operation held the guest's lock. The next pass retries.
func IsLockTimeout(err error) bool {
	if err == nil {
		return false
	}
	return strings.Contains(err.Error(), "can't lock file") || strings.Contains(err.Error(), "got timeout")
}

// IsSDNLocked reports whether err is pve-network's lock_sdn_config refusal:
// someone holds the SDN configuration lock (POST /cluster/sdn/lock) and
// the call did not carry its token. The lock is released by its holder,
// so the next pass retries.
func IsSDNLocked(err error) bool {
	return err != nil && strings.Contains(err.Error(), "invalid lock token provided!")
}

// IsUnknownOutcome reports whether err is an *UnknownOutcomeError.
func IsUnknownOutcome(err error) bool {
	var u *UnknownOutcomeError
	return errors.As(err, &u)
}

// IsTransient reports whether a retry later has a fair chance: an unreachable
// endpoint, an unknown outcome, a lock timeout, the SDN configuration lock
// or a 5xx gateway answer.
func IsTransient(err error) bool {
	if err == nil {
		return false
	}
	var ue *UnreachableError
	if errors.As(err, &ue) || IsUnknownOutcome(err) || IsLockTimeout(err) || IsSDNLocked(err) {
		return true
	}
	var ae *APIError
	if errors.As(err, &ae) {
		return ae.StatusCode == 502 || ae.StatusCode == 503 || ae.StatusCode == 504
	}
	return false
}

// IsTerminal reports whether err is a refusal that a retry of the same
// request cannot change: Proxmox refused a parameter (400, raise_param_exc),
// the token lacks a privilege (403) or is not accepted (401), the server's
// certificate is not trusted, or the request conflicts (409). Something
// has to change first: the manifests, the token, the settings, the
// cluster. Everything else (5xx, a failed task, a lock, a timeout, an
// unknown outcome, an unreachable node) may pass by itself.
func IsTerminal(err error) bool {
	if err == nil || IsTransient(err) {
		return false
	}
	var (
		pe  *ParamError
		fe  *PermissionError
		ae  *AuthError
		ce  *CertificateError
		api *APIError
	)
	switch {
	case errors.As(err, &pe), errors.As(err, &fe), errors.As(err, &ae), errors.As(err, &ce):
		return true
	case errors.As(err, &api):
		return api.StatusCode == 409
	}
	return false
}
