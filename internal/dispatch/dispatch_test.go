package dispatch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tracker records the highest concurrency seen overall, per node, per storage.
type tracker struct {
	mu                  sync.Mutex
	total, maxTotal     int
	nodes, storages     map[string]int
	maxNode, maxStorage int
}

func (t *tracker) enter(c Claim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total++
	t.maxTotal = max(t.maxTotal, t.total)
	for _, n := range c.Nodes {
		t.nodes[n]++
		t.maxNode = max(t.maxNode, t.nodes[n])
	}
	for _, s := range c.Storages {
		t.storages[s]++
		t.maxStorage = max(t.maxStorage, t.storages[s])
	}
}

func (t *tracker) leave(c Claim) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.total--
	for _, n := range c.Nodes {
		t.nodes[n]--
	}
	for _, s := range c.Storages {
		t.storages[s]--
	}
}

func TestLimitsHold(t *testing.T) {
	tests := []struct {
		name   string
		limits Limits
	}{
		{"total only", Limits{Total: 3}},
		{"per node", Limits{Total: 8, PerNode: 2}},
		{"per storage", Limits{Total: 8, PerNode: 4, PerStorage: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := New(tt.limits)
			tr := &tracker{nodes: map[string]int{}, storages: map[string]int{}}
			var ran atomic.Int32
			nodes := []string{"pve1", "pve2", "pve3"}
			for i := 0; i < 60; i++ {
				c := Claim{Nodes: []string{nodes[i%3]}, Storages: []string{"shared", nodes[i%3] + "/local"}}
				if i%5 == 0 {
					c.Storages = nil
				}
				d.Submit(context.Background(), Job{Key: string(rune('a' + i)), Claim: c, Run: func(context.Context) error {
					tr.enter(c)
					time.Sleep(time.Millisecond)
					tr.leave(c)
					ran.Add(1)
					return nil
				}})
			}
			d.Wait()
			if ran.Load() != 60 {
				t.Fatalf("ran %d", ran.Load())
			}
			if tr.maxTotal > tt.limits.Total {
				t.Errorf("total %d > %d", tr.maxTotal, tt.limits.Total)
			}
			if tt.limits.PerNode > 0 && tr.maxNode > tt.limits.PerNode {
				t.Errorf("per node %d > %d", tr.maxNode, tt.limits.PerNode)
			}
			if tt.limits.PerStorage > 0 && tr.maxStorage > tt.limits.PerStorage {
				t.Errorf("per storage %d > %d", tr.maxStorage, tt.limits.PerStorage)
			}
			if tr.maxTotal < 2 {
				t.Errorf("no parallelism at all (max %d)", tr.maxTotal)
			}
		})
	}
}

