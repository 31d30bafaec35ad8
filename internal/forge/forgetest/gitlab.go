package forgetest

import (
	"net/http"
)

// gitlab serves, as docs.gitlab.com documents them ({id} is the project's
// URL-encoded path):
//
//	GET  /api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes
//	POST /api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes            {"body"}
//	PUT  /api/v4/projects/{id}/merge_requests/{merge_request_iid}/notes/{note_id}  {"body"}
//	POST /api/v4/projects/{id}/statuses/{sha}  {"state", "name", "target_url", "description"}
func (s *Server) gitlab(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any) {
	if len(seg) < 2 || seg[0] != "api" || seg[1] != "v4" {
		return http.StatusNotFound, map[string]any{"message": "404 Not Found"}
	}
	seg = seg[2:]
	note := func(c Comment) map[string]any {
		return map[string]any{"id": c.ID, "body": c.Body, "system": false, "noteable_type": "MergeRequest",
			"noteable_iid": c.Number, "author": map[string]any{"username": "proxmops-bot"}}
	}
	switch {
	case r.Method == "GET" && match(seg, "projects", "*", "merge_requests", "*", "notes"):
		out := []map[string]any{}
		for _, c := range s.list(num(seg[3])) {
			out = append(out, note(c))
		}
		return http.StatusOK, out
	case r.Method == "POST" && match(seg, "projects", "*", "merge_requests", "*", "notes"):
		if err := onlyKeys(body, []string{"body"}, "internal", "created_at", "merge_request_diff_head_sha"); err != nil {
			return http.StatusBadRequest, map[string]any{"message": err.Error()}
		}
		return http.StatusCreated, note(s.create(num(seg[3]), body["body"].(string)))
	case r.Method == "PUT" && match(seg, "projects", "*", "merge_requests", "*", "notes", "*"):
		if err := onlyKeys(body, []string{"body"}); err != nil {
			return http.StatusBadRequest, map[string]any{"message": err.Error()}
		}
		c, ok := s.edit(num(seg[5]), body["body"].(string))
		if !ok {
			return http.StatusNotFound, map[string]any{"message": "404 Not found"}
		}
		return http.StatusOK, note(c)
	case r.Method == "POST" && match(seg, "projects", "*", "statuses", "*"):
		if err := onlyKeys(body, []string{"state"}, "ref", "name", "context", "target_url", "description", "coverage", "pipeline_id"); err != nil {
			return http.StatusBadRequest, map[string]any{"message": err.Error()}
		}
		switch body["state"] {
		case "pending", "running", "success", "failed", "canceled", "skipped":
		default:
			return http.StatusBadRequest, map[string]any{"message": "state does not have a valid value"}
		}
		code, ok := s.status(w, seg[3], body, http.StatusTooManyRequests)
		if !ok {
			return code, map[string]any{"message": "429 Too Many Requests"}
		}
		return code, map[string]any{"id": 1, "sha": seg[3], "status": body["state"], "name": body["name"], "description": body["description"], "target_url": body["target_url"]}
	}
	return http.StatusNotFound, map[string]any{"message": "404 Not Found"}
}
