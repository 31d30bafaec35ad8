package forgetest

import (
	"fmt"
	"net/http"
	"slices"
)

// repoDialect is what GitHub's and Gitea's repository APIs differ in; their
// paths below the API root and their request bodies are the same.
type repoDialect struct {
	comment      func(s *Server, repo string, c Comment) map[string]any
	states       []string // the commit states accepted
	badState     string   // the answer's message for another state
	limitCode    int      // the status of a refused (rate-limited) call
	limitMessage string
	stateKey     string // the key of the state in a created status
}

// github serves, as docs.github.com documents them:
//
//	GET   /repos/{owner}/{repo}/issues/{issue_number}/comments
//	POST  /repos/{owner}/{repo}/issues/{issue_number}/comments  {"body"}
//	PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}    {"body"}
//	POST  /repos/{owner}/{repo}/statuses/{sha}  {"state", "target_url", "description", "context"}
var github = repoDialect{
	comment: func(s *Server, repo string, c Comment) map[string]any {
		return map[string]any{"id": c.ID, "node_id": "IC_x", "body": c.Body, "user": map[string]any{"login": "proxmops-bot"},
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d#issuecomment-%d", repo, c.Number, c.ID),
			"url":      fmt.Sprintf("%s/repos/%s/issues/comments/%d", s.URL, repo, c.ID)}
	},
	states:       []string{"pending", "success", "error", "failure"},
	badState:     "Validation Failed",
	limitCode:    http.StatusForbidden,
	limitMessage: "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
	stateKey:     "state",
}

// gitea serves, as Gitea's (and Forgejo's) API documents them:
//
//	GET   /api/v1/repos/{owner}/{repo}/issues/{index}/comments
//	POST  /api/v1/repos/{owner}/{repo}/issues/{index}/comments  {"body"}
//	PATCH /api/v1/repos/{owner}/{repo}/issues/comments/{id}     {"body"}
//	POST  /api/v1/repos/{owner}/{repo}/statuses/{sha}  {"state", "target_url", "description", "context"}
var gitea = repoDialect{
	comment: func(s *Server, repo string, c Comment) map[string]any {
		return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"login": "proxmops-bot"},
			"html_url": fmt.Sprintf("%s/%s/pulls/%d#issuecomment-%d", s.URL, repo, c.Number, c.ID)}
	},
	states:       []string{"pending", "success", "error", "failure", "warning"},
	badState:     "invalid state",
	limitCode:    http.StatusTooManyRequests,
	limitMessage: "rate limited",
	stateKey:     "status",
}

func (s *Server) github(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	return s.repoAPI(github, w, r, seg, body)
}

func (s *Server) gitea(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	if len(seg) < 2 || seg[0] != "api" || seg[1] != "v1" {
		return http.StatusNotFound, map[string]any{"message": "Not Found"}
	}
	return s.repoAPI(gitea, w, r, seg[2:], body)
}

// repoAPI serves the comment and commit-status calls below the API root.
func (s *Server) repoAPI(d repoDialect, w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	repo := ""
	if len(seg) >= 3 {
		repo = seg[1] + "/" + seg[2]
	}
	invalid := func(msg string) (int, any) { return http.StatusUnprocessableEntity, map[string]any{"message": msg} }
	switch {
	case r.Method == "GET" && match(seg, "repos", "*", "*", "issues", "*", "comments"):
		out := []map[string]any{}
		for _, c := range s.list(num(seg[4])) {
			out = append(out, d.comment(s, repo, c))
		}
		return http.StatusOK, out
	case r.Method == "POST" && match(seg, "repos", "*", "*", "issues", "*", "comments"):
		if err := onlyKeys(body, []string{"body"}); err != nil {
			return invalid(err.Error())
		}
		return http.StatusCreated, d.comment(s, repo, s.create(num(seg[4]), body["body"].(string)))
	case r.Method == "PATCH" && match(seg, "repos", "*", "*", "issues", "comments", "*"):
		if err := onlyKeys(body, []string{"body"}); err != nil {
			return invalid(err.Error())
		}
		c, ok := s.edit(num(seg[5]), body["body"].(string))
		if !ok {
			return http.StatusNotFound, map[string]any{"message": "Not Found"}
		}
		return http.StatusOK, d.comment(s, repo, c)
	case r.Method == "POST" && match(seg, "repos", "*", "*", "statuses", "*"):
		if err := onlyKeys(body, []string{"state"}, "target_url", "description", "context"); err != nil {
			return invalid(err.Error())
		}
		if st, _ := body["state"].(string); !slices.Contains(d.states, st) {
			return invalid(d.badState)
		}
		code, ok := s.status(w, seg[4], body, d.limitCode)
		if !ok {
			return code, map[string]any{"message": d.limitMessage}
		}
		return code, map[string]any{"id": 1, d.stateKey: body["state"], "context": body["context"], "description": body["description"], "target_url": body["target_url"]}
	}
	return http.StatusNotFound, map[string]any{"message": "Not Found"}
}
