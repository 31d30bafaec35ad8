package source

import (
	"errors"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/server"
)

// requireBasicAuth wraps a Git HTTP handler with a basic-auth check, as a
// forge does for a private repository.
func requireBasicAuth(user, pass string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="git"`)
			http.Error(w, "authentication required", http.StatusUnauthorized)
			return
		}
		if u != user || p != pass {
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// goGitSmartHTTP serves one repository over Git's smart HTTP protocol with
// go-git's server package (upload-pack only; no shallow support, which
// exercises the full-clone fallback).
type goGitSmartHTTP struct {
	repo     *git.Repository
	requests atomic.Int32
}

type singleLoader struct{ s storer.Storer }

func (l singleLoader) Load(*transport.Endpoint) (storer.Storer, error) { return l.s, nil }

func (h *goGitSmartHTTP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.requests.Add(1)
	srv := server.NewServer(singleLoader{h.repo.Storer})
	ep, _ := transport.NewEndpoint("/repo")
	sess, err := srv.NewUploadPackSession(ep, nil)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	defer sess.Close()
	switch {
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/info/refs") && r.URL.Query().Get("service") == "git-upload-pack":
		ar, err := sess.AdvertisedReferencesContext(r.Context())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		ar.Prefix = [][]byte{[]byte("# service=git-upload-pack"), pktline.Flush}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-advertisement")
		_ = ar.Encode(w)
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/git-upload-pack"):
		req := packp.NewUploadPackRequest()
		if err := req.Decode(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		resp, err := sess.UploadPack(r.Context(), req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-git-upload-pack-result")
		_ = resp.Encode(w)
		resp.Close()
	default:
		http.NotFound(w, r)
	}
}

func TestHTTPSTokenAuthGoGitServer(t *testing.T) {
	r := newTestRepo(t)
	r.Commit("one", map[string]string{"m/a.yaml": "1"})
	h := &goGitSmartHTTP{repo: r.Git}
	srv := httptest.NewServer(requireBasicAuth("x-access-token", "s3cret", h))
	defer srv.Close()
	url := srv.URL + "/you/homelab.git"

	tests := []struct {
		name string
		auth Auth
		kind Kind
	}{
		{"no token", Auth{}, ErrAuth},
		{"wrong token", Auth{Token: "nope"}, ErrAuth},
		{"wrong username", Auth{Username: "git", Token: "s3cret"}, ErrAuth},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncerT(t, Options{URL: url, Path: "m", Auth: tt.auth})
			_, err := s.Sync(ctxT(t))
			if !errors.Is(err, tt.kind) {
				t.Fatalf("err = %v, want kind %q", err, tt.kind)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "nope") {
				t.Errorf("error leaks the token: %v", err)
			}
		})
	}

	s := newSyncerT(t, Options{URL: url, Path: "m", Auth: Auth{Token: "s3cret"}})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(res.Dir, "a.yaml")) != "1" {
		t.Fatal("wrong content")
	}
	c2 := r.Commit("two", map[string]string{"m/a.yaml": "2"})
	res, err = s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != c2.String() || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "2" {
		t.Fatalf("second sync: %+v", res)
	}
}

// TestHTTPGitHTTPBackend runs the real git http-backend (when git is
// installed) so shallow clones and incremental fetches into them are
// exercised against Git's own server.
func TestHTTPGitHTTPBackend(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed; the go-git server test covers HTTP without it")
	}
	r := newTestRepo(t)
	base := r.Commit("one", map[string]string{"m/a.yaml": "1", "big/other": strings.Repeat("x", 10000)})
	r.Commit("two", map[string]string{"m/a.yaml": "2"})
	backend := &cgi.Handler{
		Path: gitBin,
		Args: []string{"http-backend"},
		Env: []string{
			"GIT_PROJECT_ROOT=" + filepath.Dir(r.Dir),
			"GIT_HTTP_EXPORT_ALL=1",
			"GIT_CONFIG_NOSYSTEM=1",
			"HOME=" + t.TempDir(),
			"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=safe.directory", "GIT_CONFIG_VALUE_0=*",
		},
	}
	srv := httptest.NewServer(requireBasicAuth("oauth2", "tok", backend))
	defer srv.Close()
	url := srv.URL + "/" + filepath.Base(r.Dir) + "/.git"
	cache := t.TempDir()
	s := newSyncerT(t, Options{URL: url, Path: "m", CacheDir: cache, Auth: Auth{Username: "oauth2", Token: "tok"}})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(res.Dir, "a.yaml")) != "2" {
		t.Fatal("wrong content")
	}
	shallow, err := os.ReadFile(filepath.Join(s.CacheDir(), "repo", "shallow"))
	if err != nil || len(strings.TrimSpace(string(shallow))) != 40 {
		t.Errorf("first clone is not shallow (depth 1): %q %v", shallow, err)
	}
	// Incremental fetch into the shallow clone.
	c3 := r.Commit("three", map[string]string{"m/a.yaml": "3"})
	res, err = s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != c3.String() || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "3" || res.HistoryRewritten {
		t.Fatalf("incremental: %+v", res)
	}
	// Force push onto the shallow clone.
	r.ResetHard(base)
	c4 := r.Commit("rewritten", map[string]string{"m/a.yaml": "4"})
	res, err = s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != c4.String() || !res.HistoryRewritten || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "4" {
		t.Fatalf("force push: %+v", res)
	}
	// A commit revision over HTTP.
	sc := newSyncerT(t, Options{URL: url, Path: "m", CacheDir: cache, Revision: base.String()[:10], Auth: Auth{Username: "oauth2", Token: "tok"}})
	res, err = sc.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != base.String() || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "1" {
		t.Fatalf("commit revision: %+v", res)
	}
}
