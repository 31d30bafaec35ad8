// Package fanout carries live events, log lines and small signals between
// the replicas of proxmops sharing one PostgreSQL database, through
// LISTEN/NOTIFY: a browser connected to a follower sees the leader's
// progress and logs, and a setting saved on a follower reaches the leader.
//
// A message is sent as the NOTIFY payload when it fits PostgreSQL's 8000
// byte limit; a larger one is written to a table and only its id is sent,
// the receivers reading it back (rows older than messageTTL are deleted).
// Messages from one replica arrive in the order it sent them: one
// connection sends them all, and one listener handles them in turn.
package fanout

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgxlisten"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/events"
	"github.com/proxmops/proxmops/internal/logring"
)

const (
	channel = "proxmops_fanout"
	// maxPayload keeps a NOTIFY payload under PostgreSQL's 8000 bytes.
	maxPayload = 7900
	messageTTL = 10 * time.Minute
	// tableLock serialises creating the table among replicas starting at once.
	tableLock int64 = 0x70786d6f_00000018
	// RelayedFrom is the attribute naming the replica a relayed log line
	// came from.
	RelayedFrom = "fromReplica"
)

// Kinds of messages.
const (
	kindEvent  = "event"
	kindLog    = "log"
	kindSignal = "signal"
)

// signalResync asks the leader for its status list (Options.Snapshot).
const signalResync = "proxmops.resync"

// message is one NOTIFY payload.
type message struct {
	Origin string          `json:"o"`
	Kind   string          `json:"k"`
	Type   string          `json:"t,omitempty"`
	Data   json.RawMessage `json:"d,omitempty"`
	Big    int64           `json:"b,omitempty"` // id of the row holding the whole message
}

// Options configure New. URL and Replica are required.
type Options struct {
	URL string
	// Replica names this replica in relayed log lines; its own messages
	// are not handed back (even to another process of the same name).
	Replica string
	// Hub receives the other replicas' events; Publish feeds it too.
	Hub *events.Hub
	// Logs, when set, has its lines sent to the others and receives
	// theirs, with the RelayedFrom attribute.
	Logs *logring.Ring
	// OnSignal is called with the signals of other replicas (Signal).
	OnSignal func(name string)
	// Snapshot, when set, is this replica's current status list (an
	// api.ResourceList) and whether it is the one to give it (it leads).
	// A replica whose listener reconnects may have missed events: it asks
	// the others, and the one that answers publishes the list to every
	// replica as the SSE event "snapshot", which browsers apply whole.
	Snapshot func(ctx context.Context) (list any, ok bool)
	Logger   *slog.Logger
	// Queue bounds the messages waiting to be sent (default 4096); more
	// are dropped and counted, never blocking the publisher.
	Queue int
}

// Fanout is one replica's end; see Run.
type Fanout struct {
	opts    Options
	cfg     *pgx.ConnConfig
	log     *slog.Logger
	origin  string // this process: the replica name and a random suffix
	out     chan message
	dropped atomic.Int64
	ready   chan struct{}
	isReady atomic.Bool
	// resyncs counts the status lists asked for after a reconnection.
	resyncs atomic.Int64
}

// New checks the options.
func New(o Options) (*Fanout, error) {
	if o.Hub == nil || o.Replica == "" {
		return nil, fmt.Errorf("fanout: Hub and Replica are required")
	}
	cfg, err := pgx.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("fanout: database URL: %w", err)
	}
	cfg.RuntimeParams["application_name"] = "proxmops fan-out (" + o.Replica + ")"
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Queue <= 0 {
		o.Queue = 4096
	}
	var suffix [6]byte
	_, _ = rand.Read(suffix[:])
	return &Fanout{opts: o, cfg: cfg, log: o.Logger.With("component", "fanout"),
		origin: o.Replica + "#" + hex.EncodeToString(suffix[:]),
		out:    make(chan message, o.Queue), ready: make(chan struct{})}, nil
}

// Publish hands an event to the local hub and queues it for the others.
// It implements events.Publisher.
func (f *Fanout) Publish(eventType string, payload any) error {
	data, err := json.Marshal(payload)
	if err != nil {
		return fmt.Errorf("publish %s: %w", eventType, err)
	}
	if err := f.opts.Hub.Publish(eventType, json.RawMessage(data)); err != nil {
		return err
	}
	f.send(message{Kind: kindEvent, Type: eventType, Data: data})
	return nil
}

