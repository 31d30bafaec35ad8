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
