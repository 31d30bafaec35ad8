package source

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/proxmops/proxmops/internal/config"
)

// Options configure a Syncer.
type Options struct {
	// URL is the repository: https://, http://, ssh://, scp-like
	// (git@host:path), git://, file://, or a local directory.
	URL string
	// Revision is a branch, tag, full ref (refs/...) or commit hash (at
	// least 4 hex digits); empty means the remote's default branch.
	Revision string
	// Path is the watched directory inside the repository; "" for the root.
	Path string
	// Submodules checks submodules out, recursively.
	Submodules bool
	// CacheDir holds one subdirectory per (URL, revision).
	CacheDir string
	// Auth are the credentials.
	Auth Auth
	// Logger receives progress at debug level and notable events (history
	// rewritten) at info; nil discards.
	Logger *slog.Logger
}

// FromConfig builds Options from the source section of the configuration.
func FromConfig(c config.Source) Options {
	return Options{
		URL:        c.RepoURL,
		Revision:   c.Revision,
		Path:       c.Path,
		Submodules: c.Submodules,
		CacheDir:   c.CacheDir,
		Auth: Auth{
			Username:              c.Username,
			Token:                 c.Token,
			SSHKey:                []byte(c.SSHKey),
			KnownHostsFile:        c.KnownHostsFile,
			InsecureIgnoreHostKey: c.InsecureIgnoreHostKey,
		},
	}
}

// Commit describes the commit a tree was checked out from.
type Commit struct {
	Hash        string    `json:"hash"` // full hex hash, or "local" for a directory outside Git
	Message     string    `json:"message"`
	Author      string    `json:"author"`
	AuthorEmail string    `json:"authorEmail"`
	Time        time.Time `json:"time"`
}

// Short is the first 12 characters of the hash.
func (c Commit) Short() string {
	if len(c.Hash) > 12 {
		return c.Hash[:12]
	}
	return c.Hash
}

// Subject is the first line of the message.
func (c Commit) Subject() string {
	s, _, _ := strings.Cut(strings.TrimSpace(c.Message), "\n")
	return s
}

// LocalCommitHash is Commit.Hash for a local directory that is not in Git.
const LocalCommitHash = "local"

// Result is a checked-out tree.
type Result struct {
	URL      string `json:"url"`      // the repository, without credentials
	Revision string `json:"revision"` // as asked for
	Ref      string `json:"ref"`      // the ref it resolved to ("refs/heads/main"); "" for a commit or a local directory
	Commit   Commit `json:"commit"`
	// Root is the checked-out tree; Dir is Root joined with Path, where
	// the manifests are (a file when Path names a file). Trees written by
	// a Syncer are read-only and never change; a later sync writes a new
	// one. A local directory is read in place.
	Root string `json:"root"`
	Dir  string `json:"dir"`
	Path string `json:"path"`
	// Local is true when a local directory was read in place.
	Local bool `json:"local"`
	// HistoryRewritten is true when the branch moved to a commit that does
	// not descend from PreviousCommit (a force push).
	HistoryRewritten bool      `json:"historyRewritten"`
	PreviousCommit   string    `json:"previousCommit,omitempty"`
	SyncedAt         time.Time `json:"syncedAt"`
}

// Syncer keeps one repository at one revision checked out. It is safe for
// concurrent use; syncs of one cache directory run one at a time, across
// processes too.
type Syncer struct {
	opts    Options
	kind    locationKind
	url     string // normalised
	dir     string // cache directory of (url, revision)
	purpose string // "sync" or "preview"

	mu       sync.Mutex
	last     *Result
	previews map[string]*previewEntry
}

type previewEntry struct {
	syncer   *Syncer
	lastUsed time.Time
}

// DefaultTimeout bounds a sync whose context has no deadline, so a Git
// server that accepts the connection and then hangs cannot stall the
// caller forever.
const DefaultTimeout = 5 * time.Minute

func withDefaultTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, DefaultTimeout)
}

// maxPreviews bounds the preview clones kept for ReadAt.
const maxPreviews = 8

// New checks the options and returns a Syncer. It does no network I/O. A
// tree left by an earlier run with the same settings becomes Last(), so a
// restarted daemon has its last good checkout even if Git is unreachable.
func New(opts Options) (*Syncer, error) {
	return newSyncer(opts, "sync")
}

