package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/proxmops/proxmops/internal/config"
)

// tipRef is where the fetched revision is kept in a cache repository.
const tipRef = plumbing.ReferenceName("refs/proxmops/tip")

var hexPattern = regexp.MustCompile(`^[0-9a-fA-F]{4,40}$`)

// advertised is what the server says before a fetch.
type advertised struct {
	refs      memory.ReferenceStorage
	shallow   bool // the server can serve shallow clones
	sha1Wants bool // the server lets clients fetch a commit by hash
}

// target is a revision resolved against the advertised refs.
type target struct {
	ref    plumbing.ReferenceName // remote ref to fetch; "" for a commit
	hash   plumbing.Hash          // its advertised hash
	commit string                 // hex (maybe abbreviated) for a commit revision
}

func (s *Syncer) syncRemote(ctx context.Context, revision string) (*Result, error) {
	unlock, err := lockDir(ctx, s.dir)
	if err != nil {
		return nil, &Error{Kind: ErrCheckout, URL: redactURL(s.url), Revision: revision, Detail: "cannot lock the cache directory", Err: err}
	}
	defer unlock()
	res, err := s.syncLocked(ctx, revision)
	if errors.Is(err, errRetryFresh) {
		// The cached repository is damaged (interrupted write, disk
		// trouble): start it over. Trees are left alone.
		s.opts.Logger.Warn("git cache damaged; cloning again", "dir", s.dir, "error", err)
		if rmErr := os.RemoveAll(filepath.Join(s.dir, "repo")); rmErr != nil {
			return nil, &Error{Kind: ErrCheckout, URL: redactURL(s.url), Revision: revision, Err: rmErr}
		}
		res, err = s.syncLocked(ctx, revision)
		if errors.Is(err, errRetryFresh) {
			err = &Error{Kind: ErrFetch, URL: redactURL(s.url), Revision: revision, Err: errors.Unwrap(err)}
		}
	}
	return res, err
}

// damaged marks an error from the local repository as a reason to clone
// again.
type damaged struct{ err error }

func (d damaged) Error() string   { return d.err.Error() }
func (d damaged) Unwrap() error   { return d.err }
func (d damaged) Is(t error) bool { return t == errRetryFresh }

func (s *Syncer) syncLocked(ctx context.Context, revision string) (*Result, error) {
	start := time.Now()
	repo, err := openCacheRepo(filepath.Join(s.dir, "repo"))
	if err != nil {
		return nil, damaged{err}
	}
	auth, err := s.opts.Auth.method(s.url, s.url)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.URL, e.Revision = redactURL(s.url), revision
		}
		return nil, err
	}
	adv, err := advertise(ctx, s.url, auth)
	if err != nil {
		return nil, s.wrapFetchError(err, revision)
	}
	tgt, err := resolveRevision(adv.refs, revision)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.URL = redactURL(s.url)
		}
		return nil, err
	}
	hash, ref, err := s.fetch(ctx, repo, adv, tgt, auth, revision)
	if err != nil {
		return nil, err
	}
	commit, err := repo.CommitObject(hash)
	if err != nil {
		return nil, damaged{fmt.Errorf("commit %s missing after fetch: %w", hash, err)}
	}
	s.opts.Logger.Debug("git fetch", "url", redactURL(s.url), "revision", revision, "commit", hash.String(), "duration", time.Since(start))

	prev := s.loadState()
	rewritten := false
	previous := ""
	if prev != nil && prev.Commit.Hash != "" {
		previous = prev.Commit.Hash
		if previous != hash.String() && tgt.ref.IsBranch() {
			rewritten = !isAncestor(repo.Storer, plumbing.NewHash(previous), hash)
			if rewritten {
				s.opts.Logger.Info("git history rewritten (force push)", "url", redactURL(s.url), "revision", revision,
					"previous", previous, "commit", hash.String())
			}
		}
	}

	m := s.newMaterializer(ctx)
	treeDir, err := m.checkout(repo, s.url, commit, s.opts.Path)
	if err != nil {
		var e *Error
		if errors.As(err, &e) {
			e.URL, e.Revision = redactURL(s.url), revision
		}
		return nil, err
	}
	st := &state{
		URL: s.url, Revision: s.opts.Revision, Ref: string(ref), Commit: commitInfo(commit),
		Path: s.opts.Path, Submodules: s.opts.Submodules, Tree: filepath.Base(treeDir), SyncedAt: time.Now().UTC(),
	}
	if prev != nil && prev.Tree != st.Tree {
		st.PreviousTree = prev.Tree
	} else if prev != nil {
		st.PreviousTree = prev.PreviousTree
	}
	if err := s.saveState(st); err != nil {
		return nil, &Error{Kind: ErrCheckout, URL: redactURL(s.url), Revision: revision, Err: err}
	}
	s.gcTrees(st.Tree, st.PreviousTree)
	res := &Result{
		URL: redactURL(s.url), Revision: revision, Ref: string(ref), Commit: st.Commit,
		Root: treeDir, Dir: filepath.Join(treeDir, filepath.FromSlash(s.opts.Path)), Path: s.opts.Path,
		HistoryRewritten: rewritten, SyncedAt: st.SyncedAt,
	}
	if previous != hash.String() {
		res.PreviousCommit = previous
	}
	return res, nil
}

