package auth

import (
	"context"
	"strings"
	"testing"
	"time"
)

var testParams = Params{Memory: 1024, Time: 1, Threads: 1}

func TestPasswordHashing(t *testing.T) {
	ctx := context.Background()
	h, err := NewHasher(testParams, 2)
	if err != nil {
		t.Fatal(err)
	}
	phc, err := h.Hash(ctx, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("not a PHC string: %s", phc)
	}
	other, _ := h.Hash(ctx, "correct horse battery")
	if other == phc {
		t.Fatal("same salt twice")
	}
	cases := []struct {
		name, pw, phc string
		want          bool
		wantErr       bool
	}{
		{"right", "correct horse battery", phc, true, false},
		{"wrong", "correct horse batterY", phc, false, false},
		{"unknown account", "correct horse battery", "", false, false},
		{"not phc", "x", "$2a$10$abc", false, true},
		{"bad params", "x", "$argon2id$v=19$m=1,t=0,p=1$AAAA$AAAAAAAAAAAAAAAAAAAAAA", false, true},
	}
	for _, c := range cases {
		ok, err := h.Verify(ctx, c.pw, c.phc)
		if ok != c.want || (err != nil) != c.wantErr {
			t.Errorf("%s: ok=%v err=%v", c.name, ok, err)
		}
	}
	// Parameters come from the stored string, so old hashes keep working.
	h2, _ := NewHasher(Params{Memory: 2048, Time: 2, Threads: 1}, 1)
	if ok, err := h2.Verify(ctx, "correct horse battery", phc); !ok || err != nil {
		t.Fatalf("other params: %v %v", ok, err)
	}
}

func TestTokensAndCSRF(t *testing.T) {
	a, ha := NewToken(PrefixSession)
	b, _ := NewToken(PrefixSession)
	if a == b || !HasPrefix(a, PrefixSession) || len(a) != len(PrefixSession)+43 {
		t.Fatalf("tokens: %q %q", a, b)
	}
	if string(HashToken(a)) != string(ha) {
		t.Fatal("hash differs")
	}
	c := CSRFToken(a)
	if !CheckCSRF(a, c) || CheckCSRF(b, c) || CheckCSRF(a, "") || CheckCSRF(a, c+"x") {
		t.Fatal("CSRF check")
	}
}

// fail reserves an attempt under l for key and counts it failed.
func fail(t *testing.T, l *Limiter, key string) {
	t.Helper()
	a, _, wait := Reserve(Limit{Limiter: l, Key: key})
	if a == nil {
		t.Fatalf("%s: refused (wait %v) where a failure was expected", key, wait)
	}
	a.Fail()
}

func allowed(l *Limiter, key string) (bool, time.Duration) {
	a, _, wait := Reserve(Limit{Limiter: l, Key: key})
	if a == nil {
		return false, wait
	}
	a.Cancel()
	return true, 0
}

func TestLimiterBacksOffAndForgets(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(3, time.Second, 8*time.Second, time.Minute)
	l.SetClock(func() time.Time { return now })
	for range 2 {
		fail(t, l, "k")
	}
	if ok, _ := allowed(l, "k"); !ok {
		t.Fatal("blocked below threshold")
	}
	waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, want := range waits {
		fail(t, l, "k")
		ok, wait := allowed(l, "k")
		if ok || wait != want || l.Backoff(i+3) != want {
			t.Fatalf("failure %d: ok=%v wait=%v backoff=%v, want %v", i+3, ok, wait, l.Backoff(i+3), want)
		}
		now = now.Add(wait) // the wait is over: exactly one more try
	}
	if ok, _ := allowed(l, "other"); !ok {
		t.Fatal("another key is blocked")
	}
	now = now.Add(2 * time.Minute) // forgotten after a quiet minute
	fail(t, l, "k")
	if ok, _ := allowed(l, "k"); !ok {
		t.Fatal("old failures still count")
	}
	fail(t, l, "k")
	a, _, _ := Reserve(Limit{Limiter: l, Key: "k"})
	a.Succeed()
	a.Fail() // settles once only
	for range 2 {
		fail(t, l, "k")
	}
	if ok, _ := allowed(l, "k"); !ok {
		t.Fatal("success did not reset")
	}
}

