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
	case strings.Contains(msg, "valid known_hosts file"):
		return ErrHostKey, "no known_hosts file to check the server's key against: set source.knownHostsFile (ssh-keyscan HOST > /etc/proxmops/known_hosts; the service's home has no ~/.ssh)"
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
	return &Error{Kind: kind, URL: redactURL(s.url), Revision: revision, Detail: hint, Err: tidyReply(err)}
}

// replyError is an HTTP refusal from the Git server (401, 403, 404) with
// what the server said, cut to one line; it still matches go-git's error.
type replyError struct {
	sentinel error
	reply    string
}

func (e *replyError) Error() string {
	if e.reply == "" {
		return e.sentinel.Error()
	}
	return e.sentinel.Error() + ": " + e.reply
}

func (e *replyError) Unwrap() error { return e.sentinel }

// maxReply bounds the server's words kept in an error.
const maxReply = 200

// tidyReply shortens go-git's HTTP refusals, which carry the whole response
// body (a forge's 404 is an HTML page): a plain-text reason is kept to its
// first line, a page is dropped.
func tidyReply(err error) error {
	for _, sentinel := range []error{transport.ErrRepositoryNotFound, transport.ErrAuthenticationRequired, transport.ErrAuthorizationFailed} {
		if !errors.Is(err, sentinel) {
			continue
		}
		body, ok := strings.CutPrefix(err.Error(), sentinel.Error())
		if !ok {
			return err
		}
		body = strings.TrimSpace(strings.TrimPrefix(body, ":"))
		lower := strings.ToLower(body)
		if strings.Contains(lower, "<html") || strings.Contains(lower, "<!doctype") || strings.Contains(lower, "<body") {
			body = ""
		}
		body, _, _ = strings.Cut(body, "\n")
		if len(body) > maxReply {
			body = strings.ToValidUTF8(body[:maxReply], "") + "…"
		}
		return &replyError{sentinel: sentinel, reply: strings.TrimSpace(body)}
	}
	return err
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
