package source

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
)

func TestConcurrentSyncsShareOneCacheSafely(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.Commit("one", map[string]string{"m/a.yaml": "1"})
	cache := t.TempDir()
	a := newSyncerT(t, Options{URL: r.URL(), Path: "m", CacheDir: cache})
	b := newSyncerT(t, Options{URL: r.URL(), Path: "m", CacheDir: cache})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := a
			if i%2 == 1 {
				s = b
			}
			res, err := s.Sync(ctxT(t))
			if err == nil && res.Commit.Hash != c1.String() {
				err = os.ErrInvalid
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDamagedCacheIsClonedAgain(t *testing.T) {
	r := newTestRepo(t)
	r.Commit("one", map[string]string{"m/a.yaml": "1"})
	s := newSyncerT(t, Options{URL: r.URL(), Path: "m"})
	if _, err := s.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	// Lose the packed objects, as an interrupted write or a bad disk would.
	objects := filepath.Join(s.CacheDir(), "repo", "objects")
	if err := os.RemoveAll(objects); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(objects, 0o755); err != nil {
		t.Fatal(err)
	}
	c2 := r.Commit("two", map[string]string{"m/a.yaml": "2"})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != c2.String() || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "2" {
		t.Fatalf("%+v", res)
	}
}

func TestFromConfig(t *testing.T) {
	c := config.Defaults().Source
	c.RepoURL, c.Path, c.Revision, c.Token = "https://h/x.git", "p", "v1", "t"
	o := FromConfig(c)
	if o.URL != c.RepoURL || o.Path != "p" || o.Revision != "v1" || o.Auth.Token != "t" || o.Auth.Username != config.DefaultGitUsername || !o.Submodules || o.CacheDir == "" {
		t.Fatalf("%+v", o)
	}
}
