package pvesim

import (
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// APIError is an answer other than 200 (see pvesim/route).
type APIError = route.APIError

// Fail returns a 500 error with Proxmox's text (a trailing newline is
// added, as Perl's die messages have one).
func Fail(format string, args ...any) error { return route.Fail(format, args...) }

// Failf is Fail with an explicit status.
func Failf(status int, format string, args ...any) error {
	return route.Failf(status, format, args...)
}

// ParamError is Proxmox's raise_param_exc: 400 "Parameter verification
// failed." with the messages keyed by parameter.
func ParamError(errs map[string]string) error { return route.ParamError(errs) }

// ParamErr is ParamError for one parameter.
func ParamErr(name, msg string) error { return route.ParamErr(name, msg) }

// asAPIError turns any error into the answer Proxmox would give.
func asAPIError(err error) *APIError { return route.AsAPIError(err) }

// reasonPhrase is the first line of a message, as pve-http-server puts it
// in the status line.
func reasonPhrase(msg string) string {
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	return msg
}
