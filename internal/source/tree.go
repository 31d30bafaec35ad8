package source

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Limits that keep a hostile or broken repository from filling the disk
// or looping: submodules nested deeper than maxSubmoduleDepth are refused.
const (
	maxSubmoduleDepth = 8
	treeKeep          = 10 * time.Minute // trees younger than this survive garbage collection
)

// materializer writes one commit's tree (the watched path of it, with its
// submodules) into a new directory.
type materializer struct {
	s     *Syncer
	ctx   context.Context
	repos map[string]*git.Repository // submodule cache repositories by URL
}

func (s *Syncer) newMaterializer(ctx context.Context) *materializer {
	return &materializer{s: s, ctx: ctx, repos: map[string]*git.Repository{}}
}

// repoCtx is one repository of the walk: the superproject or a submodule.
type repoCtx struct {
	repo    *git.Repository
	url     string
	commit  *object.Commit
	modules *gitconfig.Modules // parsed .gitmodules, loaded on first use
	depth   int
	where   string // path of this repository inside the tree, for messages
}

// checkout writes the watched path of commit into trees/<name> (or reuses
// it when an earlier sync already wrote it) and returns that directory.
// The tree is written to a temporary directory and renamed into place, so
// a tree directory is either complete or absent.
func (m *materializer) checkout(repo *git.Repository, repoURL string, commit *object.Commit, watched string) (string, error) {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%t", watched, m.s.opts.Submodules)))
	name := commit.Hash.String()[:16] + "-" + hex.EncodeToString(sum[:4])
	treesDir := filepath.Join(m.s.dir, "trees")
	final := filepath.Join(treesDir, name)
	if _, err := os.Stat(final); err == nil {
		now := time.Now()
		_ = os.Chtimes(final, now, now)
		return final, nil
	}
	if err := os.MkdirAll(treesDir, 0o755); err != nil {
		return "", &Error{Kind: ErrCheckout, Err: err}
	}
	tmp := filepath.Join(treesDir, ".tmp-"+randomSuffix())
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return "", &Error{Kind: ErrCheckout, Err: err}
	}
	if err := m.write(repo, repoURL, commit, watched, tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		_ = os.RemoveAll(tmp)
		return "", &Error{Kind: ErrCheckout, Err: err}
	}
	return final, nil
}

func (m *materializer) write(repo *git.Repository, repoURL string, commit *object.Commit, watched, dst string) error {
	rc := &repoCtx{repo: repo, url: repoURL, commit: commit}
	tree, err := commit.Tree()
	if err != nil {
		return damaged{err}
	}
	// Walk down to the watched path, entering submodules on the way.
	relInRepo := ""
	var parts []string
	if watched != "" {
		parts = strings.Split(watched, "/")
	}
	for i, part := range parts {
		so := strings.Join(parts[:i+1], "/")
		entry, err := tree.FindEntry(part)
		if err != nil {
			return m.pathMissing(watched, fmt.Sprintf("%q does not exist at commit %s", so, commit.Hash.String()[:12]))
		}
		last := i == len(parts)-1
		switch entry.Mode {
		case filemode.Dir:
			if tree, err = rc.repo.TreeObject(entry.Hash); err != nil {
				return damaged{err}
			}
			relInRepo = joinRel(relInRepo, part)
		case filemode.Submodule:
			if !m.s.opts.Submodules {
				return m.pathMissing(watched, fmt.Sprintf("%q is a submodule and source.submodules is off", so))
			}
			sub, subTree, err := m.submodule(rc, joinRel(relInRepo, part), so, entry.Hash)
			if err != nil {
				return err
			}
			rc, tree, relInRepo = sub, subTree, ""
		default:
			if !last {
				return m.pathMissing(watched, fmt.Sprintf("%q is a file, not a directory", so))
			}
			dir := filepath.Join(dst, filepath.FromSlash(strings.Join(parts[:i], "/")))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return &Error{Kind: ErrCheckout, Err: err}
			}
			return m.writeEntry(rc, entry, dir, relInRepo, strings.Join(parts[:i], "/"))
		}
	}
	dir := filepath.Join(dst, filepath.FromSlash(watched))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return &Error{Kind: ErrCheckout, Err: err}
	}
	return m.writeTree(rc, tree, dir, relInRepo, watched)
}

func (m *materializer) pathMissing(watched, detail string) error {
	return &Error{Kind: ErrPathNotFound, Path: watched, Detail: fmt.Sprintf("source.path %q: %s", watched, detail)}
}

func joinRel(a, b string) string {
	if a == "" {
		return b
	}
	return a + "/" + b
}

