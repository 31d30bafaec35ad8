package controller

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/source"
)

// gitSource is what a runtime reads the repository with: a Syncer of its
// own (one cluster) or its sub-directory of a SharedSource.
type gitSource interface {
	Sync(ctx context.Context) (*source.Result, error)
	ReadAt(ctx context.Context, revision string) (*source.Result, error)
	Log(ctx context.Context, max int) ([]source.Commit, error)
}

// SharedSource is the one Git source several clusters follow. A fetch
// serves every cluster whose pass asks for one while it runs or within
// Fresh after it ended, so the clusters' loops, each on its own timer,
// cost one fetch per interval between them, not one each.
type SharedSource struct {
	syncer *source.Syncer
	fresh  time.Duration

	mu     sync.Mutex
	call   *syncCall
	last   *source.Result
	err    error
	doneAt time.Time
	stale  bool

	fetches atomic.Int64
}

type syncCall struct {
	done chan struct{}
	res  *source.Result
	err  error
}

// NewSharedSource builds the source of several clusters; fresh is how long
// a fetch's result serves other clusters (half the interval). A source
// that is not configured gives nil and the error in words.
func NewSharedSource(s config.Source, fresh time.Duration, log *slog.Logger) (*SharedSource, error) {
	syncer, err := (&Controller{log: log}).newSyncer(s)
	if err != nil {
		return nil, err
	}
	return &SharedSource{syncer: syncer, fresh: fresh}, nil
}

// Sync fetches, or joins the fetch running, or returns the last result
// while it is fresh and no refresh was asked for since.
func (s *SharedSource) Sync(ctx context.Context) (*source.Result, error) {
	s.mu.Lock()
	if cl := s.call; cl != nil {
		s.mu.Unlock()
		select {
		case <-cl.done:
			return copyResult(cl.res), cl.err
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if !s.stale && !s.doneAt.IsZero() && time.Since(s.doneAt) < s.fresh {
		res, err := copyResult(s.last), s.err
		s.mu.Unlock()
		return res, err
	}
	cl := &syncCall{done: make(chan struct{})}
	s.call, s.stale = cl, false
	s.mu.Unlock()

	s.fetches.Add(1)
	cl.res, cl.err = s.syncer.Sync(ctx)
	s.mu.Lock()
	s.call = nil
	if ctx.Err() == nil {
		s.last, s.err, s.doneAt = cl.res, cl.err, time.Now()
	}
	s.mu.Unlock()
	close(cl.done)
	return copyResult(cl.res), cl.err
}

// Invalidate makes the next Sync fetch (a refresh, a webhook, a pin).
func (s *SharedSource) Invalidate() {
	s.mu.Lock()
	s.stale = true
	s.mu.Unlock()
}

// Fetches counts the fetches run (tests).
func (s *SharedSource) Fetches() int64 { return s.fetches.Load() }

func copyResult(r *source.Result) *source.Result {
	if r == nil {
		return nil
	}
	cp := *r
	return &cp
}

// clusterSource is one cluster's view of a SharedSource: its results'
// Dir is the cluster's sub-directory (its path inside source.path).
type clusterSource struct {
	shared *SharedSource
	sub    string
}

func (cs clusterSource) fix(res *source.Result, err error) (*source.Result, error) {
	if err != nil || res == nil {
		return res, err
	}
	res = copyResult(res)
	res.Path = config.JoinSourcePath(res.Path, cs.sub)
	res.Dir = filepath.Join(res.Dir, filepath.FromSlash(cs.sub))
	if _, statErr := os.Stat(res.Dir); statErr != nil {
		return nil, &source.Error{Kind: source.ErrPathNotFound, URL: res.URL, Path: res.Path,
			Detail: fmt.Sprintf("the cluster's path %q does not exist at %s", res.Path, short(res.Commit.Hash))}
	}
	return res, nil
}

func (cs clusterSource) Sync(ctx context.Context) (*source.Result, error) {
	return cs.fix(cs.shared.Sync(ctx))
}

func (cs clusterSource) ReadAt(ctx context.Context, revision string) (*source.Result, error) {
	return cs.fix(cs.shared.syncer.ReadAt(ctx, revision))
}

func (cs clusterSource) Log(ctx context.Context, max int) ([]source.Commit, error) {
	return cs.shared.syncer.Log(ctx, max)
}
