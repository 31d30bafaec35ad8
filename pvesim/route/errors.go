package route

import (
	"fmt"
	"strings"
)

// APIError is an answer other than 200: Proxmox puts Message (first line)
// in the HTTP reason phrase and in the body's "message", and Errors (per
// parameter) in the body's "errors".
type APIError struct {
	Status  int
	Message string
	Errors  map[string]string
	// PlainBody sends Message as a text body instead of the JSON envelope
	// (the HTTP server's own errors, such as 501 "Unexpected content").
	PlainBody bool
	// NoBody sends no body at all (401 from the authentication layer).
	NoBody bool
}

func (e *APIError) Error() string { return strings.TrimRight(e.Message, "\n") }

// Fail returns a 500 error with Proxmox's text (a trailing newline is
// added, as Perl's die messages have one).
func Fail(format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return &APIError{Status: 500, Message: msg}
}

// Failf is Fail with an explicit status.
func Failf(status int, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return &APIError{Status: status, Message: msg}
}

// ParamError is Proxmox's raise_param_exc: 400 "Parameter verification
// failed." with the messages keyed by parameter.
func ParamError(errs map[string]string) error {
	return &APIError{Status: 400, Message: "Parameter verification failed.\n", Errors: errs}
}

// ParamErr is ParamError for one parameter.
func ParamErr(name, msg string) error { return ParamError(map[string]string{name: msg}) }

// AsAPIError turns any error into the answer Proxmox would give.
func AsAPIError(err error) *APIError {
	if ae, ok := err.(*APIError); ok {
		return ae
	}
	msg := err.Error()
	if !strings.HasSuffix(msg, "\n") {
		msg += "\n"
	}
	return &APIError{Status: 500, Message: msg}
}
