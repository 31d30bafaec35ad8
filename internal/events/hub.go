package events

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/ring"
)

// Event is one published event. ID is "<epoch>-<sequence>".
type Event struct {
	ID   string
	Type string
	Data json.RawMessage
}

// Publisher is what the controller needs of a Hub.
type Publisher interface {
	Publish(eventType string, payload any) error
}

// Hub fans events out to subscribers and remembers the latest ones.
type Hub struct {
	mu     sync.Mutex
	epoch  string
	seq    uint64
	buf    ring.Buffer[Event] // the latest events
	subs   map[*Subscription]struct{}
	subBuf int
}

// Subscription receives events on C until it is closed, which happens on
// Unsubscribe or when the subscriber fell too far behind (Lagged true): the
// client then reconnects with the last id it got and is replayed the rest.
type Subscription struct {
	// StartID is the id of the latest event when the subscription began: the
	// id to give a snapshot taken right after subscribing.
	StartID string
	C       <-chan Event
	c       chan Event
	lagged  bool
}

// Lagged tells whether the hub dropped this subscriber for being too slow.
// Read it only after C is closed.
func (s *Subscription) Lagged() bool { return s.lagged }

// NewHub keeps the last capacity events for replay.
func NewHub(capacity int) *Hub {
	return &Hub{epoch: strconv.FormatInt(time.Now().UnixNano(), 36), buf: ring.New[Event](capacity),
		subs: map[*Subscription]struct{}{}, subBuf: 256}
}

// Publish sends payload, marshalled to JSON, as an event of eventType.
func (h *Hub) Publish(eventType string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("publish %s: %w", eventType, err)
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.seq++
	ev := Event{ID: h.id(h.seq), Type: eventType, Data: data}
	h.buf.Push(ev)
	for s := range h.subs {
		select {
		case s.c <- ev:
		default:
			s.lagged = true
			delete(h.subs, s)
			close(s.c)
		}
	}
	return nil
}

func (h *Hub) id(seq uint64) string { return h.epoch + "-" + strconv.FormatUint(seq, 10) }

// LastID is the id of the latest event ("<epoch>-0" before any).
func (h *Hub) LastID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.id(h.seq)
}

// Subscribe starts a subscription. With the id of the last event a client
// saw, replay holds what it missed and resumed is true; when lastID is empty,
// from another run of the daemon, or older than the buffer, resumed is false
// and the client needs a snapshot of the whole state.
func (h *Hub) Subscribe(lastID string) (sub *Subscription, replay []Event, resumed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := make(chan Event, h.subBuf)
	sub = &Subscription{StartID: h.id(h.seq), C: c, c: c}
	h.subs[sub] = struct{}{}
	seq, ok := h.parse(lastID)
	if !ok {
		return sub, nil, false
	}
	oldest := h.seq + 1 - uint64(h.buf.Len()) // sequence of the oldest buffered event
	if seq+1 < oldest {
		return sub, nil, false
	}
	for i := 0; i < h.buf.Len(); i++ {
		ev := h.buf.At(i)
		if evSeq, _ := h.parse(ev.ID); evSeq > seq {
			replay = append(replay, ev)
		}
	}
	return sub, replay, true
}

func (h *Hub) parse(id string) (uint64, bool) {
	epoch, seqStr, found := strings.Cut(id, "-")
	if !found || epoch != h.epoch {
		return 0, false
	}
	seq, err := strconv.ParseUint(seqStr, 10, 64)
	if err != nil || seq > h.seq {
		return 0, false
	}
	return seq, true
}

// Unsubscribe ends a subscription.
func (h *Hub) Unsubscribe(sub *Subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[sub]; ok {
		delete(h.subs, sub)
		close(sub.c)
	}
}

// Subscribers is the number of live subscriptions.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}
