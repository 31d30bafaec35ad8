package forge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// Store keeps the open requests and their last plan.
type Store interface {
	PutPullRequest(ctx context.Context, pr api.PullRequest) error
	PullRequest(ctx context.Context, forge string, number int64) (api.PullRequest, bool, error)
	DeletePullRequest(ctx context.Context, forge string, number int64) error
	PullRequests(ctx context.Context) ([]api.PullRequest, error)
}

// Options configure Previews.
type Options struct {
	Store Store
	// Plan plans a revision read-only against the live cluster(s) (the
	// daemon's plan of GET /api/v1/plan?revision=); an error that
	// errors.Is api.ErrInvalid lists the manifests' errors after its
	// first line.
	Plan func(ctx context.Context, revision string) (api.Plan, error)
	// Config is the forge section in force (settings saved from the UI
	// apply to the next delivery).
	Config func() config.Forge
	// PublicURL is where reviewers open the UI (server.publicURL); the
	// commit status links to the request's preview there.
	PublicURL func() string
	Logger    *slog.Logger
	// HTTPClient carries the forge calls (default: a client with a
	// 30-second timeout).
	HTTPClient *http.Client
}

// Previews plans pull requests as their webhooks come, one at a time; a
// request pushed again before its turn is planned once, at its newest head.
type Previews struct {
	opt     Options
	log     *slog.Logger
	mu      sync.Mutex
	pending map[int64]event
	order   []int64
	wake    chan struct{}
	stop    context.CancelFunc
	done    chan struct{}
}

// New starts the worker; Close ends it.
func New(opt Options) *Previews {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	if opt.HTTPClient == nil {
		opt.HTTPClient = &http.Client{Timeout: 30 * time.Second}
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Previews{opt: opt, log: opt.Logger, pending: map[int64]event{}, wake: make(chan struct{}, 1), stop: cancel, done: make(chan struct{})}
	go p.run(ctx)
	return p
}

// Close stops the worker, abandoning a preview under way.
func (p *Previews) Close() {
	p.stop()
	<-p.done
}

// Enabled tells whether pull-request previews are on.
func (p *Previews) Enabled() bool { return p.opt.Config().PullRequestPreviews }

// Handle takes a verified delivery of forge. handled is false for what is
// not a pull-request event (a push: the caller pulls Git) and when
// previews are off; otherwise msg says what becomes of it and queued
// whether a preview or an untracking is on its way.
func (p *Previews) Handle(forge string, h http.Header, body []byte) (handled, queued bool, msg string, err error) {
	cfg := p.opt.Config()
	if !cfg.PullRequestPreviews || !isPullRequestEvent(forge, h) {
		return false, false, "", nil
	}
	if forge != cfg.Type {
		return true, false, fmt.Sprintf("ignored: previews are set up for %s (forge.type), not %s", cfg.Type, forge), nil
	}
	e, err := parseEvent(forge, body)
	if err != nil {
		return true, false, "", err
	}
	if !strings.EqualFold(e.repository, cfg.Repository) {
		return true, false, fmt.Sprintf("ignored: the request is in %s, previews are for %s (forge.repository)", e.repository, cfg.Repository), nil
	}
	switch e.op {
	case opPlan:
		msg = fmt.Sprintf("planning request %d at %s", e.number, short(e.sha))
	case opClose:
		msg = fmt.Sprintf("request %d is closed: no longer tracked", e.number)
	default:
		return true, false, fmt.Sprintf("ignored: action %q changes nothing to plan", e.action), nil
	}
	p.enqueue(e)
	return true, true, msg, nil
}

func (p *Previews) enqueue(e event) {
	p.mu.Lock()
	if _, ok := p.pending[e.number]; !ok {
		p.order = append(p.order, e.number)
	}
	p.pending[e.number] = e // the newest delivery of a request wins
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *Previews) next() (event, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.order) == 0 {
		return event{}, false
	}
	n := p.order[0]
	p.order = p.order[1:]
	e := p.pending[n]
	delete(p.pending, n)
	return e, true
}

