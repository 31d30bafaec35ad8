package notify

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
)

// maxQueued bounds the messages of one receiver waiting behind the one it
// retries; more are dropped and counted as failed.
const maxQueued = 32

// receiver is one entry of the list: its pending notices, its delivery
// worker and its status.
type receiver struct {
	d      *Dispatcher
	cfg    config.Notification
	sender sender
	ctx    context.Context
	cancel context.CancelFunc
	queue  chan []api.Notice

	// Guarded by d.mu.
	pending  []api.Notice // within the coalescing window
	timer    *time.Timer
	inFlight int // notices of queued or retried messages
	st       api.NotificationStatus
}

func (d *Dispatcher) startReceiver(n config.Notification) *receiver {
	r := &receiver{d: d, cfg: n, queue: make(chan []api.Notice, maxQueued)}
	r.ctx, r.cancel = context.WithCancel(d.ctx)
	r.st = api.NotificationStatus{Name: n.Name, URL: config.RedactNotificationURL(n.URL), On: slices.Clone(n.On), Resources: slices.Clone(n.Resources)}
	if old, ok := d.saved[n.Name]; ok && old.URL == r.st.URL {
		// The same receiver before a restart: its deliveries go on.
		r.st.LastDelivery, r.st.LastError, r.st.LastErrorAt = old.LastDelivery, old.LastError, old.LastErrorAt
		r.st.Delivered, r.st.Failed = old.Delivered, old.Failed
	}
	var err error
	r.sender, r.st.Service, err = newSender(n.URL, d.opts.Client)
	if err != nil {
		// Shown in the status from the start: the URL names no service
		// the library knows, every message would fail.
		now := d.opts.Now().UTC()
		r.st.LastError, r.st.LastErrorAt = err.Error(), &now
		d.log.Error("notification receiver unusable", "receiver", n.Name, "err", err)
	}
	d.wg.Add(1)
	go r.run()
	return r
}

// takes tells whether the receiver wants n: its event, and for a
// resource's event one of the selectors (all when none).
func (r *receiver) takes(n api.Notice) bool {
	if !slices.Contains(r.cfg.On, string(n.Event)) {
		return false
	}
	if n.Kind == "" || len(r.cfg.Resources) == 0 {
		return true
	}
	return slices.ContainsFunc(r.cfg.Resources, func(sel string) bool { return matches(sel, n.Kind, n.Name) })
}

// add keeps n for the message of the current window, starting the window
// with the first (caller holds d.mu).
func (r *receiver) add(n api.Notice) {
	r.pending = append(r.pending, n)
	if r.timer == nil {
		r.timer = time.AfterFunc(r.d.opts.Window, r.flush)
	}
}

// flush ends the window: its notices become one message.
func (r *receiver) flush() {
	d := r.d
	d.mu.Lock()
	defer d.mu.Unlock()
	if r.timer != nil {
		r.timer.Stop() // flushed early, by Shutdown
	}
	batch := r.pending
	r.pending, r.timer = nil, nil
	if len(batch) == 0 || r.ctx.Err() != nil {
		return
	}
	select {
	case r.queue <- batch:
		r.inFlight += len(batch)
	default:
		now := d.opts.Now().UTC()
		r.st.Failed++
		r.st.LastError, r.st.LastErrorAt = fmt.Sprintf("%d notices dropped: %d messages already wait for this receiver", len(batch), maxQueued), &now
		d.log.Warn("notifications dropped: the receiver is behind", "receiver", r.cfg.Name, "notices", len(batch))
	}
}

func (r *receiver) stop() {
	r.cancel()
	if r.timer != nil {
		r.timer.Stop()
	}
}

// run delivers the queued messages in order, one at a time.
func (r *receiver) run() {
	defer r.d.wg.Done()
	for {
		select {
		case <-r.ctx.Done():
			return
		case batch := <-r.queue:
			r.deliver(batch)
			r.d.mu.Lock()
			r.inFlight -= len(batch)
			r.d.mu.Unlock()
			select {
			case r.d.delivered <- struct{}{}:
			default:
			}
		}
	}
}

// deliver sends one message, retrying with exponential backoff up to
// Options.Attempts tries.
func (r *receiver) deliver(batch []api.Notice) {
	d := r.d
	wait := d.opts.Backoff
	if r.sender == nil {
		// Its URL names no known service (shown since the start): no
		// retry can help.
		d.mu.Lock()
		r.st.Failed++
		d.mu.Unlock()
		return
	}
	for attempt := 1; ; attempt++ {
		err := r.sender.send(r.ctx, r.cfg.Name, batch)
		now := d.opts.Now().UTC()
		d.mu.Lock()
		if err == nil {
			r.st.Delivered++
			r.st.LastDelivery = &now
		} else {
			r.st.LastError, r.st.LastErrorAt = err.Error(), &now
		}
		d.mu.Unlock()
		d.saveStatus()
		if err == nil {
			d.log.Debug("notification delivered", "receiver", r.cfg.Name, "notices", len(batch), "attempt", attempt)
			return
		}
		if attempt >= d.opts.Attempts || r.ctx.Err() != nil {
			d.mu.Lock()
			r.st.Failed++
			d.mu.Unlock()
			d.saveStatus()
			d.log.Warn("notification not delivered; given up", "receiver", r.cfg.Name, "notices", len(batch), "attempts", attempt, "err", err)
			return
		}
		d.log.Info("notification delivery failed; retrying", "receiver", r.cfg.Name, "attempt", attempt, "retryIn", wait.String(), "err", err)
		t := time.NewTimer(wait)
		select {
		case <-r.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		wait = min(wait*2, d.opts.MaxBackoff)
	}
}

// status is the receiver's status now (caller holds d.mu).
func (r *receiver) status() api.NotificationStatus {
	st := r.st
	st.On, st.Resources = slices.Clone(st.On), slices.Clone(st.Resources)
	st.Pending = len(r.pending) + r.inFlight
	return st
}