// writeTree writes tree's entries into dir. relInRepo is the tree's path
// inside its own repository (for .gitmodules); shown is its path in the
// checkout (for messages).
func (m *materializer) writeTree(rc *repoCtx, tree *object.Tree, dir, relInRepo, shown string) error {
	if err := m.ctx.Err(); err != nil {
		return &Error{Kind: ErrCheckout, Err: err}
	}
	for i := range tree.Entries {
		if err := m.writeEntry(rc, &tree.Entries[i], dir, relInRepo, shown); err != nil {
			return err
		}
	}
	return nil
}

func (m *materializer) writeEntry(rc *repoCtx, e *object.TreeEntry, dir, relInRepo, shown string) error {
	if !safeName(e.Name) {
		return &Error{Kind: ErrCheckout, Detail: fmt.Sprintf("refusing the unsafe file name %q in %q", e.Name, shown)}
	}
	target := filepath.Join(dir, e.Name)
	rel := joinRel(relInRepo, e.Name)
	show := joinRel(shown, e.Name)
	switch e.Mode {
	case filemode.Dir:
		sub, err := rc.repo.TreeObject(e.Hash)
		if err != nil {
			return damaged{err}
		}
		if err := os.Mkdir(target, 0o755); err != nil {
			return &Error{Kind: ErrCheckout, Err: err}
		}
		return m.writeTree(rc, sub, target, rel, show)
	case filemode.Regular, filemode.Deprecated, filemode.Executable:
		perm := os.FileMode(0o444)
		if e.Mode == filemode.Executable {
			perm = 0o555
		}
		return m.writeBlob(rc, e.Hash, target, perm)
	case filemode.Symlink:
		blob, err := rc.repo.BlobObject(e.Hash)
		if err != nil {
			return damaged{err}
		}
		r, err := blob.Reader()
		if err != nil {
			return damaged{err}
		}
		link, err := io.ReadAll(io.LimitReader(r, 4096))
		r.Close()
		if err != nil {
			return damaged{err}
		}
		// Written as it is: whoever reads the tree decides whether a link
		// leaving it is acceptable (the manifest loader refuses them).
		if err := os.Symlink(string(link), target); err != nil {
			return &Error{Kind: ErrCheckout, Err: err}
		}
		return nil
	case filemode.Submodule:
		if err := os.Mkdir(target, 0o755); err != nil {
			return &Error{Kind: ErrCheckout, Err: err}
		}
		if !m.s.opts.Submodules {
			return nil // as `git clone` without --recurse-submodules: an empty directory
		}
		sub, subTree, err := m.submodule(rc, rel, show, e.Hash)
		if err != nil {
			return err
		}
		return m.writeTree(sub, subTree, target, "", show)
	}
	return &Error{Kind: ErrCheckout, Detail: fmt.Sprintf("%q has an unknown file mode %s", show, e.Mode)}
}

func (m *materializer) writeBlob(rc *repoCtx, h plumbing.Hash, target string, perm os.FileMode) error {
	blob, err := rc.repo.BlobObject(h)
	if err != nil {
		return damaged{err}
	}
	r, err := blob.Reader()
	if err != nil {
		return damaged{err}
	}
	defer r.Close()
	f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &Error{Kind: ErrCheckout, Err: err}
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return &Error{Kind: ErrCheckout, Err: err}
	}
	if err := f.Close(); err != nil {
		return &Error{Kind: ErrCheckout, Err: err}
	}
	return nil
}

// safeName refuses names that could write outside the tree or into Git's
// own directory.
func safeName(name string) bool {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") {
		return false
	}
	return !strings.EqualFold(name, ".git")
}

// submodule returns the repository and root tree of the submodule at
// rel (its path inside rc's repository) pinned to commit h, fetching it
// into the cache when needed.
func (m *materializer) submodule(rc *repoCtx, rel, shown string, h plumbing.Hash) (*repoCtx, *object.Tree, error) {
	fail := func(detail string, err error) (*repoCtx, *object.Tree, error) {
		return nil, nil, &Error{Kind: ErrSubmodule, Path: shown, Detail: fmt.Sprintf("submodule %q: %s", shown, detail), Err: err}
	}
	if rc.depth >= maxSubmoduleDepth {
		return fail(fmt.Sprintf("nested more than %d deep", maxSubmoduleDepth), nil)
	}
	if rc.modules == nil {
		mods, err := readModules(rc.commit)
		if err != nil {
			return fail("cannot read .gitmodules", err)
		}
		rc.modules = mods
	}
	var url string
	for _, sm := range rc.modules.Submodules {
		if strings.Trim(sm.Path, "/") == rel {
			url = sm.URL
		}
	}
	if url == "" {
		return fail(fmt.Sprintf("no entry for path %q in .gitmodules", rel), nil)
	}
	resolved, err := resolveSubmoduleURL(rc.url, url)
	if err != nil {
		return fail("cannot resolve its URL", err)
	}
	if kind, norm, err := classifyLocation(resolved); err == nil {
		if kind == localDir {
			norm = "file://" + filepath.ToSlash(norm)
		}
		resolved = norm
	} else {
		return fail(fmt.Sprintf("bad URL %q", resolved), err)
	}
	repo, err := m.ensureCommit(resolved, h)
	if err != nil {
		return nil, nil, &Error{Kind: ErrSubmodule, Path: shown,
			Detail: fmt.Sprintf("submodule %q from %s at %s", shown, redactURL(resolved), h.String()[:12]), Err: err}
	}
	commit, err := repo.CommitObject(h)
	if err != nil {
		return fail("commit vanished from the cache", err)
	}
	tree, err := commit.Tree()
	if err != nil {
		return fail("cannot read its tree", err)
	}
	return &repoCtx{repo: repo, url: resolved, commit: commit, depth: rc.depth + 1}, tree, nil
}

