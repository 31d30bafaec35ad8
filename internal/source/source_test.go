package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/gittest"
)

func newSyncerT(t *testing.T, opts Options) *Syncer {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSyncPicksUpCommitsAndDeletes(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.Commit("first", map[string]string{"proxmox/vm.yaml": "a: 1\n", "proxmox/ct.yaml": "b: 1\n", "README": "x"})
	s := newSyncerT(t, Options{URL: r.URL(), Path: "proxmox"})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res.Commit.Hash != c1.String() || res.Commit.Message != "first" || res.Commit.Author != "Ada" || res.Ref != "refs/heads/main" {
		t.Fatalf("result %+v", res)
	}
	if got := readFile(t, filepath.Join(res.Dir, "vm.yaml")); got != "a: 1\n" {
		t.Fatalf("vm.yaml = %q", got)
	}
	if exists(filepath.Join(res.Root, "README")) {
		t.Error("files outside the watched path must not be written")
	}
	firstDir := res.Dir

	c2 := r.Commit("second", map[string]string{"proxmox/vm.yaml": "a: 2\n", "proxmox/ct.yaml": ""})
	res2, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if res2.Commit.Hash != c2.String() || res2.HistoryRewritten || res2.PreviousCommit != c1.String() {
		t.Fatalf("result %+v", res2)
	}
	if got := readFile(t, filepath.Join(res2.Dir, "vm.yaml")); got != "a: 2\n" {
		t.Errorf("vm.yaml = %q", got)
	}
	if exists(filepath.Join(res2.Dir, "ct.yaml")) {
		t.Error("a deleted file must be gone from the new tree")
	}
	// The previous tree is untouched: a reader still using it sees it whole.
	if got := readFile(t, filepath.Join(firstDir, "ct.yaml")); got != "b: 1\n" {
		t.Errorf("previous tree changed: %q", got)
	}
	// Nothing new: same tree, no rewrite.
	res3, err := s.Sync(ctxT(t))
	if err != nil || res3.Dir != res2.Dir || res3.PreviousCommit != "" {
		t.Fatalf("idle sync: %+v %v", res3, err)
	}
	if info, err := os.Stat(filepath.Join(res3.Dir, "vm.yaml")); err != nil || info.Mode().Perm()&0o222 != 0 {
		t.Errorf("checked-out files must be read-only: %v %v", info.Mode(), err)
	}
}

func TestForcePushIsFollowedAndReported(t *testing.T) {
	r := newTestRepo(t)
	base := r.Commit("base", map[string]string{"m/a.yaml": "1"})
	r.Commit("to be dropped", map[string]string{"m/b.yaml": "2"})
	s := newSyncerT(t, Options{URL: r.URL(), Path: "m"})
	if _, err := s.Sync(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	r.ResetHard(base)
	rewritten := r.Commit("rewritten", map[string]string{"m/c.yaml": "3"})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if !res.HistoryRewritten || res.Commit.Hash != rewritten.String() {
		t.Fatalf("force push not reported: %+v", res)
	}
	if exists(filepath.Join(res.Dir, "b.yaml")) || !exists(filepath.Join(res.Dir, "c.yaml")) {
		t.Error("tree does not match the new head")
	}
	// A fast-forward after that is not a rewrite.
	r.Commit("next", map[string]string{"m/d.yaml": "4"})
	res, err = s.Sync(ctxT(t))
	if err != nil || res.HistoryRewritten {
		t.Fatalf("fast-forward reported as rewrite: %+v %v", res, err)
	}
}

func TestRevisions(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.Commit("one", map[string]string{"f": "one"})
	r.Tag("v1", c1, false)
	r.Tag("v1-annotated", c1, true)
	c2 := r.Commit("two", map[string]string{"f": "two"})
	r.Branch("feature", c1)
	c3 := r.Commit("three", map[string]string{"f": "three"})
	tests := []struct {
		revision string
		want     string
		content  string
	}{
		{"", c3.String(), "three"},
		{"main", c3.String(), "three"},
		{"refs/heads/main", c3.String(), "three"},
		{"feature", c1.String(), "one"},
		{"v1", c1.String(), "one"},
		{"v1-annotated", c1.String(), "one"},
		{c2.String(), c2.String(), "two"},
		{c2.String()[:8], c2.String(), "two"},
	}
	cache := t.TempDir()
	for _, tt := range tests {
		t.Run("rev="+tt.revision, func(t *testing.T) {
			s := newSyncerT(t, Options{URL: r.URL(), Revision: tt.revision, CacheDir: cache})
			res, err := s.Sync(ctxT(t))
			if err != nil {
				t.Fatal(err)
			}
			if res.Commit.Hash != tt.want {
				t.Errorf("commit %s, want %s", res.Commit.Hash, tt.want)
			}
			if got := readFile(t, filepath.Join(res.Dir, "f")); got != tt.content {
				t.Errorf("f = %q, want %q", got, tt.content)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	r := newTestRepo(t)
	r.Commit("one", map[string]string{"manifests/a.yaml": "a", "file": "x"})
	tests := []struct {
		name     string
		opts     Options
		kind     Kind
		contains string
	}{
		{"missing branch", Options{URL: r.URL(), Revision: "mian"}, ErrRevisionNotFound, `did you mean "main"?`},
		{"missing tag", Options{URL: r.URL(), Revision: "v9.9.9"}, ErrRevisionNotFound, `no branch or tag named "v9.9.9"`},
		{"missing commit", Options{URL: r.URL(), Revision: "deadbeefdeadbeef"}, ErrRevisionNotFound, "no commit deadbeefdeadbeef"},
		{"missing path", Options{URL: r.URL(), Path: "proxmox"}, ErrPathNotFound, `"proxmox" does not exist`},
		{"path is a file", Options{URL: r.URL(), Path: "file/x"}, ErrPathNotFound, "is a file"},
		{"missing repository", Options{URL: "file://" + filepath.Join(t.TempDir(), "none")}, ErrRepositoryNotFound, "repository not found"},
		{"missing local dir", Options{URL: filepath.Join(t.TempDir(), "none")}, ErrRepositoryNotFound, "does not exist"},
		{"unreachable server", Options{URL: "http://127.0.0.1:1/repo.git"}, ErrUnreachable, "unreachable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncerT(t, tt.opts)
			_, err := s.Sync(ctxT(t))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tt.kind) || KindOf(err) != tt.kind {
				t.Errorf("kind %q, want %q: %v", KindOf(err), tt.kind, err)
			}
			if !strings.Contains(err.Error(), tt.contains) {
				t.Errorf("error %q lacks %q", err, tt.contains)
			}
			if s.Last() != nil {
				t.Error("a failed first sync must leave no last checkout")
			}
		})
	}
}

func TestFailedFetchKeepsLastGoodCheckout(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.Commit("one", map[string]string{"m/a.yaml": "a"})
	cache := t.TempDir()
	s := newSyncerT(t, Options{URL: r.URL(), Path: "m", CacheDir: cache})
	good, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	// The repository disappears (server down, repository moved).
	moved := r.Dir + ".moved"
	if err := os.Rename(r.Dir, moved); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Sync(ctxT(t)); err == nil {
		t.Fatal("sync of a vanished repository succeeded")
	}
	last := s.Last()
	if last == nil || last.Commit.Hash != c1.String() || readFile(t, filepath.Join(last.Dir, "a.yaml")) != "a" {
		t.Fatalf("last good checkout lost: %+v", last)
	}
	// A restarted process finds it too.
	s2 := newSyncerT(t, Options{URL: r.URL(), Path: "m", CacheDir: cache})
	if l := s2.Last(); l == nil || l.Dir != good.Dir {
		t.Fatalf("after restart Last() = %+v, want %s", l, good.Dir)
	}
	// The branch is deleted: not found, and still the last good tree.
	if err := os.Rename(moved, r.Dir); err != nil {
		t.Fatal(err)
	}
	s3 := newSyncerT(t, Options{URL: r.URL(), Path: "m", Revision: "gone", CacheDir: cache})
	if _, err := s3.Sync(ctxT(t)); !errors.Is(err, ErrRevisionNotFound) {
		t.Fatalf("err = %v", err)
	}
}

func TestCacheDirPerURLAndRevision(t *testing.T) {
	a, b := newTestRepo(t), newTestRepo(t)
	a.Commit("a", map[string]string{"f": "from a"})
	b.Commit("b", map[string]string{"f": "from b"})
	cache := t.TempDir()
	sa := newSyncerT(t, Options{URL: a.URL(), CacheDir: cache})
	sb := newSyncerT(t, Options{URL: b.URL(), CacheDir: cache})
	sa2 := newSyncerT(t, Options{URL: a.URL(), Revision: "main", CacheDir: cache})
	if sa.CacheDir() == sb.CacheDir() || sa.CacheDir() == sa2.CacheDir() {
		t.Fatalf("cache dirs shared: %s %s %s", sa.CacheDir(), sb.CacheDir(), sa2.CacheDir())
	}
	ra, err := sa.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	rb, err := sb.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(ra.Dir, "f")) != "from a" || readFile(t, filepath.Join(rb.Dir, "f")) != "from b" {
		t.Fatal("a clone was reused for another URL")
	}
}

func TestLocalDirectory(t *testing.T) {
	t.Run("plain directory", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "m"), 0o755); err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(dir, "m", "a.yaml"), []byte("a"), 0o644)
		s := newSyncerT(t, Options{URL: dir, Path: "m"})
		res, err := s.Sync(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if !res.Local || res.Commit.Hash != LocalCommitHash || res.Dir != filepath.Join(dir, "m") {
			t.Fatalf("%+v", res)
		}
		if _, err := s.ReadAt(ctxT(t), "main"); !errors.Is(err, ErrRevisionNotFound) {
			t.Errorf("ReadAt on a plain directory: %v", err)
		}
		s2 := newSyncerT(t, Options{URL: dir, Path: "nope"})
		if _, err := s2.Sync(ctxT(t)); !errors.Is(err, ErrPathNotFound) {
			t.Errorf("missing path: %v", err)
		}
	})
	t.Run("work tree", func(t *testing.T) {
		r := newTestRepo(t)
		c1 := r.Commit("one", map[string]string{"m/a.yaml": "committed"})
		// Uncommitted edits are read as they are.
		os.WriteFile(filepath.Join(r.Dir, "m", "a.yaml"), []byte("edited"), 0o644)
		s := newSyncerT(t, Options{URL: r.Dir, Path: "m"})
		res, err := s.Sync(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if res.Commit.Hash != c1.String() || readFile(t, filepath.Join(res.Dir, "a.yaml")) != "edited" {
			t.Fatalf("%+v", res)
		}
		// ReadAt gives the committed content of a revision.
		at, err := s.ReadAt(ctxT(t), "main")
		if err != nil {
			t.Fatal(err)
		}
		if readFile(t, filepath.Join(at.Dir, "a.yaml")) != "committed" || at.Commit.Hash != c1.String() {
			t.Fatalf("ReadAt: %+v", at)
		}
	})
	t.Run("bare repository path", func(t *testing.T) {
		r := newTestRepo(t)
		r.Commit("one", map[string]string{"a": "1"})
		s := newSyncerT(t, Options{URL: filepath.Join(r.Dir, ".git")})
		res, err := s.Sync(ctxT(t))
		if err != nil {
			t.Fatal(err)
		}
		if res.Local || readFile(t, filepath.Join(res.Dir, "a")) != "1" {
			t.Fatalf("%+v", res)
		}
	})
}

func TestReadAtDoesNotDisturbMain(t *testing.T) {
	r := newTestRepo(t)
	c1 := r.Commit("main work", map[string]string{"m/a.yaml": "main"})
	r.Branch("pr-1", c1)
	wt, _ := r.Git.Worktree()
	// Commit on pr-1 without moving main.
	if err := wt.Checkout(gitCheckout{branch: "pr-1"}.opts()); err != nil {
		t.Fatal(err)
	}
	cPR := r.Commit("pr change", map[string]string{"m/a.yaml": "pr"})
	if err := wt.Checkout(gitCheckout{branch: "main"}.opts()); err != nil {
		t.Fatal(err)
	}
	s := newSyncerT(t, Options{URL: r.URL(), Revision: "main", Path: "m"})
	mainRes, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := s.ReadAt(ctxT(t), "pr-1")
	if err != nil {
		t.Fatal(err)
	}
	if pr.Commit.Hash != cPR.String() || readFile(t, filepath.Join(pr.Dir, "a.yaml")) != "pr" {
		t.Fatalf("preview %+v", pr)
	}
	if l := s.Last(); l.Commit.Hash != c1.String() || readFile(t, filepath.Join(mainRes.Dir, "a.yaml")) != "main" {
		t.Fatalf("main checkout disturbed: %+v", l)
	}
	if _, err := s.ReadAt(ctxT(t), "no-such-branch"); !errors.Is(err, ErrRevisionNotFound) {
		t.Errorf("ReadAt missing: %v", err)
	}
}

func TestSubmodulesNestedAndRelative(t *testing.T) {
	parentDir := t.TempDir()
	mk := func(name string) *gittest.Repo {
		r := newTestRepo(t)
		target := filepath.Join(parentDir, name)
		if err := os.Rename(r.Dir, target); err != nil {
			t.Fatal(err)
		}
		r.Dir = target
		var err error
		if r.Git, err = openRepo(target); err != nil {
			t.Fatal(err)
		}
		return r
	}
	leaf := mk("leaf")
	leafC := leaf.Commit("leaf", map[string]string{"container.env": "ID=42\n"})
	mid := mk("mid")
	mid.Commit("mid", map[string]string{"recipes/default.rb": "package 'apache2'\n"})
	midC := mid.AddSubmodule("deps/leaf", "../leaf", leafC) // relative to mid's URL
	top := mk("top")
	top.Commit("top", map[string]string{"libs/README": "libs\n"})
	top.AddSubmodule("libs/apache", "../mid", midC)
	top.AddSubmodule("other", "file://"+leaf.Dir, leafC) // absolute file:// URL, outside path

	s := newSyncerT(t, Options{URL: top.URL(), Path: "libs", Submodules: true})
	res, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(res.Dir, "apache", "recipes", "default.rb")); got != "package 'apache2'\n" {
		t.Errorf("submodule content %q", got)
	}
	if got := readFile(t, filepath.Join(res.Dir, "apache", "deps", "leaf", "container.env")); got != "ID=42\n" {
		t.Errorf("nested submodule content %q", got)
	}
	if exists(filepath.Join(res.Root, "other")) {
		t.Error("a submodule outside the watched path must not be checked out")
	}

	// The watched path may lead into a submodule.
	s2 := newSyncerT(t, Options{URL: top.URL(), Path: "libs/apache/deps/leaf", Submodules: true})
	res2, err := s2.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if readFile(t, filepath.Join(res2.Dir, "container.env")) != "ID=42\n" {
		t.Error("path through submodules not followed")
	}

	// Submodules off: empty directories, as git clone without --recurse.
	s3 := newSyncerT(t, Options{URL: top.URL(), Path: "libs", Submodules: false})
	res3, err := s3.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(filepath.Join(res3.Dir, "apache")); len(entries) != 0 {
		t.Errorf("submodule checked out with submodules off: %v", entries)
	}

	// A new commit in the submodule, pinned by a new superproject commit.
	leafC2 := leaf.Commit("leaf 2", map[string]string{"container.env": "ID=43\n"})
	mid.AddSubmodule("deps/leaf", "../leaf", leafC2)
	midWT, _ := mid.Git.Worktree()
	_ = midWT
	midHead, _ := mid.Git.Head()
	top.AddSubmodule("libs/apache", "../mid", midHead.Hash())
	res4, err := s.Sync(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(res4.Dir, "apache", "deps", "leaf", "container.env")); got != "ID=43\n" {
		t.Errorf("updated nested submodule %q", got)
	}

	// A submodule pinned to a commit that was never pushed.
	broken := mk("broken")
	broken.Commit("x", map[string]string{"a": "a"})
	broken.AddSubmodule("libs/ghost", "../leaf", plumbHash("0123456789012345678901234567890123456789"))
	s5 := newSyncerT(t, Options{URL: broken.URL(), Path: "libs", Submodules: true})
	if _, err := s5.Sync(ctxT(t)); !errors.Is(err, ErrSubmodule) {
		t.Errorf("unpushed submodule commit: %v", err)
	}
}