func newSyncer(opts Options, purpose string) (*Syncer, error) {
	kind, u, err := classifyLocation(opts.URL)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, URL: redactURL(opts.URL), Err: err}
	}
	p, err := config.CleanSourcePath(opts.Path)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, URL: redactURL(opts.URL), Detail: "source.path", Err: err}
	}
	opts.Path = p
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Auth.Username == "" {
		opts.Auth.Username = DefaultUsername
	}
	s := &Syncer{opts: opts, kind: kind, url: u, purpose: purpose, previews: map[string]*previewEntry{}}
	if kind == remoteRepo || purpose == "preview" {
		if opts.CacheDir == "" {
			return nil, &Error{Kind: ErrInvalid, URL: redactURL(u), Detail: "no cache directory (source.cacheDir)"}
		}
		abs, err := filepath.Abs(opts.CacheDir)
		if err != nil {
			return nil, &Error{Kind: ErrInvalid, Detail: "source.cacheDir", Err: err}
		}
		s.opts.CacheDir = abs
		s.dir = filepath.Join(abs, cacheDirName(u, opts.Revision, purpose))
		if kind == remoteRepo {
			s.last = s.resultFromState()
		}
	}
	return s, nil
}

// URL is the repository URL, normalised (a local path made absolute).
func (s *Syncer) URL() string { return redactURL(s.url) }

// CacheDir is this Syncer's own cache directory ("" for a local directory).
func (s *Syncer) CacheDir() string { return s.dir }

// Last returns the last good checkout, or nil before the first.
func (s *Syncer) Last() *Result {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last == nil {
		return nil
	}
	r := *s.last
	return &r
}

// Sync brings the checkout up to date and returns it. On failure the
// error is an *Error (test with errors.Is(err, ErrAuth) etc.) and Last()
// still returns the previous good checkout, whose tree is kept on disk.
func (s *Syncer) Sync(ctx context.Context) (*Result, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	var res *Result
	var err error
	if s.kind == localDir {
		res, err = s.readLocal()
	} else {
		res, err = s.syncRemote(ctx, s.opts.Revision)
	}
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.last = res
	s.mu.Unlock()
	r := *res
	return &r, nil
}

// ReadAt checks out another revision (e.g. the branch of a pull request,
// for a plan preview) into a read-only tree of its own, without touching
// the main checkout or Last(). Previews are cached; the least recently
// used beyond a few are deleted.
func (s *Syncer) ReadAt(ctx context.Context, revision string) (*Result, error) {
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	if s.kind == localDir {
		return s.readLocalAt(ctx, revision)
	}
	p, err := s.preview(revision)
	if err != nil {
		return nil, err
	}
	return p.syncRemote(ctx, revision)
}

func (s *Syncer) preview(revision string) (*Syncer, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.previews[revision]; ok {
		e.lastUsed = time.Now()
		return e.syncer, nil
	}
	opts := s.opts
	opts.Revision = revision
	p, err := newSyncer(opts, "preview")
	if err != nil {
		return nil, err
	}
	if len(s.previews) >= maxPreviews {
		var oldest string
		for rev, e := range s.previews {
			if oldest == "" || e.lastUsed.Before(s.previews[oldest].lastUsed) {
				oldest = rev
			}
		}
		old := s.previews[oldest].syncer
		delete(s.previews, oldest)
		go old.remove()
	}
	s.previews[revision] = &previewEntry{syncer: p, lastUsed: time.Now()}
	return p, nil
}

// remove deletes the Syncer's cache directory, under its lock.
func (s *Syncer) remove() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	unlock, err := lockDir(ctx, s.dir)
	if err != nil {
		return
	}
	defer unlock()
	entries, _ := os.ReadDir(s.dir)
	for _, e := range entries {
		if e.Name() != ".lock" {
			_ = os.RemoveAll(filepath.Join(s.dir, e.Name()))
		}
	}
}