func readModules(c *object.Commit) (*gitconfig.Modules, error) {
	mods := gitconfig.NewModules()
	f, err := c.File(".gitmodules")
	if errors.Is(err, object.ErrFileNotFound) {
		return mods, nil
	}
	if err != nil {
		return nil, err
	}
	content, err := f.Contents()
	if err != nil {
		return nil, err
	}
	if err := mods.Unmarshal([]byte(content)); err != nil {
		return nil, err
	}
	return mods, nil
}

// ensureCommit makes sure the cache repository of a submodule URL has
// commit h, fetching every branch and tag (and, failing that, the commit
// by hash) when it does not. The cache is per URL: pinned commits never
// change, so it is shared by every superproject using the submodule.
func (m *materializer) ensureCommit(rawURL string, h plumbing.Hash) (*git.Repository, error) {
	dir := filepath.Join(m.s.opts.CacheDir, "modules", cacheDirName(rawURL, "", "module"))
	// The lock is held only while fetching, never while a nested
	// submodule is fetched, so two superprojects cannot deadlock.
	unlock, err := lockDir(m.ctx, dir)
	if err != nil {
		return nil, err
	}
	defer unlock()
	repo, ok := m.repos[rawURL]
	if !ok {
		repo, err = openCacheRepo(filepath.Join(dir, "repo"))
		if err != nil {
			_ = os.RemoveAll(filepath.Join(dir, "repo"))
			if repo, err = openCacheRepo(filepath.Join(dir, "repo")); err != nil {
				return nil, err
			}
		}
		m.repos[rawURL] = repo
	}
	if _, err := repo.CommitObject(h); err == nil {
		return repo, nil
	}
	auth, err := m.s.opts.Auth.method(rawURL, m.s.url)
	if err != nil {
		return nil, err
	}
	remote := git.NewRemote(repo.Storer, &gitconfig.RemoteConfig{Name: "origin", URLs: []string{rawURL}})
	fetch := func(specs ...gitconfig.RefSpec) error {
		err := remote.FetchContext(m.ctx, &git.FetchOptions{RefSpecs: specs, Auth: auth, Tags: git.NoTags, Force: true})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		kind, hint := classify(err)
		return &Error{Kind: kind, URL: redactURL(rawURL), Detail: hint, Err: tidyReply(err)}
	}
	if err := fetch("+refs/heads/*:refs/proxmops/heads/*", "+refs/tags/*:refs/proxmops/tags/*"); err != nil {
		return nil, err
	}
	if _, err := repo.CommitObject(h); err == nil {
		return repo, nil
	}
	// Not on any branch or tag: some servers still serve it by hash.
	_ = fetch(gitconfig.RefSpec("+" + h.String() + ":refs/proxmops/pinned/" + h.String()))
	if _, err := repo.CommitObject(h); err == nil {
		return repo, nil
	}
	return nil, fmt.Errorf("commit %s is on no branch or tag of %s (was it pushed?)", h, redactURL(rawURL))
}

func randomSuffix() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// gcTrees deletes checked-out trees other than keep and previous that
// have not been used for a while, and temporary directories left by an
// interrupted checkout. The caller holds the directory's lock.
func (s *Syncer) gcTrees(keep, previous string) {
	treesDir := filepath.Join(s.dir, "trees")
	entries, err := os.ReadDir(treesDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		name := e.Name()
		if name == keep || name == previous {
			continue
		}
		p := filepath.Join(treesDir, name)
		if !strings.HasPrefix(name, ".tmp-") {
			if info, err := e.Info(); err == nil && time.Since(info.ModTime()) < treeKeep {
				continue
			}
		}
		if err := os.RemoveAll(p); err != nil {
			s.opts.Logger.Warn("cannot remove old checkout", "dir", p, "error", err)
		}
	}
}
