package auth

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id cost parameters.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
}

// DefaultParams follow the OWASP guidance for argon2id with room to spare:
// 64 MiB, 3 passes, 2 lanes.
var DefaultParams = Params{Memory: 64 * 1024, Time: 3, Threads: 2}

const (
	saltLen = 16
	keyLen  = 32
)

// Hasher hashes and verifies passwords. It bounds how many hashes run at
// once, since each takes Params.Memory, and how many wait for a turn, so a
// burst of logins cannot exhaust memory (peak: concurrent x Params.Memory)
// nor pile up goroutines: past the queue, Hash and Verify fail at once with
// ErrBusy. It verifies unknown accounts against a dummy hash so a login
// takes as long whether or not the account exists.
type Hasher struct {
	params  Params
	sem     chan struct{}
	queue   chan struct{} // tickets: running plus waiting
	dummy   string
	running atomic.Int32
	peak    atomic.Int32
}

// ErrBusy means too many password checks are running or waiting; the
// caller should answer "try again shortly".
var ErrBusy = errors.New("too many password checks at once")

// QueuePerSlot is how many callers may wait per running hash before the
// Hasher answers ErrBusy.
const QueuePerSlot = 8

// NewHasher returns a Hasher with params, running at most concurrent hashes
// at once (at least 1) and letting QueuePerSlot times as many wait.
func NewHasher(params Params, concurrent int) (*Hasher, error) {
	concurrent = max(concurrent, 1)
	h := &Hasher{params: params, sem: make(chan struct{}, concurrent),
		queue: make(chan struct{}, concurrent*(1+QueuePerSlot))}
	d, err := h.Hash(context.Background(), "proxmops dummy password")
	if err != nil {
		return nil, err
	}
	h.dummy = d
	return h, nil
}

// Hash returns the PHC string of password with a fresh salt.
func (h *Hasher) Hash(ctx context.Context, password string) (string, error) {
	salt := make([]byte, saltLen)
	if _, err := rand.Read(salt); err != nil {
		return "", err
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return "", err
	}
	key := argon2.IDKey([]byte(password), salt, h.params.Time, h.params.Memory, h.params.Threads, keyLen)
	release()
	b64 := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version,
		h.params.Memory, h.params.Time, h.params.Threads, b64.EncodeToString(salt), b64.EncodeToString(key)), nil
}

// Verify tells whether password matches the PHC string. An empty phc (no
// such account) is checked against the dummy hash and is never a match.
func (h *Hasher) Verify(ctx context.Context, password, phc string) (bool, error) {
	known := phc != ""
	if !known {
		phc = h.dummy
	}
	p, salt, want, err := parsePHC(phc)
	if err != nil {
		return false, err
	}
	release, err := h.acquire(ctx)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	release()
	return known && subtle.ConstantTimeCompare(got, want) == 1, nil
}

// acquire takes a ticket in the queue (or fails with ErrBusy), then waits
// for a running slot.
func (h *Hasher) acquire(ctx context.Context) (func(), error) {
	select {
	case h.queue <- struct{}{}:
	default:
		return nil, ErrBusy
	}
	select {
	case h.sem <- struct{}{}:
	case <-ctx.Done():
		<-h.queue
		return nil, ctx.Err()
	}
	n := h.running.Add(1)
	for p := h.peak.Load(); n > p && !h.peak.CompareAndSwap(p, n); p = h.peak.Load() {
	}
	return func() {
		h.running.Add(-1)
		<-h.sem
		<-h.queue
	}, nil
}

// PeakRunning is the most hashes that ever ran at once (for tests and
// benchmarks).
func (h *Hasher) PeakRunning() int { return int(h.peak.Load()) }

var errPHC = errors.New("password hash is not an argon2id PHC string")

func parsePHC(s string) (Params, []byte, []byte, error) {
	parts := strings.Split(s, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return Params{}, nil, nil, errPHC
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return Params{}, nil, nil, errPHC
	}
	var p Params
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil || p.Time == 0 || p.Threads == 0 || p.Memory > 4<<20 {
		return Params{}, nil, nil, errPHC
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return Params{}, nil, nil, errPHC
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) < 16 {
		return Params{}, nil, nil, errPHC
	}
	return p, salt, key, nil
}

// CheckPassword enforces the password rules: 10 to 1024 bytes.
func CheckPassword(pw string) error {
	switch {
	case len(pw) < 10:
		return errors.New("the password must have at least 10 characters")
	case len(pw) > 1024:
		return errors.New("the password is longer than 1024 bytes")
	}
	return nil
}

// CheckUsername enforces the username rules: 1 to 64 of letters, digits,
// and . _ @ -.
func CheckUsername(name string) error {
	if name == "" || len(name) > 64 {
		return errors.New("the username must have 1 to 64 characters")
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._@-", r)
		if !ok {
			return fmt.Errorf("the username may only contain letters, digits and . _ @ - (not %q)", r)
		}
	}
	return nil
}
