package api

// Accepted is the answer told in one sentence: an action that starts work
// and does not wait for it (sync, delete, refresh, unpin: 202), or a
// request with nothing more to say (a host key reset, a webhook's
// delivery, /healthz).
type Accepted struct {
	Status string `json:"status"`
}

// DryRun is the answer of a sync with dryRun: nothing was changed, Plan is
// what the sync would do.
type DryRun struct {
	Plan   Plan   `json:"plan"`
	Status string `json:"status"`
}

// PinAccepted is the answer of POST /api/v1/revisions/pin: the pin and
// the sync to it started.
type PinAccepted struct {
	Pinned Pin    `json:"pinned"`
	Status string `json:"status"`
}

// SetupState is GET /api/v1/setup: Needed while no account exists, so the
// UI offers first-run setup instead of a login.
type SetupState struct {
	Needed bool `json:"needed"`
}

// UserList is the document of GET /api/v1/users.
type UserList struct {
	Users []User `json:"users"`
}

// TokenList is the document of GET /api/v1/tokens.
type TokenList struct {
	Tokens []Token `json:"tokens"`
}