// openCacheRepo opens or creates the bare repository of a cache directory.
func openCacheRepo(dir string) (*git.Repository, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	st := filesystem.NewStorage(osfs.New(dir), cache.NewObjectLRUDefault())
	repo, err := git.Open(st, nil)
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return git.Init(st, nil)
	}
	return repo, err
}

// advertise asks the server for its refs and capabilities: one round trip,
// no objects.
func advertise(ctx context.Context, rawURL string, auth transport.AuthMethod) (*advertised, error) {
	ep, err := transport.NewEndpoint(rawURL)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Err: err}
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, &Error{Kind: ErrInvalid, Err: err}
	}
	sess, err := cl.NewUploadPackSession(ep, auth)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return nil, err
	}
	refs, err := ar.AllReferences()
	if err != nil {
		return nil, err
	}
	return &advertised{
		refs:      refs,
		shallow:   ar.Capabilities.Supports(capability.Shallow),
		sha1Wants: ar.Capabilities.Supports(capability.AllowReachableSHA1InWant) || ar.Capabilities.Supports(capability.AllowTipSHA1InWant),
	}, nil
}

// resolveRevision finds what to fetch for a revision: the default branch,
// a full ref, a branch, a tag (branches win, as in git), or a commit.
func resolveRevision(refs memory.ReferenceStorage, revision string) (target, error) {
	lookup := func(name plumbing.ReferenceName) (target, bool) {
		if h, ok := refs[name]; ok && h.Type() == plumbing.HashReference {
			return target{ref: name, hash: h.Hash()}, true
		}
		return target{}, false
	}
	if revision == "" {
		if head, ok := refs[plumbing.HEAD]; ok {
			if head.Type() == plumbing.SymbolicReference {
				if t, ok := lookup(head.Target()); ok {
					return t, nil
				}
			}
		}
		for _, name := range []plumbing.ReferenceName{"refs/heads/main", "refs/heads/master"} {
			if t, ok := lookup(name); ok {
				return t, nil
			}
		}
		return target{}, &Error{Kind: ErrRevisionNotFound, Detail: "the repository has no default branch; set source.revision"}
	}
	if strings.HasPrefix(revision, "refs/") {
		if t, ok := lookup(plumbing.ReferenceName(revision)); ok {
			return t, nil
		}
	} else {
		if t, ok := lookup(plumbing.NewBranchReferenceName(revision)); ok {
			return t, nil
		}
		if t, ok := lookup(plumbing.NewTagReferenceName(revision)); ok {
			return t, nil
		}
		if hexPattern.MatchString(revision) {
			return target{commit: strings.ToLower(revision)}, nil
		}
	}
	var names []string
	for name := range refs {
		switch {
		case name.IsBranch():
			names = append(names, name.Short())
		case name.IsTag():
			names = append(names, name.Short())
		}
	}
	sort.Strings(names)
	detail := fmt.Sprintf("no branch or tag named %q", revision)
	if s := closest(revision, names); s != "" {
		detail += fmt.Sprintf("; did you mean %q?", s)
	} else if len(names) > 0 {
		shown := names
		if len(shown) > 10 {
			shown = shown[:10]
		}
		detail += "; the repository has " + strings.Join(shown, ", ")
	}
	return target{}, &Error{Kind: ErrRevisionNotFound, Revision: revision, Detail: detail}
}

