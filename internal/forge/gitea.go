package forge

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"code.gitea.io/sdk/gitea"
)

// giteaForge speaks Gitea's (and Forgejo's) API through the Gitea SDK: a
// pull request's comments are its issue's (GET/POST
// /api/v1/repos/{owner}/{repo}/issues/{index}/comments, PATCH
// /api/v1/repos/{owner}/{repo}/issues/comments/{id}), the status is POST
// /api/v1/repos/{owner}/{repo}/statuses/{sha}.
type giteaForge struct {
	base, token string
	owner, repo string
	hc          *http.Client
}

func newGitea(apiURL, token, owner, repo string, hc *http.Client) (*giteaForge, error) {
	// The SDK adds /api/v1 itself.
	base := strings.TrimSuffix(strings.TrimRight(apiURL, "/"), "/api/v1")
	if base == "" {
		return nil, fmt.Errorf("forge.apiURL is empty")
	}
	return &giteaForge{base: base, token: token, owner: owner, repo: repo, hc: withRetries(hc)}, nil
}

// client is an SDK client bound to ctx (the SDK takes the context per
// client). SetGiteaVersion("") skips the SDK's version probe: the calls
// used here are in every Gitea and Forgejo release since 1.11.
func (g *giteaForge) client(ctx context.Context) (*gitea.Client, error) {
	return gitea.NewClient(g.base, gitea.SetToken(g.token), gitea.SetHTTPClient(g.hc),
		gitea.SetContext(ctx), gitea.SetGiteaVersion(""))
}

func (g *giteaForge) Comments(ctx context.Context, number int64) ([]Comment, error) {
	c, err := g.client(ctx)
	if err != nil {
		return nil, err
	}
	var out []Comment
	opt := gitea.ListIssueCommentOptions{ListOptions: gitea.ListOptions{Page: 1, PageSize: 50}}
	for range maxPages {
		list, resp, err := c.ListIssueComments(g.owner, g.repo, number, opt)
		if err != nil {
			return nil, err
		}
		for _, cm := range list {
			out = append(out, giteaComment(cm))
		}
		if len(list) < opt.PageSize || resp == nil || resp.NextPage == 0 {
			break
		}
		opt.Page = resp.NextPage
	}
	return out, nil
}

func (g *giteaForge) CreateComment(ctx context.Context, number int64, body string) (Comment, error) {
	return g.writeComment(ctx, func(c *gitea.Client) (*gitea.Comment, *gitea.Response, error) {
		return c.CreateIssueComment(g.owner, g.repo, number, gitea.CreateIssueCommentOption{Body: body})
	})
}

func (g *giteaForge) EditComment(ctx context.Context, _ int64, id int64, body string) (Comment, error) {
	return g.writeComment(ctx, func(c *gitea.Client) (*gitea.Comment, *gitea.Response, error) {
		return c.EditIssueComment(g.owner, g.repo, id, gitea.EditIssueCommentOption{Body: body})
	})
}

// writeComment sends one comment write and answers the comment as the
// forge keeps it.
func (g *giteaForge) writeComment(ctx context.Context, send func(*gitea.Client) (*gitea.Comment, *gitea.Response, error)) (Comment, error) {
	c, err := g.client(ctx)
	if err != nil {
		return Comment{}, err
	}
	cm, _, err := send(c)
	if err != nil {
		return Comment{}, err
	}
	return giteaComment(cm), nil
}

func giteaComment(cm *gitea.Comment) Comment {
	return Comment{ID: cm.ID, Body: cm.Body, URL: cm.HTMLURL}
}

func (g *giteaForge) SetStatus(ctx context.Context, sha string, st Status) error {
	c, err := g.client(ctx)
	if err != nil {
		return err
	}
	_, _, err = c.CreateStatus(g.owner, g.repo, sha, gitea.CreateStatusOption{
		State: gitea.StatusState(st.State), TargetURL: st.TargetURL, Description: st.Description, Context: StatusContext,
	})
	return err
}
