package source

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// testRepo is a real Git repository on disk, driven with go-git so the
// tests need no git program.
type testRepo struct {
	t    testing.TB
	dir  string
	repo *git.Repository
	when time.Time
}

func newTestRepo(t testing.TB) *testRepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &testRepo{t: t, dir: dir, repo: repo, when: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
}

func (r *testRepo) url() string { return "file://" + filepath.ToSlash(r.dir) }

// commit writes files (a nil content deletes the file) and commits them.
func (r *testRepo) commit(msg string, files map[string]*string) plumbing.Hash {
	r.t.Helper()
	wt, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	for name, content := range files {
		p := filepath.Join(r.dir, filepath.FromSlash(name))
		if content == nil {
			if _, err := wt.Remove(name); err != nil {
				r.t.Fatalf("remove %s: %v", name, err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			r.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(*content), 0o644); err != nil {
			r.t.Fatal(err)
		}
		if _, err := wt.Add(name); err != nil {
			r.t.Fatalf("add %s: %v", name, err)
		}
	}
	return r.commitIndex(msg)
}

func (r *testRepo) commitIndex(msg string) plumbing.Hash {
	r.t.Helper()
	wt, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	r.when = r.when.Add(time.Minute)
	h, err := wt.Commit(msg, &git.CommitOptions{
		Author:            &object.Signature{Name: "Ada", Email: "ada@example.com", When: r.when},
		AllowEmptyCommits: true,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// addSubmodule records a gitlink at path pinned to commit, with url in
// .gitmodules, and commits.
func (r *testRepo) addSubmodule(path, url string, commit plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	gm := filepath.Join(r.dir, ".gitmodules")
	prev, _ := os.ReadFile(gm)
	content := string(prev)
	if !strings.Contains(content, "path = "+path+"\n") {
		content += "[submodule \"" + path + "\"]\n\tpath = " + path + "\n\turl = " + url + "\n"
	}
	if err := os.WriteFile(gm, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
	wt, _ := r.repo.Worktree()
	if _, err := wt.Add(".gitmodules"); err != nil {
		r.t.Fatal(err)
	}
	idx, err := r.repo.Storer.Index()
	if err != nil {
		r.t.Fatal(err)
	}
	e, err := idx.Entry(path)
	if err != nil {
		e = idx.Add(path)
	}
	e.Mode = filemode.Submodule
	e.Hash = commit
	e.ModifiedAt = r.when
	if err := r.repo.Storer.SetIndex(idx); err != nil {
		r.t.Fatal(err)
	}
	return r.commitIndex("add submodule " + path)
}

// resetHard moves the current branch to commit, discarding later ones
// (the server side of a force push).
func (r *testRepo) resetHard(commit plumbing.Hash) {
	r.t.Helper()
	wt, _ := r.repo.Worktree()
	if err := wt.Reset(&git.ResetOptions{Commit: commit, Mode: git.HardReset}); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) branch(name string, at plumbing.Hash) {
	r.t.Helper()
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(name), at)); err != nil {
		r.t.Fatal(err)
	}
}

func (r *testRepo) tag(name string, at plumbing.Hash, annotated bool) {
	r.t.Helper()
	var opts *git.CreateTagOptions
	if annotated {
		opts = &git.CreateTagOptions{Message: "release " + name, Tagger: &object.Signature{Name: "Ada", Email: "ada@example.com", When: r.when}}
	}
	if _, err := r.repo.CreateTag(name, at, opts); err != nil {
		r.t.Fatal(err)
	}
}

func str(s string) *string { return &s }

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("read %s: %v", p, err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func openRepo(dir string) (*git.Repository, error) { return git.PlainOpen(dir) }

func plumbHash(s string) plumbing.Hash { return plumbing.NewHash(s) }

type gitCheckout struct{ branch string }

func (g gitCheckout) opts() *git.CheckoutOptions {
	return &git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName(g.branch)}
}
