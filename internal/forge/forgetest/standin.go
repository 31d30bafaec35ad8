// Package forgetest is a recording stand-in of the forges' REST APIs for
// tests: an httptest server serving exactly the documented paths and JSON
// bodies proxmops' previews use, for GitHub, Gitea (Forgejo) and GitLab,
// keeping the comments and statuses it was given and every call.
package forgetest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// Call is one request the stand-in answered.
type Call struct {
	Method, Path string
	Body         map[string]any
	Status       int
}

// Comment is a comment (GitLab: a note) as the stand-in keeps it.
type Comment struct {
	ID     int64
	Number int64
	Body   string
}

// StatusSet is one commit status received.
type StatusSet struct {
	SHA  string
	Body map[string]any
}

// Server is one forge's stand-in.
type Server struct {
	*httptest.Server
	Forge, Token string
	// RateLimitOnce makes the first status call answer the forge's rate
	// limit with Retry-After: 1 (GitHub: 403, the secondary limit).
	RateLimitOnce bool

	mu       sync.Mutex
	calls    []Call
	comments []Comment
	statuses []StatusSet
	nextID   int64
	limited  bool
}

// Start serves forge ("github", "gitea" or "gitlab") accepting token.
func Start(t testing.TB, forge, token string) *Server {
	s := &Server{Forge: forge, Token: token, nextID: 1000}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Calls, Comments and Statuses are copies of what was received.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) Comments() []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Comment(nil), s.comments...)
}

func (s *Server) Statuses() []StatusSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]StatusSet(nil), s.statuses...)
}

// AddComment puts someone else's comment on a request.
func (s *Server) AddComment(number int64, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	s.comments = append(s.comments, Comment{ID: s.nextID, Number: number, Body: body})
}

// authorized checks each forge's documented token header.
func (s *Server) authorized(r *http.Request) bool {
	switch s.Forge {
	case "github":
		return r.Header.Get("Authorization") == "Bearer "+s.Token
	case "gitea":
		return r.Header.Get("Authorization") == "token "+s.Token
	case "gitlab":
		return r.Header.Get("PRIVATE-TOKEN") == s.Token
	}
	return false
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	path := r.URL.EscapedPath()
	var body map[string]any
	var raw bytes.Buffer
	raw.ReadFrom(r.Body)
	if raw.Len() > 0 {
		if err := json.Unmarshal(raw.Bytes(), &body); err != nil {
			s.answer(w, r, path, body, http.StatusBadRequest, map[string]any{"message": "Problems parsing JSON"})
			return
		}
	}
	if !s.authorized(r) {
		s.answer(w, r, path, body, http.StatusUnauthorized, map[string]any{"message": "Bad credentials"})
		return
	}
	var route func(w http.ResponseWriter, r *http.Request, seg []string, body map[string]any) (int, any)
	switch s.Forge {
	case "github":
		route = s.github
	case "gitea":
		route = s.gitea
	case "gitlab":
		route = s.gitlab
	}
	code, out := route(w, r, strings.Split(strings.Trim(path, "/"), "/"), body)
	s.answer(w, r, path, body, code, out)
}

func (s *Server) answer(w http.ResponseWriter, r *http.Request, path string, body map[string]any, code int, out any) {
	s.mu.Lock()
	s.calls = append(s.calls, Call{Method: r.Method, Path: path, Body: body, Status: code})
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(out)
}

// onlyKeys refuses a body with a key the forge does not document for the
// call, or without a required one.
func onlyKeys(body map[string]any, required []string, allowed ...string) error {
	for _, k := range required {
		if _, ok := body[k]; !ok {
			return fmt.Errorf("missing %s", k)
		}
	}
	for k := range body {
		if !contains(required, k) && !contains(allowed, k) {
			return fmt.Errorf("unknown field %s", k)
		}
	}
	return nil
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

// match tells whether seg is pattern, "*" matching any one segment.
func match(seg []string, pattern ...string) bool {
	if len(seg) != len(pattern) {
		return false
	}
	for i, p := range pattern {
		if p != "*" && p != seg[i] {
			return false
		}
	}
	return true
}

func num(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// Comment and status bookkeeping shared by the forges.

func (s *Server) list(number int64) []Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Comment
	for _, c := range s.comments {
		if c.Number == number {
			out = append(out, c)
		}
	}
	return out
}

func (s *Server) create(number int64, body string) Comment {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	c := Comment{ID: s.nextID, Number: number, Body: body}
	s.comments = append(s.comments, c)
	return c
}

func (s *Server) edit(id int64, body string) (Comment, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.comments {
		if s.comments[i].ID == id {
			s.comments[i].Body = body
			return s.comments[i], true
		}
	}
	return Comment{}, false
}

// status records a status, or answers the rate limit once when asked.
func (s *Server) status(w http.ResponseWriter, sha string, body map[string]any, limitCode int) (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.RateLimitOnce && !s.limited {
		s.limited = true
		w.Header().Set("Retry-After", "1")
		return limitCode, false
	}
	s.statuses = append(s.statuses, StatusSet{SHA: sha, Body: body})
	return http.StatusCreated, true
}