// fetch brings the target's commit into repo and returns its hash.
func (s *Syncer) fetch(ctx context.Context, repo *git.Repository, adv *advertised, tgt target, auth transport.AuthMethod, revision string) (plumbing.Hash, plumbing.ReferenceName, error) {
	remote := git.NewRemote(repo.Storer, &gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.url}})
	fresh := false
	if _, err := repo.Storer.Reference(tipRef); errors.Is(err, plumbing.ErrReferenceNotFound) {
		fresh = true
	}
	doFetch := func(specs []gitconfig.RefSpec, depth int) error {
		err := remote.FetchContext(ctx, &git.FetchOptions{
			RefSpecs: specs, Depth: depth, Auth: auth, Tags: git.NoTags, Force: true,
		})
		if err == nil || errors.Is(err, git.NoErrAlreadyUpToDate) {
			return nil
		}
		return err
	}

	if tgt.ref != "" {
		if cur, err := repo.Storer.Reference(tipRef); err == nil && cur.Hash() == tgt.hash && hasObject(repo.Storer, tgt.hash) {
			h, err := peelToCommit(repo.Storer, tgt.hash)
			if err == nil {
				return h, tgt.ref, nil
			}
		}
		depth := 0
		if fresh && adv.shallow {
			depth = 1
		}
		spec := gitconfig.RefSpec("+" + tgt.ref.String() + ":" + tipRef.String())
		if err := doFetch([]gitconfig.RefSpec{spec}, depth); err != nil {
			return plumbing.ZeroHash, "", s.fetchFailure(err, revision)
		}
		ref, err := repo.Storer.Reference(tipRef)
		if err != nil {
			return plumbing.ZeroHash, "", damaged{err}
		}
		h, err := peelToCommit(repo.Storer, ref.Hash())
		if err != nil {
			return plumbing.ZeroHash, "", &Error{Kind: ErrRevisionNotFound, Revision: revision, URL: redactURL(s.url),
				Detail: fmt.Sprintf("%s does not point to a commit", tgt.ref), Err: err}
		}
		return h, tgt.ref, nil
	}

	// A commit: use it if already here, else fetch it by hash when the
	// server allows, else fetch every branch and tag and look for it.
	if h, err := findCommit(repo.Storer, tgt.commit); err == nil {
		return h, "", nil
	} else if !errors.Is(err, plumbing.ErrObjectNotFound) {
		return plumbing.ZeroHash, "", &Error{Kind: ErrRevisionNotFound, URL: redactURL(s.url), Revision: revision, Detail: err.Error()}
	}
	if len(tgt.commit) == 40 && adv.sha1Wants {
		depth := 0
		if fresh && adv.shallow {
			depth = 1
		}
		spec := gitconfig.RefSpec("+" + tgt.commit + ":" + tipRef.String())
		if err := doFetch([]gitconfig.RefSpec{spec}, depth); err == nil {
			if h, err := findCommit(repo.Storer, tgt.commit); err == nil {
				return h, "", nil
			}
		}
	}
	specs := []gitconfig.RefSpec{"+refs/heads/*:refs/proxmops/heads/*", "+refs/tags/*:refs/proxmops/tags/*"}
	if err := doFetch(specs, 0); err != nil {
		return plumbing.ZeroHash, "", s.fetchFailure(err, revision)
	}
	h, err := findCommit(repo.Storer, tgt.commit)
	if err != nil {
		detail := fmt.Sprintf("no commit %s on any branch or tag of the repository", tgt.commit)
		if !errors.Is(err, plumbing.ErrObjectNotFound) {
			detail = err.Error()
		}
		return plumbing.ZeroHash, "", &Error{Kind: ErrRevisionNotFound, URL: redactURL(s.url), Revision: revision, Detail: detail}
	}
	_ = repo.Storer.SetReference(plumbing.NewHashReference(tipRef, h))
	return h, "", nil
}

