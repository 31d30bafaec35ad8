package server

import (
	"github.com/proxmops/proxmops/internal/api"
	"sync"
	"time"
)

// Webhook limits (docs/api.md, "Webhooks").
const (
	// DeliveryMemory is how long a delivery ID is remembered, and
	// DeliveryMemoryMax how many at most (the oldest are forgotten first):
	// a forge's redelivery or a replay within it does nothing.
	DeliveryMemory    = 24 * time.Hour
	DeliveryMemoryMax = 10_000
	// WebhookBurst deliveries from one source (forge and client address)
	// are accepted at once, then one per WebhookRefill; more are 429.
	WebhookBurst  = 20
	WebhookRefill = 3 * time.Second
	// WebhookWindow coalesces deliveries: the first starts a Git pull at
	// once, any more within the window after it make one more pull at its
	// end, however many they are.
	WebhookWindow = 5 * time.Second
	// maxWebhookSources bounds the per-source table under a flood.
	maxWebhookSources = 10_000
)

// deliveries remembers the IDs of accepted deliveries for DeliveryMemory,
// in memory: a replay after a restart costs one Git pull and one pass, and
// no more, since proxmops never reads the payload (it pulls Git itself), so
// persisting them would buy nothing worth a write per delivery.
type deliveries struct {
	mu    sync.Mutex
	seen  map[string]time.Time
	order []string // oldest first
	now   func() time.Time
}

func newDeliveries(now func() time.Time) *deliveries {
	return &deliveries{seen: map[string]time.Time{}, now: now}
}

// first records ids (one delivery's) and tells whether none was seen.
func (d *deliveries) first(ids ...string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	for len(d.order) > 0 {
		oldest := d.order[0]
		if now.Sub(d.seen[oldest]) < DeliveryMemory && len(d.order) < DeliveryMemoryMax {
			break
		}
		delete(d.seen, oldest)
		d.order = d.order[1:]
	}
	isNew := true
	for _, id := range ids {
		if _, ok := d.seen[id]; ok {
			isNew = false
			continue
		}
		d.seen[id] = now
		d.order = append(d.order, id)
	}
	return isNew
}

// buckets are token buckets per webhook source.
type buckets struct {
	mu  sync.Mutex
	m   map[string]*bucket
	now func() time.Time
}

type bucket struct {
	tokens float64
	at     time.Time
}

func newBuckets(now func() time.Time) *buckets {
	return &buckets{m: map[string]*bucket{}, now: now}
}

// take takes a token for source, or tells how long until one is free.
func (b *buckets) take(source string) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	k := b.m[source]
	if k == nil {
		if len(b.m) >= maxWebhookSources {
			b.prune(now)
		}
		k = &bucket{tokens: WebhookBurst, at: now}
		b.m[source] = k
	}
	k.tokens = min(WebhookBurst, k.tokens+float64(now.Sub(k.at))/float64(WebhookRefill))
	k.at = now
	if k.tokens < 1 {
		return false, time.Duration((1 - k.tokens) * float64(WebhookRefill))
	}
	k.tokens--
	return true, 0
}

// prune forgets sources whose bucket has refilled (they are as if new),
// then arbitrary ones if the table is still full.
func (b *buckets) prune(now time.Time) {
	for s, k := range b.m {
		if k.tokens+float64(now.Sub(k.at))/float64(WebhookRefill) >= WebhookBurst {
			delete(b.m, s)
		}
	}
	for s := range b.m {
		if len(b.m) < maxWebhookSources {
			break
		}
		delete(b.m, s)
	}
}

// coalescer turns a burst of deliveries into at most two refreshes per
// WebhookWindow: one at once, one at the end of the window for everything
// that came in it. The controller merges further: deliveries while a pass
// runs make one more pass, not one each.
type coalescer struct {
	mu      sync.Mutex
	now     func() time.Time
	after   func(time.Duration, func()) (stop func() bool)
	refresh func(by api.Actor) // the trailing refresh
	last    time.Time
	pending bool
	by      api.Actor // the latest delivery merged into the trailing refresh
	stop    func() bool
}

// admit tells whether to refresh now; otherwise the delivery is merged into
// the refresh due at the end of the window, and admit says when that is.
func (c *coalescer) admit(by api.Actor) (bool, time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.pending {
		c.by = by
		return false, c.last.Add(WebhookWindow).Sub(now)
	}
	if c.last.IsZero() || now.Sub(c.last) >= WebhookWindow {
		c.last = now
		return true, 0
	}
	c.pending, c.by = true, by
	wait := c.last.Add(WebhookWindow).Sub(now)
	c.stop = c.after(wait, func() {
		c.mu.Lock()
		c.pending, c.last = false, c.now()
		by := c.by
		c.mu.Unlock()
		c.refresh(by)
	})
	return false, wait
}

// forget undoes admit's "refresh now" when the refresh could not start,
// so the next delivery tries again at once instead of being merged.
func (c *coalescer) forget() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.pending {
		c.last = time.Time{}
	}
}

// close cancels a trailing refresh not yet started.
func (c *coalescer) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.stop()
	}
}

func realAfter(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
