package source

import (
	"context"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Log lists up to max commits of the watched revision, newest first,
// following first parents from the last good checkout. A shallow clone
// holds only part of the history: the walk ends where the objects do.
// A local directory outside Git has no revisions (nil, nil).
func (s *Syncer) Log(ctx context.Context, max int) ([]Commit, error) {
	if max <= 0 {
		max = 50
	}
	if s.kind == localDir {
		repo, err := git.PlainOpenWithOptions(s.url, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
		if err != nil {
			return nil, nil
		}
		head, err := repo.Head()
		if err != nil {
			return nil, nil
		}
		return walkFirstParents(repo, head.Hash(), max), nil
	}
	last := s.Last()
	if last == nil {
		return nil, nil
	}
	ctx, cancel := withDefaultTimeout(ctx)
	defer cancel()
	unlock, err := lockDir(ctx, s.dir)
	if err != nil {
		return nil, &Error{Kind: ErrCheckout, URL: redactURL(s.url), Err: err}
	}
	defer unlock()
	repo, err := openCacheRepo(filepath.Join(s.dir, "repo"))
	if err != nil {
		return nil, &Error{Kind: ErrCheckout, URL: redactURL(s.url), Err: err}
	}
	return walkFirstParents(repo, plumbing.NewHash(last.Commit.Hash), max), nil
}

func walkFirstParents(repo *git.Repository, h plumbing.Hash, max int) []Commit {
	var out []Commit
	for len(out) < max {
		c, err := object.GetCommit(repo.Storer, h)
		if err != nil {
			break // the start of a shallow history
		}
		out = append(out, commitInfo(c))
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return out
}