// Signal tells the other replicas something happened (e.g. "settings").
func (f *Fanout) Signal(name string) { f.send(message{Kind: kindSignal, Type: name}) }

// Dropped counts the messages dropped because the queue was full or the
// database did not take them.
func (f *Fanout) Dropped() int64 { return f.dropped.Load() }

// Ready is closed once the listener listens (tests wait for it).
func (f *Fanout) Ready() <-chan struct{} { return f.ready }

func (f *Fanout) send(m message) {
	m.Origin = f.origin
	select {
	case f.out <- m:
	default:
		f.dropped.Add(1)
	}
}

// Run sends, listens and relays log lines until ctx ends, reconnecting
// after failures; it returns nil then.
func (f *Fanout) Run(ctx context.Context) error {
	for {
		err := f.createTable(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil {
			break
		}
		f.log.Warn("preparing the fan-out table failed; retrying", "err", err)
		sleepCtx(ctx, 2*time.Second)
	}
	l := &pgxlisten.Listener{
		Connect: func(ctx context.Context) (*pgx.Conn, error) {
			cfg := f.cfg.Copy()
			// Its own name in pg_stat_activity: the session that must stay.
			cfg.RuntimeParams["application_name"] = "proxmops fan-out listener (" + f.opts.Replica + ")"
			return pgx.ConnectConfig(ctx, cfg)
		},
		LogError:       func(_ context.Context, err error) { f.log.Warn("listening for the other replicas failed", "err", err) },
		ReconnectDelay: 2 * time.Second,
	}
	l.Handle(channel, handler{f})
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = l.Listen(ctx)
	}()
	if f.opts.Logs != nil {
		go f.relayLogs(ctx)
	}
	f.sendLoop(ctx)
	<-done
	return nil
}