// fetchFailure classifies a failed fetch: network and credential problems
// are reported; anything else may be a damaged cache, worth one fresh clone.
func (s *Syncer) fetchFailure(err error, revision string) error {
	kind, _ := classify(err)
	if kind == ErrFetch {
		return damaged{err}
	}
	return s.wrapFetchError(err, revision)
}

func hasObject(s storer.EncodedObjectStorer, h plumbing.Hash) bool {
	return s.HasEncodedObject(h) == nil
}

// peelToCommit follows annotated tags to the commit they name.
func peelToCommit(s storer.EncodedObjectStorer, h plumbing.Hash) (plumbing.Hash, error) {
	for range 10 {
		obj, err := s.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		switch obj.Type() {
		case plumbing.CommitObject:
			return h, nil
		case plumbing.TagObject:
			tag, err := object.DecodeTag(s, obj)
			if err != nil {
				return plumbing.ZeroHash, err
			}
			h = tag.Target
		default:
			return plumbing.ZeroHash, fmt.Errorf("%s is a %s, not a commit", h, obj.Type())
		}
	}
	return plumbing.ZeroHash, fmt.Errorf("tag chain too long at %s", h)
}

// findCommit finds a commit by full or abbreviated hash.
func findCommit(s storer.EncodedObjectStorer, hexHash string) (plumbing.Hash, error) {
	if len(hexHash) == 40 {
		h := plumbing.NewHash(hexHash)
		if _, err := object.GetCommit(s, h); err != nil {
			return plumbing.ZeroHash, plumbing.ErrObjectNotFound
		}
		return h, nil
	}
	iter, err := s.IterEncodedObjects(plumbing.CommitObject)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	var found []plumbing.Hash
	err = iter.ForEach(func(o plumbing.EncodedObject) error {
		if strings.HasPrefix(o.Hash().String(), hexHash) {
			found = append(found, o.Hash())
		}
		return nil
	})
	if err != nil {
		return plumbing.ZeroHash, err
	}
	switch len(found) {
	case 0:
		return plumbing.ZeroHash, plumbing.ErrObjectNotFound
	case 1:
		return found[0], nil
	}
	return plumbing.ZeroHash, fmt.Errorf("abbreviated hash %s is ambiguous (%d commits); give more digits", hexHash, len(found))
}

// isAncestor reports whether anc is reachable from desc through parents.
// History missing from a shallow clone ends the walk; so does a bound,
// since a branch moved by thousands of commits at once is not worth
// walking to call it a fast-forward.
func isAncestor(s storer.EncodedObjectStorer, anc, desc plumbing.Hash) bool {
	const limit = 100000
	seen := map[plumbing.Hash]bool{desc: true}
	queue := []plumbing.Hash{desc}
	for len(queue) > 0 && len(seen) < limit {
		h := queue[0]
		queue = queue[1:]
		if h == anc {
			return true
		}
		c, err := object.GetCommit(s, h)
		if err != nil {
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return false
}

func commitInfo(c *object.Commit) Commit {
	return Commit{
		Hash:        c.Hash.String(),
		Message:     strings.TrimRight(c.Message, "\n"),
		Author:      c.Author.Name,
		AuthorEmail: c.Author.Email,
		Time:        c.Author.When,
	}
}

// closest suggests the name nearest to a misspelt revision.
func closest(word string, names []string) string {
	best, bestDist := "", 3
	for _, n := range names {
		if d := config.EditDistance(strings.ToLower(word), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}
