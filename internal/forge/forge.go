package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/proxmops/proxmops/internal/config"
)

// Marker is the hidden first line of proxmops' comment: the comment is
// found again by it, so a later push edits it instead of adding another.
const Marker = "<!-- proxmops:plan -->"

// StatusContext names proxmops' commit status on every forge.
const StatusContext = "proxmops/plan"

// Comment is a comment on a request, as the forge lists it.
type Comment struct {
	ID   int64
	Body string
	URL  string
}

// Status is a commit status: State is success, failure, error or pending.
type Status struct {
	State       string
	Description string
	TargetURL   string
}

// Client is what previews need of a forge, for one repository.
type Client interface {
	// Comments lists every comment of request number, oldest first.
	Comments(ctx context.Context, number int64) ([]Comment, error)
	CreateComment(ctx context.Context, number int64, body string) (Comment, error)
	EditComment(ctx context.Context, number int64, id int64, body string) (Comment, error)
	// SetStatus sets StatusContext on commit sha.
	SetStatus(ctx context.Context, sha string, st Status) error
}

// NewClient is the client of the configured forge; hc carries the
// requests (its transport is wrapped to wait out rate limits).
func NewClient(f config.Forge, hc *http.Client) (Client, error) {
	owner, name, _ := strings.Cut(f.Repository, "/")
	switch f.Type {
	case config.ForgeGitHub:
		return newGitHub(f.APIURL, f.Token, owner, name, hc)
	case config.ForgeGitea:
		return newGitea(f.APIURL, f.Token, owner, name, hc)
	case config.ForgeGitLab:
		return newGitLab(f.APIURL, f.Token, f.Repository, hc)
	}
	return nil, fmt.Errorf("forge.type %q is not github, gitea or gitlab", f.Type)
}

// upsertComment edits proxmops' comment on the request, or creates it
// when there is none: one comment per request, whatever the pushes.
func upsertComment(ctx context.Context, c Client, number int64, body string) (Comment, error) {
	list, err := c.Comments(ctx, number)
	if err != nil {
		return Comment{}, fmt.Errorf("listing the comments: %w", err)
	}
	for _, cm := range list {
		if strings.HasPrefix(strings.TrimSpace(cm.Body), Marker) {
			if cm.Body == body {
				return cm, nil
			}
			out, err := c.EditComment(ctx, number, cm.ID, body)
			if err != nil {
				return Comment{}, fmt.Errorf("editing comment %d: %w", cm.ID, err)
			}
			return out, nil
		}
	}
	out, err := c.CreateComment(ctx, number, body)
	if err != nil {
		return Comment{}, fmt.Errorf("commenting: %w", err)
	}
	return out, nil
}

// maxPages bounds a comment listing (100 per page).
const maxPages = 50
