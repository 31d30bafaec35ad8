package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/source"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Keys of the pin and of the per-commit pass records in the store.
const (
	statePin       = "controller/pin"
	stateRevisions = "controller/revisions"
	// maxRevisionRecords bounds the commits whose pass results are kept.
	maxRevisionRecords = 200
	// maxRevisions bounds the commits GET /api/v1/revisions lists.
	maxRevisions = 50
)

// pins holds the pinned revision and what the passes did at each commit.
// Its own lock: the pass reads it while holding c.mu.
type pins struct {
	mu   sync.Mutex
	pin  *api.Pin
	revs map[string]*api.RevisionResult
}

func (p *pins) current() *api.Pin {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pin == nil {
		return nil
	}
	cp := *p.pin
	return &cp
}

// loadPins reads the pin and the pass records saved by an earlier run, so
// a pin survives a restart.
func (c *Controller) loadPins(ctx context.Context) error {
	c.pins.revs = map[string]*api.RevisionResult{}
	if b, ok, err := c.st.State(ctx, c.stateKey(statePin)); err != nil {
		return fmt.Errorf("controller pin: %w", err)
	} else if ok && len(b) > 0 && string(b) != "null" {
		var p api.Pin
		if err := json.Unmarshal(b, &p); err != nil {
			c.log.Warn("the saved pinned revision is unreadable; following the branch", "err", err)
		} else {
			c.pins.pin = &p
		}
	}
	if b, ok, err := c.st.State(ctx, c.stateKey(stateRevisions)); err != nil {
		return fmt.Errorf("controller revisions: %w", err)
	} else if ok {
		if err := json.Unmarshal(b, &c.pins.revs); err != nil {
			c.log.Warn("the saved pass results per revision are unreadable; starting afresh", "err", err)
			c.pins.revs = map[string]*api.RevisionResult{}
		}
	}
	return nil
}

// checkoutPinned reads the pinned revision instead of the branch head
// (res) when a pin is set.
func (c *Controller) checkoutPinned(ctx context.Context, rt *runtime, res *source.Result) (*source.Result, error) {
	p := c.pins.current()
	if p == nil || res.Commit.Hash == p.Revision {
		return res, nil
	}
	pinned, err := rt.syncer.ReadAt(ctx, p.Revision)
	if err != nil {
		return nil, fmt.Errorf("the pinned revision %s cannot be read: %w", short(p.Revision), err)
	}
	return pinned, nil
}

// notePass records the result of a pass at a commit (caller may hold c.mu).
func (c *Controller) notePass(ctx context.Context, commit string, at time.Time, counts map[vocab.Status]int) {
	if commit == "" {
		return
	}
	c.pins.mu.Lock()
	r := c.pins.revs[commit]
	changed := r == nil || !maps.Equal(r.Counts, counts)
	if r == nil {
		r = &api.RevisionResult{FirstPass: at}
		c.pins.revs[commit] = r
	}
	r.LastPass, r.Counts = at, maps.Clone(counts)
	if len(c.pins.revs) > maxRevisionRecords {
		oldest := ""
		for h, v := range c.pins.revs {
			if oldest == "" || v.LastPass.Before(c.pins.revs[oldest].LastPass) {
				oldest = h
			}
		}
		delete(c.pins.revs, oldest)
	}
	var b []byte
	var err error
	if changed {
		b, err = json.Marshal(c.pins.revs)
	}
	c.pins.mu.Unlock()
	if changed && err == nil && !c.fenced.Load() {
		err = c.st.PutState(ctx, c.stateKey(stateRevisions), b)
	}
	if err != nil {
		c.log.Error("saving the pass result of a revision failed", "err", err)
	}
}

