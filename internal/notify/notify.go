package notify

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Notifier takes transitions. Notify never blocks and never fails: what
// cannot be delivered is retried, then reported by the receiver's status.
type Notifier interface {
	Notify(api.Notice)
}

// Discard is a Notifier that drops everything.
type Discard struct{}

// Notify drops n.
func (Discard) Notify(api.Notice) {}

// PRPlanNotice is the notice the forge previews hand to Notify when they
// post or update the plan of a pull request: revision is its head commit,
// summary the plan's counts (or its first error), link the comment or the
// UI's preview. Receivers take it with `on: [pr-plan]`; resource selectors
// do not apply.
func PRPlanNotice(cluster string, number int, title, revision, summary, link string) api.Notice {
	msg := summary
	if title != "" {
		msg = title + ": " + summary
	}
	return api.Notice{Event: api.NotifyPRPlan, Cluster: cluster, PullRequest: number, Revision: revision, Message: msg, Link: link}
}

// Options tune a Dispatcher; zero values take the defaults.
type Options struct {
	// Window coalesces: the notices a receiver gets within it of the
	// first go out as one message (default 5s).
	Window time.Duration
	// Attempts bounds the tries of one message (default 5); the wait
	// before a retry starts at Backoff (default 2s) and doubles up to
	// MaxBackoff (default 1m).
	Attempts            int
	Backoff, MaxBackoff time.Duration
	// PublicURL is where people open the UI (server.publicURL); notices
	// link there. Empty: no links.
	PublicURL string
	// Client posts the JSON webhooks (default: a client with a 10s timeout).
	Client *http.Client
	Logger *slog.Logger
	// Now is the clock of the notices' times and the status (default time.Now).
	Now func() time.Time
	// State keeps the receivers' status across restarts (the store); nil
	// keeps it in memory only.
	State StateStore
}

// StateStore is where the status is kept (store.Store).
type StateStore interface {
	State(ctx context.Context, key string) ([]byte, bool, error)
	PutState(ctx context.Context, key string, value []byte) error
}

// stateKey is the status's key in the store.
const stateKey = "notify/status"

// Dispatcher delivers notices to the configured receivers.
type Dispatcher struct {
	opts   Options
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu        sync.Mutex
	receivers []*receiver                       // configuration order
	saved     map[string]api.NotificationStatus // loaded from State, by name

	saveMu sync.Mutex // orders the writes of the status

	// delivered is signalled each time a receiver finishes a message, for
	// Shutdown to see the queues drain.
	delivered chan struct{}
}

// New starts a dispatcher for the receivers of list.
func New(list []config.Notification, opts Options) *Dispatcher {
	if opts.Window <= 0 {
		opts.Window = 5 * time.Second
	}
	if opts.Attempts <= 0 {
		opts.Attempts = 5
	}
	if opts.Backoff <= 0 {
		opts.Backoff = 2 * time.Second
	}
	if opts.MaxBackoff <= 0 {
		opts.MaxBackoff = time.Minute
	}
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	d := &Dispatcher{opts: opts, log: opts.Logger.With("component", "notify"), delivered: make(chan struct{}, 1)}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	d.loadStatus()
	d.Configure(list)
	return d
}

// loadStatus reads the status a previous run kept.
func (d *Dispatcher) loadStatus() {
	if d.opts.State == nil {
		return
	}
	b, ok, err := d.opts.State.State(d.ctx, stateKey)
	if err == nil && ok {
		err = json.Unmarshal(b, &d.saved)
	}
	if err != nil {
		d.log.Warn("the notifications' last status is unreadable; starting afresh", "err", err)
	}
}

// saveStatus keeps the status in State, the newest last.
func (d *Dispatcher) saveStatus() {
	if d.opts.State == nil {
		return
	}
	d.saveMu.Lock()
	defer d.saveMu.Unlock()
	d.mu.Lock()
	all := map[string]api.NotificationStatus{}
	for _, r := range d.receivers {
		all[r.cfg.Name] = r.status()
	}
	d.mu.Unlock()
	b, err := json.Marshal(all)
	if err == nil {
		err = d.opts.State.PutState(context.WithoutCancel(d.ctx), stateKey, b)
	}
	if err != nil {
		d.log.Warn("keeping the notifications' status failed", "err", err)
	}
}