func (p *Previews) run(ctx context.Context) {
	defer close(p.done)
	for {
		for e, ok := p.next(); ok; e, ok = p.next() {
			if e.op == opClose {
				p.untrack(ctx, e)
			} else {
				p.preview(ctx, e)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.wake:
		}
	}
}

// List is the document of GET /api/v1/previews.
func (p *Previews) List(ctx context.Context) (api.PullRequestList, error) {
	list, err := p.opt.Store.PullRequests(ctx)
	if err != nil {
		return api.PullRequestList{}, err
	}
	return api.PullRequestList{Enabled: p.Enabled(), Requests: list}, nil
}

func (p *Previews) untrack(ctx context.Context, e event) {
	cfg := p.opt.Config()
	if err := p.opt.Store.DeletePullRequest(ctx, cfg.Type, e.number); err != nil {
		p.log.Warn("pull-request preview: the closed request could not be forgotten", "request", e.number, "err", err)
		return
	}
	p.log.Info("pull-request preview: request closed, no longer tracked", "request", e.number, "action", e.action)
}

// preview plans the request's head, posts the plan and sets the status,
// then records the request.
func (p *Previews) preview(ctx context.Context, e event) {
	cfg := p.opt.Config()
	pr := api.PullRequest{Forge: cfg.Type, Number: e.number, Title: e.title, URL: e.url, HeadRef: e.ref, Commit: e.sha}
	// While it plans, the dashboard shows the last plan marked pending.
	shown := pr
	if old, ok, err := p.opt.Store.PullRequest(ctx, cfg.Type, e.number); err == nil && ok {
		pr.CommentURL = old.CommentURL
		shown = old
		shown.Title, shown.URL, shown.HeadRef, shown.Commit = e.title, e.url, e.ref, e.sha
	}
	shown.State, shown.Description, shown.UpdatedAt = "pending", "planning "+short(e.sha), time.Now().UTC()
	log := p.log.With("request", e.number, "commit", short(e.sha))
	if err := p.opt.Store.PutPullRequest(ctx, shown); err != nil {
		log.Warn("pull-request preview: not recorded", "err", err)
	}
	log.Info("pull-request preview: planning", "ref", e.ref)

	planCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	o := p.plan(planCtx, e.ref)
	cancel()
	if ctx.Err() != nil {
		return
	}
	commit := e.sha
	if o.plan != nil && o.plan.Revision != "" {
		commit = o.plan.Revision // what was planned: a newer push has its own delivery
		pr.Plan = o.plan
	}
	pr.Planned, pr.State, pr.Description = commit, o.state(), o.description()
	pr.Errors = o.loadErrors
	if o.err != "" {
		pr.Errors = []string{o.err}
	}
	link := ""
	if base := p.publicURL(); base != "" {
		link = base + "/previews?request=" + strconv.FormatInt(e.number, 10)
	}
	if err := p.post(ctx, cfg, &pr, render(o, commit, link), link); err != nil {
		log.Warn("pull-request preview: the forge refused the plan", "err", err)
		pr.Errors = append(pr.Errors, "posting to the forge: "+err.Error())
	} else {
		log.Info("pull-request preview: posted", "state", pr.State, "description", pr.Description)
	}
	pr.UpdatedAt = time.Now().UTC()
	if err := p.opt.Store.PutPullRequest(ctx, pr); err != nil {
		log.Warn("pull-request preview: not recorded", "err", err)
	}
}

// plan runs the plan of ref and sorts its failure.
func (p *Previews) plan(ctx context.Context, ref string) outcome {
	plan, err := p.opt.Plan(ctx, ref)
	switch {
	case err == nil:
		return outcome{plan: &plan}
	case errors.Is(err, api.ErrInvalid):
		var errs []string
		for _, l := range strings.Split(err.Error(), "\n") {
			if l = strings.TrimSpace(l); l != "" && !strings.HasSuffix(l, "failed to load:") {
				errs = append(errs, l)
			}
		}
		if len(errs) == 0 {
			errs = []string{err.Error()}
		}
		return outcome{loadErrors: errs}
	}
	return outcome{err: err.Error()}
}

// post edits (or makes) the comment and sets the status on pr.Planned.
func (p *Previews) post(ctx context.Context, cfg config.Forge, pr *api.PullRequest, body, link string) error {
	c, err := NewClient(cfg, p.opt.HTTPClient)
	if err != nil {
		return err
	}
	cm, err := upsertComment(ctx, c, pr.Number, body)
	if err != nil {
		return err
	}
	pr.CommentURL = cm.URL
	if pr.CommentURL == "" && pr.URL != "" && cfg.Type == config.ForgeGitLab {
		pr.CommentURL = pr.URL + "#note_" + strconv.FormatInt(cm.ID, 10)
	}
	if err := c.SetStatus(ctx, pr.Planned, Status{State: pr.State, Description: pr.Description, TargetURL: link}); err != nil {
		return fmt.Errorf("setting the commit status: %w", err)
	}
	return nil
}

func (p *Previews) publicURL() string {
	if p.opt.PublicURL == nil {
		return ""
	}
	return strings.TrimRight(p.opt.PublicURL(), "/")
}