func (f *Fanout) createTable(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, f.cfg.Copy())
	if err != nil {
		return fmt.Errorf("fanout: %w", err)
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", tableLock); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS proxmops_ha_messages (
			id bigserial PRIMARY KEY, at timestamptz NOT NULL DEFAULT now(), body text NOT NULL)`)
		return err
	})
}

// sendLoop sends queued messages on one connection, in order.
func (f *Fanout) sendLoop(ctx context.Context) {
	var conn *pgx.Conn
	defer func() {
		if conn != nil {
			conn.Close(context.WithoutCancel(ctx))
		}
	}()
	var lastClean time.Time
	for {
		var m message
		select {
		case <-ctx.Done():
			return
		case m = <-f.out:
		}
		if conn == nil {
			c, err := pgx.ConnectConfig(ctx, f.cfg.Copy())
			if err != nil {
				f.dropped.Add(1)
				f.log.Warn("sending to the other replicas failed; message dropped", "err", err)
				sleepCtx(ctx, time.Second)
				continue
			}
			conn = c
		}
		err := f.notify(ctx, conn, m)
		if err != nil && ctx.Err() == nil {
			// The connection may have died while idle: once more on a
			// fresh one before the message is lost.
			conn.Close(context.WithoutCancel(ctx))
			conn = nil
			if c, cerr := pgx.ConnectConfig(ctx, f.cfg.Copy()); cerr == nil {
				conn = c
				err = f.notify(ctx, conn, m)
			}
		}
		if err != nil {
			f.dropped.Add(1)
			if ctx.Err() == nil {
				f.log.Warn("sending to the other replicas failed; message dropped", "err", err)
			}
			if conn != nil {
				conn.Close(context.WithoutCancel(ctx))
				conn = nil
			}
			continue
		}
		if time.Since(lastClean) > time.Minute {
			lastClean = time.Now()
			_, _ = conn.Exec(ctx, "DELETE FROM proxmops_ha_messages WHERE at < now() - $1::interval", messageTTL.String())
		}
	}
}

func (f *Fanout) notify(ctx context.Context, conn *pgx.Conn, m message) error {
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if len(body) > maxPayload {
		var id int64
		if err := conn.QueryRow(qctx, "INSERT INTO proxmops_ha_messages (body) VALUES ($1) RETURNING id", string(body)).Scan(&id); err != nil {
			return err
		}
		body, _ = json.Marshal(message{Origin: m.Origin, Kind: m.Kind, Big: id})
	}
	_, err = conn.Exec(qctx, "SELECT pg_notify($1, $2)", channel, string(body))
	return err
}

// handler is the listener's: HandleBacklog runs right after each LISTEN,
// which is when the first one makes the fan-out ready.
type handler struct{ f *Fanout }

func (h handler) HandleNotification(ctx context.Context, n *pgconn.Notification, conn *pgx.Conn) error {
	return h.f.handle(ctx, n, conn)
}

func (h handler) HandleBacklog(context.Context, string, *pgx.Conn) error {
	if h.f.isReady.CompareAndSwap(false, true) {
		close(h.f.ready)
		return nil
	}
	// Listening again after a lost connection: whatever was sent meanwhile
	// never reaches this replica (NOTIFY keeps nothing for a session that
	// was not listening), so its browsers may show a stale status. Ask the
	// leader for its whole list; this replica's own events were not lost.
	h.f.resyncs.Add(1)
	h.f.log.Info("listening to the other replicas again: asking the leader for its status list")
	h.f.send(message{Kind: kindSignal, Type: signalResync})
	return nil
}

// Resyncs counts the reconnections after which this replica asked the
// leader for its status list.
func (f *Fanout) Resyncs() int64 { return f.resyncs.Load() }

// handle takes one notification from another replica.
func (f *Fanout) handle(ctx context.Context, n *pgconn.Notification, conn *pgx.Conn) error {
	var m message
	if err := json.Unmarshal([]byte(n.Payload), &m); err != nil {
		return fmt.Errorf("unreadable message: %w", err)
	}
	if m.Origin == f.origin {
		return nil
	}
	if m.Big != 0 {
		var body string
		if err := conn.QueryRow(ctx, "SELECT body FROM proxmops_ha_messages WHERE id = $1", m.Big).Scan(&body); err != nil {
			return fmt.Errorf("reading message %d: %w", m.Big, err)
		}
		if err := json.Unmarshal([]byte(body), &m); err != nil {
			return fmt.Errorf("unreadable message %d: %w", m.Big, err)
		}
	}
	switch m.Kind {
	case kindEvent:
		return f.opts.Hub.Publish(m.Type, m.Data)
	case kindLog:
		if f.opts.Logs == nil {
			return nil
		}
		var l api.LogLine
		if err := json.Unmarshal(m.Data, &l); err != nil {
			return err
		}
		if l.Attrs == nil {
			l.Attrs = map[string]any{}
		}
		l.Attrs[RelayedFrom], _, _ = strings.Cut(m.Origin, "#")
		f.opts.Logs.Add(l)
	case kindSignal:
		if m.Type == signalResync {
			f.answerResync(ctx)
			return nil
		}
		if f.opts.OnSignal != nil {
			f.opts.OnSignal(m.Type)
		}
	}
	return nil
}

// answerResync publishes this replica's status list to all, if it is the
// one to (Options.Snapshot).
func (f *Fanout) answerResync(ctx context.Context) {
	if f.opts.Snapshot == nil {
		return
	}
	list, ok := f.opts.Snapshot(ctx)
	if !ok {
		return
	}
	if err := f.Publish(api.SSESnapshot, list); err != nil {
		f.log.Warn("sending the status list to a replica that reconnected failed", "err", err)
	}
}

// relayLogs sends this replica's own log lines (not those relayed from
// others) to the others.
func (f *Fanout) relayLogs(ctx context.Context) {
	var after int64
	for ctx.Err() == nil {
		missed, c, cancel := f.opts.Logs.Subscribe(after)
		if after == 0 {
			missed = nil // lines from before the start stay local
		}
		for _, l := range missed {
			after = f.sendLog(l)
		}
		func() {
			defer cancel()
			for {
				select {
				case <-ctx.Done():
					return
				case l, ok := <-c:
					if !ok {
						return // too slow: subscribe again from the last line sent
					}
					after = f.sendLog(l)
				}
			}
		}()
	}
}

func (f *Fanout) sendLog(l api.LogLine) int64 {
	if _, relayed := l.Attrs[RelayedFrom]; !relayed {
		data, err := json.Marshal(l)
		if err == nil {
			f.send(message{Kind: kindLog, Data: data})
		}
	}
	return l.ID
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