// Configure takes a new list (settings applied without a restart): a
// receiver whose entry is unchanged keeps its status and what it has
// pending; the others start afresh.
func (d *Dispatcher) Configure(list []config.Notification) {
	d.mu.Lock()
	defer d.mu.Unlock()
	old := d.receivers
	d.receivers = nil
	for _, n := range list {
		if i := slices.IndexFunc(old, func(r *receiver) bool { return sameEntry(r.cfg, n) }); i >= 0 {
			d.receivers = append(d.receivers, old[i])
			old = slices.Delete(old, i, i+1)
			continue
		}
		d.receivers = append(d.receivers, d.startReceiver(n))
	}
	for _, r := range old {
		r.stop()
	}
}

func sameEntry(a, b config.Notification) bool {
	return a.Name == b.Name && a.URL == b.URL && slices.Equal(a.On, b.On) && slices.Equal(a.Resources, b.Resources)
}

// Notify queues n for every receiver that takes it.
func (d *Dispatcher) Notify(n api.Notice) {
	if n.Time.IsZero() {
		n.Time = d.opts.Now().UTC()
	}
	if n.Link == "" {
		n.Link = d.link(n)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.receivers {
		if r.takes(n) {
			r.add(n)
		}
	}
}

// link is the UI's page of the notice's resource (its drawer on the
// overview), or "".
func (d *Dispatcher) link(n api.Notice) string {
	base := strings.TrimRight(d.opts.PublicURL, "/")
	if base == "" || n.Kind == "" {
		return ""
	}
	q := "/?r=" + url.QueryEscape(vocab.Key(n.Kind, n.Name))
	if n.Cluster != "" && n.Cluster != config.DefaultClusterName {
		q += "&cluster=" + url.QueryEscape(n.Cluster)
	}
	return base + q
}

// Status lists the receivers with their last delivery and last error.
func (d *Dispatcher) Status() []api.NotificationStatus {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]api.NotificationStatus, 0, len(d.receivers))
	for _, r := range d.receivers {
		out = append(out, r.status())
	}
	return out
}

// Shutdown ends every coalescing window at once and lets what is pending
// be delivered (retries included) until ctx ends, then stops as Close
// does: a failure seen just before the daemon stops still reaches its
// receivers.
func (d *Dispatcher) Shutdown(ctx context.Context) {
	defer d.Close()
	d.mu.Lock()
	receivers := slices.Clone(d.receivers)
	d.mu.Unlock()
	for _, r := range receivers {
		r.flush()
	}
	for !d.drained() {
		select {
		case <-ctx.Done():
			d.mu.Lock()
			for _, r := range d.receivers {
				if n := len(r.pending) + r.inFlight; n > 0 {
					d.log.Warn("notifications dropped at shutdown", "receiver", r.cfg.Name, "notices", n)
				}
			}
			d.mu.Unlock()
			return
		case <-d.delivered:
		}
	}
}

// drained tells whether no receiver has a notice waiting or in delivery.
func (d *Dispatcher) drained() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.receivers {
		if len(r.pending) > 0 || r.inFlight > 0 {
			return false
		}
	}
	return true
}

// Close stops the deliveries; what is pending is dropped (Shutdown
// delivers it first).
func (d *Dispatcher) Close() {
	d.cancel()
	d.mu.Lock()
	for _, r := range d.receivers {
		r.stop()
	}
	d.mu.Unlock()
	d.wg.Wait()
}

// matches tells whether a Kind/name glob selects the resource.
func matches(sel, kind, name string) bool {
	sk, sn, _ := strings.Cut(sel, "/")
	okKind, _ := path.Match(sk, kind)
	okName, _ := path.Match(sn, name)
	return okKind && okName
}
