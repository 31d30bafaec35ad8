package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"syscall"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// Kind classifies a sync failure. A Kind is itself an error, so callers
// test with errors.Is(err, source.ErrAuth).
type Kind string

func (k Kind) Error() string { return string(k) }

// The kinds of failure a sync reports.
const (
	// ErrAuth: the server refused the credentials, or needs some.
	ErrAuth Kind = "authentication failed"
	// ErrHostKey: the SSH server's host key is unknown or does not match.
	ErrHostKey Kind = "SSH host key not trusted"
	// ErrRepositoryNotFound: no repository at the URL or local path.
	ErrRepositoryNotFound Kind = "repository not found"
	// ErrEmptyRepository: the repository has no commits.
	ErrEmptyRepository Kind = "repository is empty"
	// ErrRevisionNotFound: no such branch, tag or commit.
	ErrRevisionNotFound Kind = "revision not found"
	// ErrPathNotFound: the watched path does not exist at the revision.
	ErrPathNotFound Kind = "path not found"
	// ErrUnreachable: the server could not be reached (DNS, connection,
	// TLS, timeout).
	ErrUnreachable Kind = "Git server unreachable"
	// ErrSubmodule: a submodule could not be resolved or fetched.
	ErrSubmodule Kind = "submodule failed"
	// ErrInvalid: the options are wrong (bad URL, bad key).
	ErrInvalid Kind = "invalid source settings"
	// ErrFetch: the fetch failed for another reason.
	ErrFetch Kind = "fetch failed"
	// ErrCheckout: writing the checked-out tree to disk failed.
	ErrCheckout Kind = "checkout failed"
)

// Error is a sync failure: what went wrong (Kind), where, a sentence for a
// person (Detail) and the underlying error.
type Error struct {
	Kind     Kind
	URL      string // without credentials
	Revision string
	Path     string
	Detail   string
	Err      error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("git: ")
	b.WriteString(string(e.Kind))
	if e.URL != "" {
		fmt.Fprintf(&b, " (%s", e.URL)
		if e.Revision != "" {
			fmt.Fprintf(&b, " at %s", e.Revision)
		}
		b.WriteString(")")
	}
	if e.Detail != "" {
		b.WriteString(": ")
		b.WriteString(e.Detail)
	}
	if e.Err != nil && !strings.Contains(e.Detail, e.Err.Error()) {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrAuth) and friends work.
func (e *Error) Is(target error) bool {
	k, ok := target.(Kind)
	return ok && k == e.Kind
}

// KindOf returns the Kind of err, or "" when err is not a source error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// classify maps an error from go-git or the network to a Kind, and gives
// a hint a person can act on.
func classify(err error) (Kind, string) {
	msg := err.Error()
	var netErr net.Error
	var urlErr *url.Error
	var opErr *net.OpError
	var dnsErr *net.DNSError
	switch {
	case errors.Is(err, transport.ErrAuthenticationRequired):
		return ErrAuth, "the server wants credentials: set source.tokenFile (or PROXMOPS_GIT_TOKEN) and source.username"
	case errors.Is(err, transport.ErrAuthorizationFailed):
		return ErrAuth, "the server refused the credentials: check the token, its expiry and its read access to the repository"
	case errors.Is(err, transport.ErrInvalidAuthMethod):
		return ErrAuth, "these credentials do not fit this kind of URL (a token is for https, an SSH key for ssh)"
	case strings.Contains(msg, "unable to authenticate") || strings.Contains(msg, "no supported methods remain"):
		return ErrAuth, "the SSH server refused the key: check source.sshKeyFile and that the key is a deploy key of the repository"
	case strings.Contains(msg, "knownhosts:") || strings.Contains(msg, "host key"):
		return ErrHostKey, "add the server's key to source.knownHostsFile (ssh-keyscan HOST), or set source.insecureIgnoreHostKey"
	case errors.Is(err, transport.ErrRepositoryNotFound):
		return ErrRepositoryNotFound, "check source.repoURL (a private repository also answers \"not found\" without valid credentials)"
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return ErrEmptyRepository, "push a first commit"
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return ErrUnreachable, "timed out or cancelled"
	case errors.As(err, &dnsErr):
		return ErrUnreachable, "the host name does not resolve"
	case errors.Is(err, syscall.ECONNREFUSED):
		return ErrUnreachable, "connection refused"
	case errors.As(err, &opErr), errors.As(err, &netErr), errors.As(err, &urlErr):
		return ErrUnreachable, ""
	case errors.Is(err, io.ErrUnexpectedEOF) || strings.Contains(msg, "connection reset") || strings.Contains(msg, "tls:") || strings.Contains(msg, "x509:"):
		return ErrUnreachable, ""
	}
	return ErrFetch, ""
}

// wrapFetchError turns err into an *Error for a network operation.
func (s *Syncer) wrapFetchError(err error, revision string) error {
	var e *Error
	if errors.As(err, &e) {
		return err
	}
	kind, hint := classify(err)
	return &Error{Kind: kind, URL: redactURL(s.url), Revision: revision, Detail: hint, Err: err}
}

// redactURL drops a password or token from a URL's user info.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || !strings.Contains(raw, "://") {
		return raw
	}
	if _, has := u.User.Password(); has {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	return u.String()
}