func TestResolveSubmoduleURL(t *testing.T) {
	tests := []struct{ parent, sub, want string }{
		{"https://host/org/repo.git", "../other.git", "https://host/org/other.git"},
		{"https://host/org/repo.git", "./sub", "https://host/org/repo.git/sub"},
		{"https://host/org/repo.git/", "../../x/y.git", "https://host/x/y.git"},
		{"git@host:org/repo.git", "../other.git", "git@host:org/other.git"},
		{"ssh://git@host:22/org/repo", "../b", "ssh://git@host:22/org/b"},
		{"file:///srv/git/top", "../mid", "file:///srv/git/mid"},
		{"/srv/git/top", "../mid", "/srv/git/mid"},
		{"https://host/org/repo.git", "https://elsewhere/x.git", "https://elsewhere/x.git"},
	}
	for _, tt := range tests {
		got, err := resolveSubmoduleURL(tt.parent, tt.sub)
		if err != nil || got != tt.want {
			t.Errorf("resolveSubmoduleURL(%q, %q) = %q, %v; want %q", tt.parent, tt.sub, got, err, tt.want)
		}
	}
	if _, err := resolveSubmoduleURL("https://host/repo", "../../../x"); err == nil {
		t.Error("going above the root must fail")
	}
}

func TestClassifyLocation(t *testing.T) {
	tests := []struct {
		in   string
		kind locationKind
		bad  bool
	}{
		{"https://github.com/you/homelab.git", remoteRepo, false},
		{"ssh://git@host/x.git", remoteRepo, false},
		{"git@github.com:you/homelab.git", remoteRepo, false},
		{"file:///srv/x", remoteRepo, false},
		{"/srv/manifests", localDir, false},
		{"./manifests", localDir, false},
		{"ftp://host/x", 0, true},
		{"https:///x", 0, true},
	}
	for _, tt := range tests {
		kind, _, err := classifyLocation(tt.in)
		if (err != nil) != tt.bad || (!tt.bad && kind != tt.kind) {
			t.Errorf("classifyLocation(%q) = %v, %v", tt.in, kind, err)
		}
	}
}

func TestSafeNames(t *testing.T) {
	for _, bad := range []string{"", ".", "..", ".git", ".GIT", "a/b", "a\\b"} {
		if safeName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
	if !safeName("vm.yaml") || !safeName(".gitmodules") {
		t.Error("ordinary names refused")
	}
}
