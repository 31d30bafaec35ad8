package api

import (
	"time"

	"github.com/proxmops/proxmops/internal/vocab"
)

// Pin is a revision the controller plans and applies instead of the head
// of the watched branch, until an admin unpins it (persisted in the store).
type Pin struct {
	Revision string    `json:"revision"` // full commit hash
	Message  string    `json:"message"`  // its subject
	By       string    `json:"by"`       // who pinned it
	At       time.Time `json:"at"`
}

// RevisionResult is what the passes at one commit did: the status counts of
// the last pass at it, and the history events recorded with it.
type RevisionResult struct {
	FirstPass time.Time            `json:"firstPass"`
	LastPass  time.Time            `json:"lastPass"`
	Counts    map[vocab.Status]int `json:"counts"`
	Events    map[HistoryEvent]int `json:"events"`
}

// Revision is one commit of the watched branch (GET /api/v1/revisions).
type Revision struct {
	Hash    string    `json:"hash"`
	Time    time.Time `json:"time"`
	Author  string    `json:"author"`
	Message string    `json:"message"`
	// Current: the desired state in force is this commit.
	Current bool `json:"current"`
	Pinned  bool `json:"pinned"`
	// LoadErrors: this commit is the branch head and its manifests fail to
	// load, one error per item; it can be neither applied nor pinned.
	LoadErrors []string `json:"loadErrors,omitempty"`
	// Result is null when no pass ran at this commit.
	Result *RevisionResult `json:"result"`
}

// RevisionList is the document of GET /api/v1/revisions, newest first.
type RevisionList struct {
	Branch    string     `json:"branch"`
	Pinned    *Pin       `json:"pinned"`
	Revisions []Revision `json:"revisions"`
}

// PinRequest is the body of POST /api/v1/revisions/pin.
type PinRequest struct {
	Revision string `json:"revision"`
}
