package forge

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// What a delivery asks of previews.
const (
	opNone  = iota // not a pull-request event, or one that changes nothing planned
	opPlan         // opened, reopened, new commits: plan the head
	opClose        // closed or merged: stop tracking
)

// event is a pull-request delivery, read from its documented payload.
type event struct {
	op         int
	action     string
	repository string
	number     int64
	title      string
	url        string
	sha        string
	ref        string // the head ref to fetch
}

// isPullRequestEvent tells whether a delivery is about a pull request
// (GitLab: a merge request), from the forge's event header.
func isPullRequestEvent(forge string, h http.Header) bool {
	switch forge {
	case "github":
		return h.Get("X-GitHub-Event") == "pull_request"
	case "gitea":
		// Gitea and Forgejo name every pull_request_* type "pull_request" here.
		return h.Get("X-Gitea-Event") == "pull_request" || h.Get("X-Forgejo-Event") == "pull_request"
	case "gitlab":
		return h.Get("X-Gitlab-Event") == "Merge Request Hook"
	}
	return false
}

// parseEvent reads a pull-request delivery of forge.
func parseEvent(forge string, body []byte) (event, error) {
	if forge == "gitlab" {
		return parseGitLab(body)
	}
	// GitHub's pull_request payload; Gitea's and Forgejo's have the same
	// fields, with "synchronized" for new commits.
	var p struct {
		Action      string `json:"action"`
		Number      int64  `json:"number"`
		PullRequest struct {
			Number  int64  `json:"number"`
			Title   string `json:"title"`
			HTMLURL string `json:"html_url"`
			Head    struct {
				SHA string `json:"sha"`
			} `json:"head"`
		} `json:"pull_request"`
		Repository struct {
			FullName string `json:"full_name"`
		} `json:"repository"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return event{}, fmt.Errorf("the pull_request payload does not decode: %w", err)
	}
	n := p.Number
	if n == 0 {
		n = p.PullRequest.Number
	}
	e := event{action: p.Action, repository: p.Repository.FullName, number: n, title: p.PullRequest.Title,
		url: p.PullRequest.HTMLURL, sha: p.PullRequest.Head.SHA, ref: "refs/pull/" + strconv.FormatInt(n, 10) + "/head"}
	switch p.Action {
	case "opened", "reopened", "synchronize", "synchronized":
		e.op = opPlan
	case "closed":
		e.op = opClose
	}
	return e, e.check()
}

// parseGitLab reads a Merge Request Hook: open, reopen, and update with
// new commits (oldrev is set only then) plan; close and merge end it.
func parseGitLab(body []byte) (event, error) {
	var p struct {
		ObjectKind string `json:"object_kind"`
		Project    struct {
			PathWithNamespace string `json:"path_with_namespace"`
		} `json:"project"`
		Attrs struct {
			IID        int64  `json:"iid"`
			Title      string `json:"title"`
			URL        string `json:"url"`
			Action     string `json:"action"`
			OldRev     string `json:"oldrev"`
			LastCommit struct {
				ID string `json:"id"`
			} `json:"last_commit"`
		} `json:"object_attributes"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return event{}, fmt.Errorf("the merge request payload does not decode: %w", err)
	}
	a := p.Attrs
	e := event{action: a.Action, repository: p.Project.PathWithNamespace, number: a.IID, title: a.Title, url: a.URL,
		sha: a.LastCommit.ID, ref: "refs/merge-requests/" + strconv.FormatInt(a.IID, 10) + "/head"}
	switch {
	case a.Action == "open" || a.Action == "reopen" || (a.Action == "update" && a.OldRev != ""):
		e.op = opPlan
	case a.Action == "close" || a.Action == "merge":
		e.op = opClose
	}
	return e, e.check()
}

func (e event) check() error {
	if e.number <= 0 {
		return fmt.Errorf("the payload names no request number")
	}
	if e.op == opPlan && e.sha == "" {
		return fmt.Errorf("the payload names no head commit")
	}
	return nil
}
