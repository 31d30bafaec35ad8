package forgetest

import (
	"fmt"
	"net/http"
)

// github serves, as docs.github.com documents them:
//
//	GET   /repos/{owner}/{repo}/issues/{issue_number}/comments
//	POST  /repos/{owner}/{repo}/issues/{issue_number}/comments  {"body"}
//	PATCH /repos/{owner}/{repo}/issues/comments/{comment_id}    {"body"}
//	POST  /repos/{owner}/{repo}/statuses/{sha}  {"state", "target_url", "description", "context"}
func (s *Server) github(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	repo := ""
	if len(seg) >= 3 {
		repo = seg[1] + "/" + seg[2]
	}
	comment := func(c Comment) map[string]any {
		return map[string]any{"id": c.ID, "node_id": "IC_x", "body": c.Body, "user": map[string]any{"login": "proxmops-bot"},
			"html_url": fmt.Sprintf("https://github.com/%s/pull/%d#issuecomment-%d", repo, c.Number, c.ID),
			"url":      fmt.Sprintf("%s/repos/%s/issues/comments/%d", s.URL, repo, c.ID)}
	}
	switch {
	case r.Method == "GET" && match(seg, "repos", "*", "*", "issues", "*", "comments"):
		out := []map[string]any{}
		for _, c := range s.list(num(seg[4])) {
			out = append(out, comment(c))
		}
		return http.StatusOK, out
	case r.Method == "POST" && match(seg, "repos", "*", "*", "issues", "*", "comments"):
		if err := onlyKeys(body, []string{"body"}); err != nil {
			return http.StatusUnprocessableEntity, map[string]any{"message": err.Error()}
		}
		return http.StatusCreated, comment(s.create(num(seg[4]), body["body"].(string)))
	case r.Method == "PATCH" && match(seg, "repos", "*", "*", "issues", "comments", "*"):
		if err := onlyKeys(body, []string{"body"}); err != nil {
			return http.StatusUnprocessableEntity, map[string]any{"message": err.Error()}
		}
		c, ok := s.edit(num(seg[5]), body["body"].(string))
		if !ok {
			return http.StatusNotFound, map[string]any{"message": "Not Found"}
		}
		return http.StatusOK, comment(c)
	case r.Method == "POST" && match(seg, "repos", "*", "*", "statuses", "*"):
		if err := onlyKeys(body, []string{"state"}, "target_url", "description", "context"); err != nil {
			return http.StatusUnprocessableEntity, map[string]any{"message": err.Error()}
		}
		if st := body["state"]; st != "pending" && st != "success" && st != "error" && st != "failure" {
			return http.StatusUnprocessableEntity, map[string]any{"message": "Validation Failed"}
		}
		code, ok := s.status(w, seg[4], body, http.StatusForbidden)
		if !ok {
			return code, map[string]any{"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again."}
		}
		return code, map[string]any{"id": 1, "state": body["state"], "context": body["context"], "description": body["description"], "target_url": body["target_url"]}
	}
	return http.StatusNotFound, map[string]any{"message": "Not Found"}
}