func TestSubmitDeduplicates(t *testing.T) {
	d := New(Limits{Total: 2})
	gate := make(chan struct{})
	var runs atomic.Int32
	job := Job{Key: "VirtualMachine/app-01", Run: func(context.Context) error { runs.Add(1); <-gate; return nil }}
	if !d.Submit(context.Background(), job) {
		t.Fatal("first submit refused")
	}
	if d.Submit(context.Background(), job) {
		t.Fatal("duplicate accepted while running")
	}
	if !d.Busy(job.Key) || len(d.Active()) != 1 {
		t.Fatal("not reported busy")
	}
	close(gate)
	d.Wait()
	if d.Busy(job.Key) || runs.Load() != 1 {
		t.Fatalf("busy after finish or ran %d times", runs.Load())
	}
	done := make(chan error, 1)
	job.Done = func(err error) { done <- err }
	job.Run = func(context.Context) error { return errors.New("boom") }
	if !d.Submit(context.Background(), job) {
		t.Fatal("resubmit after finish refused")
	}
	if err := <-done; err == nil || err.Error() != "boom" {
		t.Fatalf("done got %v", err)
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	l := NewLimiter(Limits{Total: 1})
	release, err := l.Acquire(context.Background(), Claim{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(ctx, Claim{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	release()
	release() // a second release is harmless
	if l.Running() != 0 {
		t.Fatalf("running %d", l.Running())
	}
	r2, err := l.Acquire(context.Background(), Claim{Nodes: []string{"pve1", "pve1"}})
	if err != nil {
		t.Fatal(err)
	}
	r2()
}

// waiting is how many Acquire calls are queued.
func (l *Limiter) waiting() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, q := range l.queues {
		n += q.Len()
	}
	return n
}

// queue starts Acquire(c) in the background, waits until it is queued, and
// returns the channel its release function arrives on.
func queue(t *testing.T, l *Limiter, c Claim) <-chan func() {
	t.Helper()
	before := l.waiting()
	got := make(chan func(), 1)
	go func() {
		release, err := l.Acquire(context.Background(), c)
		if err != nil {
			t.Error(err)
		}
		got <- release
	}()
	for l.waiting() == before {
		time.Sleep(time.Millisecond)
	}
	return got
}

// granted reports whether the waiter behind c already has its slot.
func granted(c <-chan func()) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func mustAcquire(t *testing.T, l *Limiter, c Claim) func() {
	t.Helper()
	r, err := l.Acquire(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestReleaseHandsTheSlotToTheOldestWaiter(t *testing.T) {
	l := NewLimiter(Limits{Total: 1})
	release := mustAcquire(t, l, Claim{})
	w1 := queue(t, l, Claim{Nodes: []string{"pve1"}})
	w2 := queue(t, l, Claim{Nodes: []string{"pve2"}})
	w3 := queue(t, l, Claim{Nodes: []string{"pve3"}})
	release()
	r1 := <-w1
	if l.waiting() != 2 || l.Running() != 1 {
		t.Fatalf("after one release: %d waiting, %d running; want 2 and 1", l.waiting(), l.Running())
	}
	r1()
	r2 := <-w2
	if granted(w3) {
		t.Fatal("third waiter ran beside the second with a total of 1")
	}
	r2()
	(<-w3)()
	if l.Running() != 0 || l.waiting() != 0 || len(l.queues) != 0 {
		t.Fatalf("left %d running, %d waiting, %d queues", l.Running(), l.waiting(), len(l.queues))
	}
}

func TestWaiterStillBlockedWaitsForWhatBlocksIt(t *testing.T) {
	l := NewLimiter(Limits{Total: 2, PerNode: 1})
	onPve1 := mustAcquire(t, l, Claim{Nodes: []string{"pve1"}})
	onPve2 := mustAcquire(t, l, Claim{Nodes: []string{"pve2"}})
	// Both queue behind the full total; the older one also needs pve1.
	w1 := queue(t, l, Claim{Nodes: []string{"pve1"}})
	w2 := queue(t, l, Claim{Nodes: []string{"pve3"}})
	onPve2()
	// The slot freed on pve2 goes to the pve3 waiter: pve1 is still taken.
	r2 := <-w2
	if granted(w1) {
		t.Fatal("pve1 waiter ran while pve1 was taken")
	}
	onPve1()
	r1 := <-w1
	r1()
	r2()
	if l.Running() != 0 || l.waiting() != 0 {
		t.Fatalf("left %d running, %d waiting", l.Running(), l.waiting())
	}
}

func TestCancelledWaiterLeavesTheQueue(t *testing.T) {
	l := NewLimiter(Limits{Total: 1, PerStorage: 1})
	release := mustAcquire(t, l, Claim{Storages: []string{"local-lvm"}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := l.Acquire(ctx, Claim{Storages: []string{"local-lvm"}}); done <- err }()
	for l.waiting() == 0 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v", err)
	}
	if l.waiting() != 0 {
		t.Fatalf("%d still waiting after the cancel", l.waiting())
	}
	release()
	if l.Running() != 0 {
		t.Fatalf("the cancelled waiter was given a slot: %d running", l.Running())
	}
	mustAcquire(t, l, Claim{Storages: []string{"local-lvm"}})()
}