func TestLimiterCountsAttemptsInFlight(t *testing.T) {
	now := time.Unix(1000, 0)
	client := NewLimiter(10, time.Second, time.Minute, time.Hour)
	pair := NewLimiter(5, time.Second, time.Minute, time.Hour)
	for _, l := range []*Limiter{client, pair} {
		l.SetClock(func() time.Time { return now })
	}
	// 60 attempts reserved before any is settled: only the threshold of
	// the tighter limit gets through, and refusals hold nothing.
	var held []*Attempt
	refusedBy := map[int]int{}
	for range 60 {
		a, which, _ := Reserve(Limit{Limiter: client, Key: "c"}, Limit{Limiter: pair, Key: "c|admin"})
		if a == nil {
			refusedBy[which]++
			continue
		}
		held = append(held, a)
	}
	if len(held) != 5 || refusedBy[1] != 55 {
		t.Fatalf("held %d, refused %v", len(held), refusedBy)
	}
	// The per-client budget was not eaten by the refused ones: another
	// account from the same client still gets its attempts.
	other, _, _ := Reserve(Limit{Limiter: client, Key: "c"}, Limit{Limiter: pair, Key: "c|bob"})
	if other == nil {
		t.Fatal("the per-client budget leaked")
	}
	other.Cancel()
	for _, a := range held {
		a.Fail()
	}
	if a, which, wait := Reserve(Limit{Limiter: client, Key: "c"}, Limit{Limiter: pair, Key: "c|admin"}); a != nil || which != 1 || wait != time.Second {
		t.Fatalf("after 5 failures: %v %d %v", a, which, wait)
	}
	// After the wait one probe at a time: a second concurrent one waits.
	now = now.Add(time.Second)
	probe, _, _ := Reserve(Limit{Limiter: client, Key: "c"}, Limit{Limiter: pair, Key: "c|admin"})
	if probe == nil {
		t.Fatal("no probe after the wait")
	}
	if a, _, _ := Reserve(Limit{Limiter: client, Key: "c"}, Limit{Limiter: pair, Key: "c|admin"}); a != nil {
		t.Fatal("two probes at once past the threshold")
	}
	probe.Succeed()
	if ok, _ := allowed(pair, "c|admin"); !ok {
		t.Fatal("success did not clear the pair")
	}
	// KeepOnSuccess: a success settles the attempt but keeps the failures.
	for range 10 {
		fail(t, client, "sprayer")
	}
	now = now.Add(time.Second)
	own, _, _ := Reserve(Limit{Limiter: client, Key: "sprayer", KeepOnSuccess: true})
	own.Succeed()
	fail(t, client, "sprayer")
	if ok, wait := allowed(client, "sprayer"); ok || wait != 2*time.Second {
		t.Fatalf("the own success cleared the count: %v %v", ok, wait)
	}
}

func TestHasherQueueIsBounded(t *testing.T) {
	h, err := NewHasher(testParams, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Fill the running slot and the whole queue by hand, then one more
	// caller is refused at once instead of waiting.
	release, err := h.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for range QueuePerSlot {
		h.queue <- struct{}{}
	}
	if _, err := h.Verify(context.Background(), "pw", ""); err != ErrBusy {
		t.Fatalf("full queue: %v", err)
	}
	for range QueuePerSlot {
		<-h.queue
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Verify(ctx, "pw", ""); err != context.Canceled {
		t.Fatalf("cancelled wait: %v", err)
	}
	release()
	if ok, err := h.Verify(context.Background(), "pw", ""); ok || err != nil {
		t.Fatalf("after release: %v %v", ok, err)
	}
	if len(h.queue) != 0 || len(h.sem) != 0 || h.PeakRunning() != 1 {
		t.Fatalf("tickets leaked: queue %d sem %d peak %d", len(h.queue), len(h.sem), h.PeakRunning())
	}
}

func TestUsernameAndPasswordRules(t *testing.T) {
	for _, n := range []string{"admin", "a.b_c@d-e", "A1"} {
		if err := CheckUsername(n); err != nil {
			t.Errorf("%q: %v", n, err)
		}
	}
	for _, n := range []string{"", "a b", "ä", strings.Repeat("a", 65), "x/y"} {
		if CheckUsername(n) == nil {
			t.Errorf("%q accepted", n)
		}
	}
	if CheckPassword("short") == nil || CheckPassword(strings.Repeat("x", 1025)) == nil || CheckPassword("long enough pw") != nil {
		t.Error("password rules")
	}
}