// readLocal reads a local directory in place.
func (s *Syncer) readLocal() (*Result, error) {
	fi, err := os.Stat(s.url)
	if err != nil || !fi.IsDir() {
		return nil, &Error{Kind: ErrRepositoryNotFound, URL: s.url, Detail: "the local directory does not exist", Err: err}
	}
	res := &Result{URL: s.url, Revision: s.opts.Revision, Root: s.url, Path: s.opts.Path, Local: true, SyncedAt: time.Now()}
	res.Dir = filepath.Join(s.url, filepath.FromSlash(s.opts.Path))
	if _, err := os.Stat(res.Dir); err != nil {
		return nil, &Error{Kind: ErrPathNotFound, URL: s.url, Path: s.opts.Path,
			Detail: fmt.Sprintf("source.path %q does not exist in %s", s.opts.Path, s.url)}
	}
	res.Commit = Commit{Hash: LocalCommitHash}
	repo, err := git.PlainOpenWithOptions(s.url, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err == nil {
		if head, err := repo.Head(); err == nil {
			if c, err := repo.CommitObject(head.Hash()); err == nil {
				res.Commit = commitInfo(c)
				if head.Name().IsBranch() {
					res.Ref = head.Name().String()
				}
			}
		}
	}
	return res, nil
}

// readLocalAt checks out a revision of a local Git work tree.
func (s *Syncer) readLocalAt(ctx context.Context, revision string) (*Result, error) {
	repo, err := git.PlainOpenWithOptions(s.url, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, &Error{Kind: ErrRevisionNotFound, URL: s.url, Revision: revision,
			Detail: "the local directory is not a Git repository, so it has no revisions"}
	}
	if revision == "" {
		revision = "HEAD"
	}
	h, err := repo.ResolveRevision(plumbing.Revision(revision))
	if err != nil {
		return nil, &Error{Kind: ErrRevisionNotFound, URL: s.url, Revision: revision, Err: err}
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, &Error{Kind: ErrRevisionNotFound, URL: s.url, Revision: revision, Err: err}
	}
	// The manifests may sit below the repository root.
	root := s.url
	if wt, err := repo.Worktree(); err == nil {
		root = wt.Filesystem.Root()
	}
	rel, err := filepath.Rel(root, s.url)
	if err != nil || strings.HasPrefix(rel, "..") {
		rel = "."
	}
	watched := filepath.ToSlash(filepath.Join(rel, filepath.FromSlash(s.opts.Path)))
	if watched == "." {
		watched = ""
	}
	p, err := s.preview("local:" + revision)
	if err != nil {
		return nil, err
	}
	unlock, err := lockDir(ctx, p.dir)
	if err != nil {
		return nil, &Error{Kind: ErrCheckout, URL: s.url, Err: err}
	}
	defer unlock()
	originURL := root
	if remote, err := repo.Remote("origin"); err == nil && len(remote.Config().URLs) > 0 {
		originURL = remote.Config().URLs[0]
	}
	m := p.newMaterializer(ctx)
	treeDir, err := m.checkout(repo, originURL, c, watched)
	if err != nil {
		return nil, err
	}
	res := &Result{URL: s.url, Revision: revision, Commit: commitInfo(c), Root: treeDir, Path: watched, SyncedAt: time.Now()}
	res.Dir = filepath.Join(treeDir, filepath.FromSlash(watched))
	p.gcTrees(filepath.Base(treeDir), "")
	return res, nil
}

// state is what a cache directory remembers of its last good sync.
type state struct {
	URL          string    `json:"url"`
	Revision     string    `json:"revision"`
	Ref          string    `json:"ref"`
	Commit       Commit    `json:"commit"`
	Path         string    `json:"path"`
	Submodules   bool      `json:"submodules"`
	Tree         string    `json:"tree"`
	PreviousTree string    `json:"previousTree"`
	SyncedAt     time.Time `json:"syncedAt"`
}

func (s *Syncer) statePath() string { return filepath.Join(s.dir, "state.json") }

func (s *Syncer) loadState() *state {
	data, err := os.ReadFile(s.statePath())
	if err != nil {
		return nil
	}
	var st state
	if json.Unmarshal(data, &st) != nil || st.URL != s.url || st.Revision != s.opts.Revision {
		return nil
	}
	return &st
}

func (s *Syncer) saveState(st *state) error {
	data, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := s.statePath() + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, s.statePath())
}

// resultFromState rebuilds Last() from the cache after a restart, when the
// tree it names is still there and was made with the same path and
// submodule settings.
func (s *Syncer) resultFromState() *Result {
	st := s.loadState()
	if st == nil || st.Tree == "" || st.Path != s.opts.Path || st.Submodules != s.opts.Submodules {
		return nil
	}
	root := filepath.Join(s.dir, "trees", st.Tree)
	if _, err := os.Stat(root); err != nil {
		return nil
	}
	return &Result{
		URL: redactURL(s.url), Revision: st.Revision, Ref: st.Ref, Commit: st.Commit,
		Root: root, Dir: filepath.Join(root, filepath.FromSlash(st.Path)), Path: st.Path, SyncedAt: st.SyncedAt,
	}
}

var errRetryFresh = errors.New("cache damaged")