// Revisions lists recent commits of the watched branch with the result of
// the passes at each.
func (c *Controller) Revisions(ctx context.Context) (api.RevisionList, error) {
	rt := c.currentRuntime()
	out := api.RevisionList{Branch: rt.cfg.Source.Revision, Pinned: c.pins.current(), Revisions: []api.Revision{}}
	if rt.syncer == nil {
		return out, fmt.Errorf("%s: %w", rt.sourceErr, api.ErrNotReady)
	}
	commits, err := rt.syncer.Log(ctx, maxRevisions)
	if err != nil {
		return out, err
	}
	cur := ""
	if ds := c.currentDesired(); ds != nil {
		cur = ds.commit
	}
	c.mu.Lock()
	loadErr := c.loadErr
	c.mu.Unlock()
	// A pinned commit off the branch's first-parent line is listed too.
	if out.Pinned != nil && !containsCommit(commits, out.Pinned.Revision) {
		if res, err := rt.syncer.ReadAt(ctx, out.Pinned.Revision); err == nil {
			commits = append([]source.Commit{res.Commit}, commits...)
		}
	}
	hashes := make([]string, len(commits))
	for i, cm := range commits {
		hashes[i] = cm.Hash
	}
	events, err := c.st.HistoryByCommit(ctx, hashes)
	if err != nil {
		return out, err
	}
	c.pins.mu.Lock()
	defer c.pins.mu.Unlock()
	for _, cm := range commits {
		r := api.Revision{Hash: cm.Hash, Time: cm.Time.UTC(), Author: cm.Author, Message: cm.Subject(),
			Current: cm.Hash == cur, Pinned: out.Pinned != nil && out.Pinned.Revision == cm.Hash}
		if loadErr != nil && loadErr.Revision == cm.Hash {
			r.LoadErrors = loadErr.Errors
		}
		if rec := c.pins.revs[cm.Hash]; rec != nil || events[cm.Hash] != nil {
			res := api.RevisionResult{Events: map[api.HistoryEvent]int{}}
			if rec != nil {
				res = *rec
				res.Counts = maps.Clone(rec.Counts)
			}
			res.Events = events[cm.Hash]
			if res.Events == nil {
				res.Events = map[api.HistoryEvent]int{}
			}
			r.Result = &res
		}
		out.Revisions = append(out.Revisions, r)
	}
	return out, nil
}

func containsCommit(cs []source.Commit, h string) bool {
	for _, c := range cs {
		if c.Hash == h {
			return true
		}
	}
	return false
}

// Pin makes the controller plan and apply revision (a commit hash, full or
// abbreviated, or any revision Git resolves) instead of the branch head
// until Unpin, and starts a sync to it.
func (c *Controller) Pin(ctx context.Context, revision, by string) (api.Pin, error) {
	revision = strings.TrimSpace(revision)
	if revision == "" {
		return api.Pin{}, fmt.Errorf("no revision given: %w", api.ErrInvalid)
	}
	if err := c.canAct(); err != nil {
		return api.Pin{}, err
	}
	rt := c.currentRuntime()
	if rt.syncer == nil {
		return api.Pin{}, fmt.Errorf("%s: %w", rt.sourceErr, api.ErrNotReady)
	}
	// A short hash is completed from the branch's history first.
	if commits, err := rt.syncer.Log(ctx, maxRevisions); err == nil {
		for _, cm := range commits {
			if len(revision) >= 4 && strings.HasPrefix(cm.Hash, strings.ToLower(revision)) {
				revision = cm.Hash
				break
			}
		}
	}
	res, err := rt.syncer.ReadAt(ctx, revision)
	if err != nil {
		return api.Pin{}, fmt.Errorf("revision %q cannot be read: %v: %w", revision, err, api.ErrInvalid)
	}
	if _, err := loadManifests(res.Dir); err != nil {
		return api.Pin{}, fmt.Errorf("the manifests at %s are invalid, so it cannot be pinned: %v: %w", short(res.Commit.Hash), err, api.ErrInvalid)
	}
	p := api.Pin{Revision: res.Commit.Hash, Message: res.Commit.Subject(), By: by, At: c.clock.Now().UTC()}
	if err := c.savePin(ctx, &p); err != nil {
		return api.Pin{}, err
	}
	c.log.Warn("revision pinned: the branch head is not followed until unpinned", "commit", p.Revision, "by", by)
	// The pinning person starts what the pinned revision's sync does.
	c.ask(request{pull: true, force: true, by: map[string]api.Actor{allKeys: api.ActorFrom(ctx)}})
	return p, nil
}

// Unpin makes the controller follow the branch head again.
func (c *Controller) Unpin(ctx context.Context, by string) error {
	if c.pins.current() == nil {
		return fmt.Errorf("no revision is pinned: %w", api.ErrConflict)
	}
	if err := c.savePin(ctx, nil); err != nil {
		return err
	}
	c.log.Info("revision unpinned: following the branch head again", "by", by)
	c.ask(request{pull: true, by: map[string]api.Actor{allKeys: api.ActorFrom(ctx)}})
	return nil
}

func (c *Controller) savePin(ctx context.Context, p *api.Pin) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := c.st.PutState(ctx, c.stateKey(statePin), b); err != nil {
		return fmt.Errorf("saving the pin failed: %w", err)
	}
	c.pins.mu.Lock()
	c.pins.pin = p
	c.pins.mu.Unlock()
	return nil
}

// sortedRevisionHashes is for tests: the commits with a pass record.
func (c *Controller) sortedRevisionHashes() []string {
	c.pins.mu.Lock()
	defer c.pins.mu.Unlock()
	hs := make([]string, 0, len(c.pins.revs))
	for h := range c.pins.revs {
		hs = append(hs, h)
	}
	sort.Strings(hs)
	return hs
}
