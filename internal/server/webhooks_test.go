package server

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/controller"
)

// hookEnv is a server with a webhook secret, a fake clock and a trailing
// timer the test fires by hand.
type hookEnv struct {
	*env
	clock    *controller.FakeClock
	mu       sync.Mutex
	trailing []func()
}

func newHookEnv(t *testing.T, mod ...func(*Options)) *hookEnv {
	h := &hookEnv{clock: newFakeClock()}
	h.env = newEnv(t, append([]func(*Options){func(o *Options) {
		o.Config = config.Defaults()
		o.Config.Server.WebhookSecret = "hook-secret"
		o.Now = h.clock.Now
	}}, mod...)...)
	h.srv.coalesce.after = func(_ time.Duration, f func()) func() bool {
		h.mu.Lock()
		h.trailing = append(h.trailing, f)
		h.mu.Unlock()
		return func() bool { return true }
	}
	return h
}

// fireTrailing runs the trailing refreshes scheduled so far.
func (h *hookEnv) fireTrailing() int {
	h.mu.Lock()
	fs := h.trailing
	h.trailing = nil
	h.mu.Unlock()
	for _, f := range fs {
		f()
	}
	return len(fs)
}

func (h *hookEnv) refreshes() int {
	n := 0
	for _, c := range h.backend.Calls() {
		if c == "Refresh" {
			n++
		}
	}
	return n
}

// deliver posts a signed delivery over real HTTP (safe in goroutines).
func (h *hookEnv) deliver(forge, id string, hdr ...string) (int, http.Header, error) {
	body := `{"ref":"refs/heads/main"}`
	r, _ := http.NewRequest("POST", h.ts.URL+"/api/v1/webhooks/"+forge, strings.NewReader(body))
	switch forge {
	case "github":
		r.Header.Set("X-Hub-Signature-256", "sha256="+sign("hook-secret", body))
		r.Header.Set("X-GitHub-Delivery", id)
	case "gitea":
		r.Header.Set("X-Gitea-Signature", sign("hook-secret", body))
		r.Header.Set("X-Gitea-Delivery", id)
	case "gitlab":
		r.Header.Set("X-Gitlab-Token", "hook-secret")
		r.Header.Set("X-Gitlab-Event-UUID", id)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		r.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(r)
	if err != nil {
		return 0, nil, err
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header, nil
}

func TestReplayedDeliveriesPullOnce(t *testing.T) {
	for _, forge := range []string{"github", "gitea", "gitlab"} {
		t.Run(forge, func(t *testing.T) {
			h := newHookEnv(t)
			codes := map[int]int{}
			// 50 replays, spaced so that neither the rate limit nor the
			// coalescing window is what stops them: the delivery ID is.
			for range 50 {
				code, _, err := h.deliver(forge, "delivery-1")
				if err != nil {
					t.Fatal(err)
				}
				codes[code]++
				h.clock.Advance(WebhookWindow)
			}
			if codes[202] != 1 || codes[200] != 49 || h.refreshes() != 1 || h.fireTrailing() != 0 {
				t.Fatalf("50 replays: %v, %d refreshes", codes, h.refreshes())
			}
			// A different delivery still pulls.
			if code, _, _ := h.deliver(forge, "delivery-2"); code != 202 || h.refreshes() != 2 {
				t.Fatalf("a new delivery: %d, %d refreshes", code, h.refreshes())
			}
			// A forged delivery reusing a new ID is refused and does not
			// burn the ID for the genuine one.
			if code, _, _ := h.deliver(forge, "delivery-3", "X-Hub-Signature-256", "sha256=00", "X-Gitea-Signature", "00", "X-Gitlab-Token", "nope"); code != 401 {
				t.Fatalf("forged: %d", code)
			}
			h.clock.Advance(WebhookWindow)
			if code, _, _ := h.deliver(forge, "delivery-3"); code != 202 {
				t.Fatalf("genuine after forged: %d", code)
			}
			// Remembered for 24 hours, not for ever.
			h.clock.Advance(DeliveryMemory)
			if code, _, _ := h.deliver(forge, "delivery-1"); code != 202 {
				t.Fatalf("after 24 h: %d", code)
			}
		})
	}
}

func TestBurstOfDeliveriesMakesAtMostOneMorePull(t *testing.T) {
	h := newHookEnv(t, func(o *Options) { o.TrustProxy = true })
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			code, hdr, err := h.deliver("github", fmt.Sprintf("burst-%d", i), "X-Forwarded-For", "192.0.2.7")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Error(err)
				return
			}
			if code == 429 && hdr.Get("Retry-After") == "" {
				t.Error("429 without Retry-After")
			}
			codes[code]++
		})
	}
	wg.Wait()
	// The source's burst is accepted, the rest refused; the accepted ones
	// make one pull at once and one at the end of the window.
	if codes[202] != WebhookBurst || codes[429] != 50-WebhookBurst {
		t.Fatalf("50 deliveries at once: %v", codes)
	}
	if n := h.refreshes(); n != 1 {
		t.Fatalf("%d pulls started at once, want 1", n)
	}
	if n := h.fireTrailing(); n != 1 || h.refreshes() != 2 {
		t.Fatalf("%d trailing pulls, %d in all; want 1 and 2", n, h.refreshes())
	}
	// Another source has its own budget.
	if code, _, _ := h.deliver("github", "other-source", "X-Forwarded-For", "192.0.2.8"); code != 202 {
		t.Fatalf("another source: %d", code)
	}
	// The budget refills with time.
	h.clock.Advance(WebhookRefill)
	if code, _, _ := h.deliver("github", "later", "X-Forwarded-For", "192.0.2.7"); code != 202 {
		t.Fatalf("after a refill: %d", code)
	}
}

