package controller

import (
	"fmt"
	"strings"

	"github.com/proxmops/proxmops/internal/api"
)

// notReadyError is an api.ErrNotReady whose text is only the reason: the
// UI shows it as is, one line per error, without a trailing "not ready".
type notReadyError struct{ msg string }

func (e notReadyError) Error() string        { return e.msg }
func (e notReadyError) Is(target error) bool { return target == api.ErrNotReady }

// invalidRevisionError is an api.ErrInvalid for a previewed revision whose
// manifests do not load: a first line naming the commit, then one line per
// error, as the UI lists them, without a trailing "invalid request".
type invalidRevisionError struct{ msg string }

func (e invalidRevisionError) Error() string        { return e.msg }
func (e invalidRevisionError) Is(target error) bool { return target == api.ErrInvalid }

func invalidRevision(commit string, err error) error {
	return invalidRevisionError{fmt.Sprintf("the manifests at %s failed to load:\n%s",
		short(commit), strings.Join(loadErrorOf(commit, err).Errors, "\n"))}
}

// loadFailure is pull's error when the manifests of a commit do not load:
// the pass records it as loadErr (one item per error), not as a source
// problem repeating the same errors in one line.
type loadFailure struct{ err error }

func (e loadFailure) Error() string { return e.err.Error() }
func (e loadFailure) Unwrap() error { return e.err }

// notLoaded says why there is no desired state yet, for the answers that
// need one: the head's load errors when its manifests failed to load, the
// last pass's source problems, the configuration's, or that the first
// pass has not read the repository yet.
func (c *Controller) notLoaded() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.notLoadedLocked()
}

func (c *Controller) notLoadedLocked() error {
	if le := c.loadErr; le != nil {
		return notReadyError{fmt.Sprintf("no revision is loaded: the manifests at %s failed to load:\n%s",
			short(le.Revision), strings.Join(le.Errors, "\n"))}
	}
	if c.sourceErr != "" {
		return notReadyError{"no revision is loaded: " + c.sourceErr}
	}
	if msg := c.configProblems(); msg != "" {
		return notReadyError{"no revision is loaded: " + msg}
	}
	return notReadyError{"no revision is loaded yet: the first pass has not read the repository"}
}
