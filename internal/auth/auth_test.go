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

func TestLimiterBacksOffAndForgets(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(3, time.Second, 8*time.Second, time.Minute)
	l.now = func() time.Time { return now }
	for range 2 {
		l.Fail("k")
	}
	if ok, _ := l.Allow("k"); !ok {
		t.Fatal("blocked below threshold")
	}
	waits := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second}
	for i, want := range waits {
		l.Fail("k")
		ok, wait := l.Allow("k")
		if ok || wait != want {
			t.Fatalf("failure %d: ok=%v wait=%v, want %v", i+3, ok, wait, want)
		}
	}
	if ok, _ := l.Allow("other"); !ok {
		t.Fatal("another key is blocked")
	}
	now = now.Add(9 * time.Second) // never longer than the ceiling
	if ok, _ := l.Allow("k"); !ok {
		t.Fatal("still blocked after the ceiling")
	}
	now = now.Add(2 * time.Minute) // forgotten after a quiet minute
	l.Fail("k")
	if ok, _ := l.Allow("k"); !ok {
		t.Fatal("old failures still count")
	}
	l.Fail("k")
	l.Fail("k")
	l.Succeed("k")
	if ok, _ := l.Allow("k"); !ok {
		t.Fatal("success did not reset")
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
