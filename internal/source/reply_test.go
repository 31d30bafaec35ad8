package source

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// A forge answers an unknown repository, a missing or a refused token with
// a status and a body that is often a whole HTML page; the sync error keeps
// the kind and at most one line of plain text.
func TestHTTPRefusalsGiveShortErrors(t *testing.T) {
	page := "<!DOCTYPE html>\n<html><head><title>Page not found</title></head><body>" + strings.Repeat("<div>nav</div>", 500) + "</body></html>"
	tests := []struct {
		name     string
		status   int
		body     string
		kind     Kind
		sentinel error
		want     string // in the message; "" for none
	}{
		{"404 HTML page", http.StatusNotFound, page, ErrRepositoryNotFound, transport.ErrRepositoryNotFound, ""},
		{"404 plain text", http.StatusNotFound, "Repository not found.\nsecond line", ErrRepositoryNotFound, transport.ErrRepositoryNotFound, "Repository not found."},
		{"401", http.StatusUnauthorized, "HTTP Basic: Access denied\n", ErrAuth, transport.ErrAuthenticationRequired, "HTTP Basic: Access denied"},
		{"403 long line", http.StatusForbidden, strings.Repeat("x", 5000), ErrAuth, transport.ErrAuthorizationFailed, strings.Repeat("x", maxReply) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				w.WriteHeader(tt.status)
				_, _ = w.Write([]byte(tt.body))
			}))
			defer srv.Close()
			s, err := New(Options{URL: srv.URL + "/org/repo.git", CacheDir: t.TempDir(), Auth: Auth{Token: "t"}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Sync(ctxT(t))
			if !errors.Is(err, tt.kind) || !errors.Is(err, tt.sentinel) {
				t.Fatalf("error %v: want kind %q wrapping %v", err, tt.kind, tt.sentinel)
			}
			msg := err.Error()
			if strings.Contains(msg, "<") || strings.Contains(msg, "\n") || len(msg) > 600 {
				t.Fatalf("error message carries the page (%d bytes): %q", len(msg), msg)
			}
			if tt.want != "" && !strings.Contains(msg, tt.want) {
				t.Fatalf("error %q lacks the server's reason %q", msg, tt.want)
			}
		})
	}
}

func TestSSHURLWithoutKeyOrAgentNamesTheKeySetting(t *testing.T) {
	t.Setenv("SSH_AUTH_SOCK", "")
	for _, url := range []string{"ssh://git@127.0.0.1:1/org/repo.git", "git@127.0.0.1:org/repo.git"} {
		s, err := New(Options{URL: url, CacheDir: t.TempDir()})
		if err == nil {
			_, err = s.Sync(ctxT(t))
		}
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "source.sshKeyFile") || strings.Contains(err.Error(), "not-specified") {
			t.Fatalf("%s: %v", url, err)
		}
	}
}
