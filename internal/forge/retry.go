package forge

import (
	"net/http"
	"strconv"
	"time"
)

// Rate limits, as the forges document them: GitHub answers a secondary
// rate limit with 403 or 429 and Retry-After (without it: wait at least a
// minute), the primary one with X-RateLimit-Remaining 0 and the reset
// time in X-RateLimit-Reset; GitLab and Gitea answer 429 with Retry-After
// (GitLab also RateLimit-Reset).
const (
	// MaxRetries bounds the retries of one call.
	MaxRetries = 3
	// MaxWait is the longest wait proxmops accepts; a forge asking for
	// longer fails the call (the next push tries again).
	MaxWait = time.Minute
)

// rateLimitWait tells whether resp is a rate limit and how long it asks
// to wait.
func rateLimitWait(resp *http.Response, now time.Time) (time.Duration, bool) {
	limited := resp.StatusCode == http.StatusTooManyRequests ||
		(resp.StatusCode == http.StatusForbidden && (resp.Header.Get("Retry-After") != "" || resp.Header.Get("X-RateLimit-Remaining") == "0"))
	if !limited {
		return 0, false
	}
	if v := resp.Header.Get("Retry-After"); v != "" {
		if s, err := strconv.Atoi(v); err == nil && s >= 0 {
			return time.Duration(s) * time.Second, true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(t.Sub(now), 0), true
		}
	}
	for _, h := range []string{"X-RateLimit-Reset", "RateLimit-Reset"} {
		if s, err := strconv.ParseInt(resp.Header.Get(h), 10, 64); err == nil && s > 0 {
			return max(time.Unix(s, 0).Sub(now), 0), true
		}
	}
	return MaxWait, true
}

// retryTransport waits out rate limits and tries again, at most
// MaxRetries times, each wait at most MaxWait.
type retryTransport struct {
	base  http.RoundTripper
	now   func() time.Time
	sleep func(*http.Request, time.Duration) error
}

func newRetryTransport(base http.RoundTripper) *retryTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &retryTransport{base: base, now: time.Now, sleep: sleepCtx}
}

func sleepCtx(r *http.Request, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-r.Context().Done():
		return r.Context().Err()
	}
}

func (t *retryTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	for try := 0; ; try++ {
		resp, err := t.base.RoundTrip(r)
		if err != nil {
			return nil, err
		}
		wait, limited := rateLimitWait(resp, t.now())
		if !limited || try == MaxRetries || wait > MaxWait || (r.Body != nil && r.GetBody == nil) {
			return resp, nil
		}
		resp.Body.Close()
		if err := t.sleep(r, wait); err != nil {
			return nil, err
		}
		if r.GetBody != nil {
			body, err := r.GetBody()
			if err != nil {
				return nil, err
			}
			r = r.Clone(r.Context())
			r.Body = body
		}
	}
}

// gitlabBackoff is the GitLab client's wait between its retries: what a
// 429 asks (Retry-After, else RateLimit-Reset), a short linear one for a
// server error.
func gitlabBackoff(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
	if resp != nil {
		if wait, limited := rateLimitWait(resp, time.Now()); limited {
			return min(wait, MaxWait)
		}
	}
	return min(time.Duration(attempt+1)*minWait, maxWait)
}
