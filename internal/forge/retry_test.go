package forge

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A rate-limited call is tried again after the wait the forge asks for,
// with its body, at most MaxRetries times; a wait beyond MaxWait is not
// waited for.
func TestRateLimitsAreWaitedOutBoundedly(t *testing.T) {
	for _, c := range []struct {
		name    string
		limited int // answers limited before a good one
		header  http.Header
		code    int
		calls   int32
		waits   []time.Duration
		final   int
	}{
		{"github secondary limit", 1, http.Header{"Retry-After": {"7"}}, 403, 2, []time.Duration{7 * time.Second}, 201},
		{"gitea 429", 2, http.Header{"Retry-After": {"2"}}, 429, 3, []time.Duration{2 * time.Second, 2 * time.Second}, 201},
		{"a 403 that is no limit", 1, http.Header{}, 403, 1, nil, 403},
		{"too many limits", 10, http.Header{"Retry-After": {"1"}}, 429, MaxRetries + 1, []time.Duration{time.Second, time.Second, time.Second}, 429},
		{"a wait too long", 1, http.Header{"Retry-After": {"3600"}}, 429, 1, nil, 429},
	} {
		t.Run(c.name, func(t *testing.T) {
			var calls atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				if string(b) != `{"body":"x"}` {
					t.Errorf("call %d had body %q", calls.Load()+1, b)
				}
				if int(calls.Add(1)) <= c.limited {
					for k, v := range c.header {
						w.Header()[k] = v
					}
					w.WriteHeader(c.code)
					return
				}
				w.WriteHeader(201)
			}))
			defer srv.Close()
			var waits []time.Duration
			rt := newRetryTransport(nil)
			rt.sleep = func(_ *http.Request, d time.Duration) error { waits = append(waits, d); return nil }
			hc := &http.Client{Transport: rt}
			resp, err := hc.Post(srv.URL, "application/json", strings.NewReader(`{"body":"x"}`))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != c.final || calls.Load() != c.calls || len(waits) != len(c.waits) {
				t.Fatalf("status %d after %d calls, waits %v", resp.StatusCode, calls.Load(), waits)
			}
			for i := range waits {
				if waits[i] != c.waits[i] {
					t.Fatalf("waits %v, want %v", waits, c.waits)
				}
			}
		})
	}
}

func TestPrimaryRateLimitWaitsForTheReset(t *testing.T) {
	now := time.Unix(1_000_000, 0)
	resp := &http.Response{StatusCode: 403, Header: http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1000030"}}}
	if d, ok := rateLimitWait(resp, now); !ok || d != 30*time.Second {
		t.Fatalf("%v %v", d, ok)
	}
	// GitLab's backoff between its own retries reads Retry-After.
	resp = &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"4"}}}
	if d := gitlabBackoff(time.Second, 30*time.Second, 0, resp); d != 4*time.Second {
		t.Fatalf("gitlab backoff %v", d)
	}
}
