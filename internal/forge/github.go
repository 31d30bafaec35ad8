package forge

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/google/go-github/v84/github"
)

// gitHub speaks GitHub's REST API through go-github: a pull request's
// comments are its issue's (GET/POST /repos/{owner}/{repo}/issues/{n}/comments,
// PATCH /repos/{owner}/{repo}/issues/comments/{id}), the status is
// POST /repos/{owner}/{repo}/statuses/{sha}.
type gitHub struct {
	c           *github.Client
	owner, repo string
}

func newGitHub(apiURL, token, owner, repo string, hc *http.Client) (*gitHub, error) {
	c := github.NewClient(withRetries(hc)).WithAuthToken(token)
	// The API base as given (api.github.com, or GHES's https://HOST/api/v3):
	// WithEnterpriseURLs would add /api/v3/ to any other address.
	base, err := url.Parse(strings.TrimRight(apiURL, "/") + "/")
	if err != nil {
		return nil, fmt.Errorf("forge.apiURL: %w", err)
	}
	c.BaseURL = base
	return &gitHub{c: c, owner: owner, repo: repo}, nil
}

func (g *gitHub) Comments(ctx context.Context, number int64) ([]Comment, error) {
	var out []Comment
	opt := &github.IssueListCommentsOptions{ListOptions: github.ListOptions{PerPage: 100}}
	for range maxPages {
		list, resp, err := g.c.Issues.ListComments(ctx, g.owner, g.repo, int(number), opt)
		if err != nil {
			return nil, err
		}
		for _, c := range list {
			out = append(out, Comment{ID: c.GetID(), Body: c.GetBody(), URL: c.GetHTMLURL()})
		}
		if resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *gitHub) CreateComment(ctx context.Context, number int64, body string) (Comment, error) {
	c, _, err := g.c.Issues.CreateComment(ctx, g.owner, g.repo, int(number), &github.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: c.GetID(), Body: c.GetBody(), URL: c.GetHTMLURL()}, nil
}

func (g *gitHub) EditComment(ctx context.Context, _ int64, id int64, body string) (Comment, error) {
	c, _, err := g.c.Issues.EditComment(ctx, g.owner, g.repo, id, &github.IssueComment{Body: &body})
	if err != nil {
		return Comment{}, err
	}
	return Comment{ID: c.GetID(), Body: c.GetBody(), URL: c.GetHTMLURL()}, nil
}

func (g *gitHub) SetStatus(ctx context.Context, sha string, st Status) error {
	s := github.RepoStatus{State: &st.State, Description: &st.Description, Context: github.Ptr(StatusContext)}
	if st.TargetURL != "" {
		s.TargetURL = &st.TargetURL
	}
	_, _, err := g.c.Repositories.CreateStatus(ctx, g.owner, g.repo, sha, s)
	return err
}

// withRetries is hc with its transport waiting out rate limits.
func withRetries(hc *http.Client) *http.Client {
	if hc == nil {
		hc = &http.Client{}
	}
	cp := *hc
	cp.Transport = newRetryTransport(hc.Transport)
	return &cp
}
