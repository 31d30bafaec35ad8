package pvesim

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// RequestCount is how often one method and path template was called.
type RequestCount struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Count  int64  `json:"count"`
}

// count records a request under its route template; unknown paths are
// counted under their concrete path.
func (s *Server) count(method, template, rel string) {
	key := template
	if key == "" {
		key = rel
	}
	s.mu.Lock()
	s.counters[method+" "+key]++
	s.mu.Unlock()
}

// Requests returns the request counters, sorted by path then method.
func (s *Server) Requests() []RequestCount {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RequestCount, 0, len(s.counters))
	for k, n := range s.counters {
		m, p, _ := strings.Cut(k, " ")
		out = append(out, RequestCount{Method: m, Path: p, Count: n})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].Method < out[j].Method
	})
	return out
}

// RequestCountFor returns the count for one method and path template.
func (s *Server) RequestCountFor(method, template string) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counters[method+" "+template]
}

// ResetRequests clears the counters.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.counters = map[string]int64{}
}

// serveSim answers the simulator's own endpoints (outside /api2/json):
// GET /_sim/requests, DELETE /_sim/requests, GET /_sim/state.
// They need the same credentials as the API.
func (s *Server) serveSim(w http.ResponseWriter, hr *http.Request) {
	if _, aerr := s.authenticate(hr, hr.URL.Path); aerr != nil {
		writeError(w, aerr)
		return
	}
	var data any
	switch {
	case hr.URL.Path == "/_sim/requests" && hr.Method == "GET":
		data = s.Requests()
	case hr.URL.Path == "/_sim/requests" && hr.Method == "DELETE":
		s.ResetRequests()
	case hr.URL.Path == "/_sim/state" && hr.Method == "GET":
		b, err := s.StateJSON()
		if err != nil {
			writeError(w, route.AsAPIError(err))
			return
		}
		data = json.RawMessage(b)
	default:
		writeError(w, &route.APIError{Status: 501, Message: "Method '" + hr.Method + " " + hr.URL.Path + "' not implemented"})
		return
	}
	writeData(w, data)
}