func TestAWebhookPullThatCannotStartIsNotCoalescedAway(t *testing.T) {
	h := newHookEnv(t)
	h.backend.mu.Lock()
	h.backend.refreshErr = fmt.Errorf("no repository is configured: %w", api.ErrNotReady)
	h.backend.mu.Unlock()
	if code, _, _ := h.deliver("gitea", "d1"); code != 503 {
		t.Fatalf("refresh refused: %d", code)
	}
	h.backend.mu.Lock()
	h.backend.refreshErr = nil
	h.backend.mu.Unlock()
	// The next delivery, within the window, pulls at once.
	if code, _, _ := h.deliver("gitea", "d2"); code != 202 || h.refreshes() != 2 || h.fireTrailing() != 0 {
		t.Fatalf("after the failed start: %d, %d refreshes", code, h.refreshes())
	}
}

func TestDeliveryMemoryIsBounded(t *testing.T) {
	clock := newFakeClock()
	d := newDeliveries(clock.Now)
	for i := range DeliveryMemoryMax + 500 {
		if !d.first(fmt.Sprint(i)) {
			t.Fatalf("%d seen twice", i)
		}
	}
	if len(d.seen) > DeliveryMemoryMax || len(d.order) > DeliveryMemoryMax {
		t.Fatalf("%d remembered, the bound is %d", len(d.seen), DeliveryMemoryMax)
	}
	if d.first(fmt.Sprint(DeliveryMemoryMax + 499)) {
		t.Fatal("the newest was forgotten")
	}
	if !d.first("0") {
		t.Fatal("the oldest was kept past the bound")
	}
	b := newBuckets(clock.Now)
	for i := range maxWebhookSources + 100 {
		b.take(fmt.Sprint(i))
	}
	if len(b.m) > maxWebhookSources {
		t.Fatalf("%d sources kept", len(b.m))
	}
}

// The pull a delivery asks for names the forge and the delivery id, and so
// does the trailing pull of deliveries merged in a window (the last one).
func TestAWebhookPullNamesItsForgeAndDelivery(t *testing.T) {
	for _, forge := range []string{"github", "gitea", "gitlab"} {
		t.Run(forge, func(t *testing.T) {
			h := newHookEnv(t)
			if code, _, err := h.deliver(forge, "d-1"); err != nil || code != http.StatusAccepted {
				t.Fatalf("delivery: %d %v", code, err)
			}
			if got := h.backend.lastActor(); got != (api.Actor{Kind: api.ActorWebhook, Name: forge, Delivery: "d-1"}) {
				t.Errorf("the pull was asked by %+v", got)
			}
			h.deliver(forge, "d-2")
			h.deliver(forge, "d-3")
			if n := h.fireTrailing(); n != 1 {
				t.Fatalf("%d trailing pulls, want 1", n)
			}
			if got := h.backend.lastActor(); got != (api.Actor{Kind: api.ActorWebhook, Name: forge, Delivery: "d-3"}) {
				t.Errorf("the trailing pull was asked by %+v, want the last delivery merged", got)
			}
		})
	}
}
