package forge

import (
	"context"
	"net/http"
	"strings"

	gitlab "gitlab.com/gitlab-org/api/client-go/v2"
)

// gitLab speaks GitLab's REST API through its client: a merge request's
// notes (GET/POST /api/v4/projects/{id}/merge_requests/{iid}/notes, PUT
// .../notes/{note_id}) and the commit status (POST
// /api/v4/projects/{id}/statuses/{sha}). The project is given by its path.
// The client retries 429s itself; its backoff is ours (Retry-After).
type gitLab struct {
	c       *gitlab.Client
	project string
}

func newGitLab(apiURL, token, project string, hc *http.Client) (*gitLab, error) {
	if hc == nil {
		hc = &http.Client{}
	}
	c, err := gitlab.NewClient(token,
		gitlab.WithBaseURL(strings.TrimRight(apiURL, "/")), // the client adds /api/v4/ when missing
		gitlab.WithHTTPClient(hc),
		gitlab.WithCustomRetryMax(MaxRetries),
		gitlab.WithCustomBackoff(gitlabBackoff),
	)
	if err != nil {
		return nil, err
	}
	return &gitLab{c: c, project: project}, nil
}

func (g *gitLab) Comments(ctx context.Context, number int64) ([]Comment, error) {
	var out []Comment
	opt := &gitlab.ListMergeRequestNotesOptions{ListOptions: gitlab.ListOptions{PerPage: 100, Page: 1}}
	for range maxPages {
		list, resp, err := g.c.Notes.ListMergeRequestNotes(g.project, number, opt, gitlab.WithContext(ctx))
		if err != nil {
			return nil, err
		}
		for _, n := range list {
			if !n.System {
				out = append(out, Comment{ID: n.ID, Body: n.Body})
			}
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *gitLab) CreateComment(ctx context.Context, number int64, body string) (Comment, error) {
	n, _, err := g.c.Notes.CreateMergeRequestNote(g.project, number, &gitlab.CreateMergeRequestNoteOptions{Body: &body}, gitlab.WithContext(ctx))
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: n.ID, Body: n.Body}, nil
}

func (g *gitLab) EditComment(ctx context.Context, number int64, id int64, body string) (Comment, error) {
	n, _, err := g.c.Notes.UpdateMergeRequestNote(g.project, number, id, &gitlab.UpdateMergeRequestNoteOptions{Body: &body}, gitlab.WithContext(ctx))
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: n.ID, Body: n.Body}, nil
}

func (g *gitLab) SetStatus(ctx context.Context, sha string, st Status) error {
	opt := &gitlab.SetCommitStatusOptions{State: gitlab.BuildStateValue(st.State), Name: gitlab.Ptr(StatusContext), Description: &st.Description}
	if st.TargetURL != "" {
		opt.TargetURL = &st.TargetURL
	}
	// GitLab's states: pending, running, success, failed, canceled, skipped.
	switch st.State {
	case "failure", "error":
		opt.State = gitlab.Failed
	}
	_, _, err := g.c.Commits.SetCommitStatus(g.project, sha, opt, gitlab.WithContext(ctx))
	return err
}
