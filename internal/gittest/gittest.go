// Package gittest makes real Git repositories on disk for tests, written
// with go-git so no git program is needed.
//
//	r := gittest.New(t)
//	c1 := r.Commit("first", map[string]string{"vms/a.yaml": "..."})
//	r.Commit("drop a", map[string]string{"vms/a.yaml": ""}) // "" deletes
//	url := r.URL() // file:///tmp/...
//
// Commits get one author and a clock that moves a minute per commit, so
// hashes are the same on every run.
package gittest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Repo is a Git repository with a work tree, on branch main.
type Repo struct {
	T   testing.TB
	Dir string
	Git *git.Repository
	// Author signs the commits; its When is the time of the last commit.
	Author object.Signature
}

// New makes an empty repository in a temporary directory.
func New(t testing.TB) *Repo {
	t.Helper()
	return Init(t, t.TempDir())
}

// Init makes an empty repository in dir (created if missing).
func Init(t testing.TB, dir string) *Repo {
	t.Helper()
	repo, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName("main")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{T: t, Dir: dir, Git: repo, Author: object.Signature{
		Name: "Test", Email: "test@example.com", When: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
	}}
}

// Open takes an existing repository in dir, its clock starting now.
func Open(t testing.TB, dir string) *Repo {
	t.Helper()
	repo, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &Repo{T: t, Dir: dir, Git: repo, Author: object.Signature{Name: "Test", Email: "test@example.com", When: time.Now()}}
}

// URL is the repository's file:// URL.
func (r *Repo) URL() string { return "file://" + filepath.ToSlash(r.Dir) }

// Write writes files into the work tree and stages them; an empty content
// removes the file.
func (r *Repo) Write(files map[string]string) {
	r.T.Helper()
	wt := r.worktree()
	for name, content := range files {
		if content == "" {
			if _, err := wt.Remove(name); err != nil {
				r.T.Fatalf("remove %s: %v", name, err)
			}
			continue
		}
		writeFile(r.T, r.Dir, name, content)
		if _, err := wt.Add(name); err != nil {
			r.T.Fatalf("add %s: %v", name, err)
		}
	}
}

// WriteFiles writes files, named with slashes, under dir (no repository),
// making their folders.
func WriteFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		writeFile(t, dir, name, content)
	}
}

func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Commit writes files (an empty content deletes one) and commits them.
func (r *Repo) Commit(msg string, files map[string]string) plumbing.Hash {
	r.T.Helper()
	r.Write(files)
	return r.CommitIndex(msg)
}

// CommitIndex commits what is staged (possibly nothing).
func (r *Repo) CommitIndex(msg string) plumbing.Hash {
	r.T.Helper()
	r.Author.When = r.Author.When.Add(time.Minute)
	sig := r.Author
	h, err := r.worktree().Commit(msg, &git.CommitOptions{Author: &sig, AllowEmptyCommits: true})
	if err != nil {
		r.T.Fatal(err)
	}
	return h
}

// ResetHard moves the current branch to commit, discarding later ones
// (the server side of a force push).
func (r *Repo) ResetHard(commit plumbing.Hash) {
	r.T.Helper()
	if err := r.worktree().Reset(&git.ResetOptions{Commit: commit, Mode: git.HardReset}); err != nil {
		r.T.Fatal(err)
	}
}

// SetRef points a reference (a branch, a pull request's head) at a commit.
func (r *Repo) SetRef(name plumbing.ReferenceName, at plumbing.Hash) {
	r.T.Helper()
	if err := r.Git.Storer.SetReference(plumbing.NewHashReference(name, at)); err != nil {
		r.T.Fatal(err)
	}
}

// Branch makes or moves a branch.
func (r *Repo) Branch(name string, at plumbing.Hash) {
	r.T.Helper()
	r.SetRef(plumbing.NewBranchReferenceName(name), at)
}

// Tag makes a lightweight or an annotated tag.
func (r *Repo) Tag(name string, at plumbing.Hash, annotated bool) {
	r.T.Helper()
	var opts *git.CreateTagOptions
	if annotated {
		tagger := r.Author
		opts = &git.CreateTagOptions{Message: "release " + name, Tagger: &tagger}
	}
	if _, err := r.Git.CreateTag(name, at, opts); err != nil {
		r.T.Fatal(err)
	}
}

// AddSubmodule records a gitlink at path pinned to commit, with url in
// .gitmodules (added to what is there), and commits.
func (r *Repo) AddSubmodule(path, url string, commit plumbing.Hash) plumbing.Hash {
	r.T.Helper()
	gm := filepath.Join(r.Dir, ".gitmodules")
	prev, _ := os.ReadFile(gm)
	entry := fmt.Sprintf("[submodule %q]\n\tpath = %s\n\turl = %s\n", path, path, url)
	content := string(prev)
	if !slices.Contains(strings.Split(content, "\n"), "\tpath = "+path) {
		content += entry
	}
	if err := os.WriteFile(gm, []byte(content), 0o644); err != nil {
		r.T.Fatal(err)
	}
	if _, err := r.worktree().Add(".gitmodules"); err != nil {
		r.T.Fatal(err)
	}
	idx, err := r.Git.Storer.Index()
	if err != nil {
		r.T.Fatal(err)
	}
	e, err := idx.Entry(path)
	if err != nil {
		e = idx.Add(path)
	}
	e.Mode, e.Hash, e.ModifiedAt = filemode.Submodule, commit, r.Author.When
	if err := r.Git.Storer.SetIndex(idx); err != nil {
		r.T.Fatal(err)
	}
	return r.CommitIndex("add submodule " + path)
}

func (r *Repo) worktree() *git.Worktree {
	r.T.Helper()
	wt, err := r.Git.Worktree()
	if err != nil {
		r.T.Fatal(err)
	}
	return wt
}
