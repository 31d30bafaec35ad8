package logring

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/ring"
)

// Ring holds the latest log lines.
type Ring struct {
	mu    sync.Mutex
	lines ring.Buffer[api.LogLine]
	next  int64
	subs  map[chan api.LogLine]struct{}
}

// New keeps the last capacity lines.
func New(capacity int) *Ring {
	return &Ring{lines: ring.New[api.LogLine](capacity), next: 1, subs: map[chan api.LogLine]struct{}{}}
}

// Add appends a line, giving it the next id, and hands it to subscribers; a
// subscriber too slow to keep up is dropped (its channel closed) rather than
// slowing logging down.
func (r *Ring) Add(l api.LogLine) api.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	l.ID = r.next
	r.next++
	r.lines.Push(l)
	for c := range r.subs {
		select {
		case c <- l:
		default:
			delete(r.subs, c)
			close(c)
		}
	}
	return l
}

// Lines returns the latest limit lines, oldest first (limit <= 0: all).
func (r *Ring) Lines(limit int) []api.LogLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.tail(limit, 0)
}

func (r *Ring) tail(limit int, after int64) []api.LogLine {
	size := r.lines.Len()
	n := size
	if limit > 0 && limit < n {
		n = limit
	}
	out := make([]api.LogLine, 0, n)
	for i := size - n; i < size; i++ {
		l := r.lines.At(i)
		if l.ID > after {
			out = append(out, l)
		}
	}
	return out
}

// Subscribe returns the lines after id after still in the ring (all of them
// when after is unknown to this run) and a channel of the lines to come.
// Call cancel when done.
func (r *Ring) Subscribe(after int64) (missed []api.LogLine, c <-chan api.LogLine, cancel func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if after >= r.next {
		after = 0 // an id from an earlier run of the daemon
	}
	ch := make(chan api.LogLine, 256)
	r.subs[ch] = struct{}{}
	cancel = func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		if _, ok := r.subs[ch]; ok {
			delete(r.subs, ch)
			close(ch)
		}
	}
	return r.tail(0, after), ch, cancel
}

// Handler returns a slog handler that passes records on to next and keeps
// those at level or above in the ring.
func (r *Ring) Handler(next slog.Handler, level slog.Leveler) slog.Handler {
	if level == nil {
		level = slog.LevelInfo
	}
	return &handler{ring: r, next: next, level: level}
}

type handler struct {
	ring   *Ring
	next   slog.Handler
	level  slog.Leveler
	attrs  map[string]any
	prefix string
}

func (h *handler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level.Level() || h.next.Enabled(ctx, l)
}

func (h *handler) Handle(ctx context.Context, rec slog.Record) error {
	var err error
	if h.next.Enabled(ctx, rec.Level) {
		err = h.next.Handle(ctx, rec)
	}
	if rec.Level < h.level.Level() {
		return err
	}
	attrs := make(map[string]any, len(h.attrs)+rec.NumAttrs())
	for k, v := range h.attrs {
		attrs[k] = v
	}
	rec.Attrs(func(a slog.Attr) bool {
		addAttr(attrs, h.prefix, a)
		return true
	})
	if len(attrs) == 0 {
		attrs = nil
	}
	t := rec.Time
	if t.IsZero() {
		t = time.Now()
	}
	h.ring.Add(api.LogLine{Time: t.UTC(), Level: levelOf(rec.Level), Msg: rec.Message, Attrs: attrs})
	return err
}

func (h *handler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.next = h.next.WithAttrs(as)
	c.attrs = make(map[string]any, len(h.attrs)+len(as))
	for k, v := range h.attrs {
		c.attrs[k] = v
	}
	for _, a := range as {
		addAttr(c.attrs, h.prefix, a)
	}
	return &c
}

func (h *handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	c := *h
	c.next = h.next.WithGroup(name)
	c.prefix = h.prefix + name + "."
	return &c
}

func addAttr(m map[string]any, prefix string, a slog.Attr) {
	v := a.Value.Resolve()
	if a.Key == "" && v.Kind() != slog.KindGroup {
		return
	}
	if secretKey(a.Key) {
		m[prefix+a.Key] = redacted
		return
	}
	if v.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range v.Group() {
			addAttr(m, p, g)
		}
		return
	}
	m[prefix+a.Key] = plain(v)
}

func plain(v slog.Value) any {
	switch v.Kind() {
	case slog.KindString:
		return v.String()
	case slog.KindInt64:
		return v.Int64()
	case slog.KindUint64:
		return v.Uint64()
	case slog.KindFloat64:
		return v.Float64()
	case slog.KindBool:
		return v.Bool()
	case slog.KindDuration:
		return v.Duration().String()
	case slog.KindTime:
		return v.Time().UTC().Format(time.RFC3339Nano)
	}
	switch x := v.Any().(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	default:
		return fmt.Sprint(x)
	}
}

const redacted = "[redacted]"

// secretKey tells whether an attribute key names a secret.
func secretKey(key string) bool {
	k := strings.ToLower(key)
	switch k {
	case "password", "passwd", "token", "tokensecret", "secret", "sshkey", "webhooksecret",
		"authorization", "cookie", "setuptoken", "encryptionkey", "privatekey":
		return true
	}
	return strings.HasSuffix(k, "password") || strings.HasSuffix(k, "secret")
}

// Redact is a slog ReplaceAttr function that hides the values of attributes
// whose key names a secret, for the daemon's other handlers.
func Redact(_ []string, a slog.Attr) slog.Attr {
	if secretKey(a.Key) {
		return slog.String(a.Key, redacted)
	}
	return a
}

// levelOf is the API's word for a record's level; a level between two named
// ones (slog's "INFO+2") is shown as the named one below it, so every line
// carries one of api.LogLevels.
func levelOf(l slog.Level) api.LogLevel {
	switch {
	case l >= slog.LevelError:
		return api.LogError
	case l >= slog.LevelWarn:
		return api.LogWarn
	case l >= slog.LevelInfo:
		return api.LogInfo
	}
	return api.LogDebug
}
