package dispatch

import (
	"context"
	"sync"
)

// Job is one unit of background work.
type Job struct {
	// Key identifies the work for de-duplication ("VirtualMachine/app-01").
	Key   string
	Claim Claim
	Run   func(ctx context.Context) error
	// Done, if set, is called with Run's result (or the context's error when
	// the job never got a slot).
	Done func(err error)
}

// Dispatcher runs jobs in the background under a Limiter, refusing a job
// whose key is already queued or running.
type Dispatcher struct {
	limiter *Limiter
	mu      sync.Mutex
	active  map[string]bool
	wg      sync.WaitGroup
}

// New returns a dispatcher with limits l.
func New(l Limits) *Dispatcher {
	return &Dispatcher{limiter: NewLimiter(l), active: map[string]bool{}}
}

// Limiter exposes the dispatcher's limiter, so that synchronous work (a CLI
// apply) can share the same slots.
func (d *Dispatcher) Limiter() *Limiter { return d.limiter }

// Submit queues j. It returns false, doing nothing, when a job with the same
// key is queued or running. The job stops waiting for a slot when ctx ends.
func (d *Dispatcher) Submit(ctx context.Context, j Job) bool {
	d.mu.Lock()
	if d.active[j.Key] {
		d.mu.Unlock()
		return false
	}
	d.active[j.Key] = true
	d.wg.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.wg.Done()
		err := d.run(ctx, j)
		d.mu.Lock()
		delete(d.active, j.Key)
		d.mu.Unlock()
		if j.Done != nil {
			j.Done(err)
		}
	}()
	return true
}

func (d *Dispatcher) run(ctx context.Context, j Job) error {
	release, err := d.limiter.Acquire(ctx, j.Claim)
	if err != nil {
		return err
	}
	defer release()
	return j.Run(ctx)
}

// Busy reports whether a job with key is queued or running.
func (d *Dispatcher) Busy(key string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.active[key]
}

// Active lists the keys queued or running.
func (d *Dispatcher) Active() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]string, 0, len(d.active))
	for k := range d.active {
		out = append(out, k)
	}
	return out
}

// Wait blocks until every submitted job has finished.
func (d *Dispatcher) Wait() { d.wg.Wait() }
