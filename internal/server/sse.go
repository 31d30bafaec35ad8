package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/events"
)

// sseStream writes Server-Sent Events with a write deadline per event, so a
// dead client is noticed, and no deadline in between.
type sseStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (s *Server) startSSE(w http.ResponseWriter) (*sseStream, error) {
	rc := http.NewResponseController(w)
	if err := rc.SetWriteDeadline(time.Time{}); err != nil && err != http.ErrNotSupported {
		return nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("Connection", "keep-alive")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	st := &sseStream{w: w, rc: rc}
	return st, st.raw("retry: 3000\n\n")
}

func (st *sseStream) raw(s string) error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
	if _, err := fmt.Fprint(st.w, s); err != nil {
		return err
	}
	return st.rc.Flush()
}

func (st *sseStream) event(id, typ string, data []byte) error {
	return st.raw("id: " + id + "\nevent: " + typ + "\ndata: " + string(data) + "\n\n")
}

// lastEventID is the id a reconnecting client saw last: the Last-Event-ID
// header a browser's EventSource sends, or ?lastEventId= for clients that
// cannot set headers.
func lastEventID(r *http.Request) string {
	if v := r.Header.Get("Last-Event-ID"); v != "" {
		return v
	}
	return r.URL.Query().Get("lastEventId")
}

// stillAuthorised re-checks a stream's session at each keep-alive, so a
// logout or expiry ends streams too.
func (s *Server) stillAuthorised(ctx context.Context) bool {
	p := principalFrom(ctx)
	if p == nil {
		return false
	}
	if p.sessionToken == "" {
		ok, err := s.store.APITokenExists(ctx, p.apiTokenID)
		return err == nil && ok
	}
	np, err := s.sessionPrincipal(ctx, p.sessionToken)
	return err == nil && np != nil
}

// handleEvents streams status events. A client without a usable
// Last-Event-ID first gets "snapshot" (the whole resource list); one
// resuming gets the events it missed, then live ones.
func (s *Server) handleEvents(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	sub, replay, resumed := s.hub.Subscribe(lastEventID(r))
	defer s.hub.Unsubscribe(sub)
	st, err := s.startSSE(w)
	if err != nil {
		return
	}
	s.metrics.SSEClients.WithLabelValues("events").Inc()
	defer s.metrics.SSEClients.WithLabelValues("events").Dec()
	if !resumed {
		list, err := s.backend.Resources(ctx)
		if err != nil {
			s.log.Warn("SSE snapshot failed", "err", err)
			b, _ := json.Marshal(api.Error{Error: err.Error()})
			if st.raw("event: error\ndata: "+string(b)+"\n\n") != nil {
				return
			}
		} else {
			if list.Resources == nil {
				list.Resources = []api.ResourceSummary{}
			}
			b, err := json.Marshal(list)
			if err != nil {
				s.log.Error("SSE snapshot encoding failed", "err", err)
				return
			}
			if st.event(sub.StartID, api.SSESnapshot, b) != nil {
				return
			}
		}
	}
	for _, ev := range replay {
		if st.event(ev.ID, ev.Type, ev.Data) != nil {
			return
		}
	}
	pump(ctx, s, st, sub.C, func(ev events.Event) error { return st.event(ev.ID, ev.Type, ev.Data) })
}

// pump forwards items from c until the client leaves, the server closes,
// the subscription ends, or the session is no longer valid; it sends a
// keep-alive comment every KeepAlive.
func pump[T any](ctx context.Context, s *Server, st *sseStream, c <-chan T, send func(T) error) {
	t := time.NewTicker(s.opt.KeepAlive)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		case <-t.C:
			if !s.stillAuthorised(ctx) || st.raw(": keep-alive\n\n") != nil {
				return
			}
		case v, ok := <-c:
			if !ok || send(v) != nil {
				return
			}
		}
	}
}

func (s *Server) handleLogs(w http.ResponseWriter, r *http.Request) {
	limit := 200
	if v := r.URL.Query().Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			writeError(w, http.StatusBadRequest, "limit must be a positive number")
			return
		}
		limit = n
	}
	writeJSON(w, http.StatusOK, api.LogLines{Lines: s.logs.Lines(limit)})
}

// handleLogStream streams log lines: those after Last-Event-ID still in the
// ring (all of them for a new client), then new ones.
func (s *Server) handleLogStream(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	after, _ := strconv.ParseInt(lastEventID(r), 10, 64)
	missed, c, cancel := s.logs.Subscribe(after)
	defer cancel()
	st, err := s.startSSE(w)
	if err != nil {
		return
	}
	s.metrics.SSEClients.WithLabelValues("logs").Inc()
	defer s.metrics.SSEClients.WithLabelValues("logs").Dec()
	send := func(l api.LogLine) error {
		b, err := json.Marshal(l)
		if err != nil {
			return err
		}
		return st.event(strconv.FormatInt(l.ID, 10), api.SSELog, b)
	}
	for _, l := range missed {
		if send(l) != nil {
			return
		}
	}
	pump(ctx, s, st, c, send)
}
