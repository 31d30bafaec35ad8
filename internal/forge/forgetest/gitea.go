package forgetest

import (
	"fmt"
	"net/http"
)

// gitea serves, as Gitea's (and Forgejo's) API documents them:
//
//	GET   /api/v1/repos/{owner}/{repo}/issues/{index}/comments
//	POST  /api/v1/repos/{owner}/{repo}/issues/{index}/comments  {"body"}
//	PATCH /api/v1/repos/{owner}/{repo}/issues/comments/{id}     {"body"}
//	POST  /api/v1/repos/{owner}/{repo}/statuses/{sha}  {"state", "target_url", "description", "context"}
func (s *Server) gitea(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	if len(seg) < 1 || seg[0] != "api" || len(seg) < 2 || seg[1] != "v1" {
		return http.StatusNotFound, map[string]any{"message": "Not Found"}
	}
	seg = seg[2:]
	repo := ""
	if len(seg) >= 3 {
		repo = seg[1] + "/" + seg[2]
	}
	comment := func(c Comment) map[string]any {
		return map[string]any{"id": c.ID, "body": c.Body, "user": map[string]any{"login": "proxmops-bot"},
			"html_url": fmt.Sprintf("%s/%s/pulls/%d#issuecomment-%d", s.URL, repo, c.Number, c.ID)}
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
		switch body["state"] {
		case "pending", "success", "error", "failure", "warning":
		default:
			return http.StatusUnprocessableEntity, map[string]any{"message": "invalid state"}
		}
		code, ok := s.status(w, seg[4], body, http.StatusTooManyRequests)
		if !ok {
			return code, map[string]any{"message": "rate limited"}
		}
		return code, map[string]any{"id": 1, "status": body["state"], "context": body["context"], "description": body["description"], "target_url": body["target_url"]}
	}
	return http.StatusNotFound, map[string]any{"message": "Not Found"}
}
