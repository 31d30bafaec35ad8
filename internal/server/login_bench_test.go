package server

import (
	"context"
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/store"
)

// BenchmarkParallelLoginsPeakHeap floods the login with 100 parallel
// requests from 100 addresses (trustProxy, X-Forwarded-For), with the
// production argon2id costs (64 MiB each), and reports the peak heap while
// they run: the hasher's bound keeps it near passwordChecks x 64 MiB
// instead of 100 x 64 MiB. Figures in docs/benchmarks.md.
func BenchmarkParallelLoginsPeakHeap(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(b.TempDir(), "p.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	srv, err := New(ctx, Options{Store: st, Backend: newFakeBackend(), SetupOutput: io.Discard,
		PasswordParams: auth.DefaultParams, TrustProxy: true})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	runtime.GC()
	var base runtime.MemStats
	runtime.ReadMemStats(&base)
	var peak atomic.Uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak.Load() {
				peak.Store(ms.HeapInuse)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	var mu sync.Mutex
	codes := map[int]int{}
	b.ResetTimer()
	for n := range b.N {
		var wg sync.WaitGroup
		for i := range 100 {
			wg.Go(func() {
				code, _, err := postLogin(ts.URL, fmt.Sprintf("user%d-%d", n, i), "not the password",
					"X-Forwarded-For", fmt.Sprintf("10.%d.%d.1", n%250, i))
				if err != nil {
					b.Error(err)
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
	}
	b.StopTimer()
	close(stop)
	<-sampled
	b.ReportMetric(float64(peak.Load()-min(base.HeapInuse, peak.Load()))/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(srv.hasher.PeakRunning()), "peak-hashes")
	b.ReportMetric(float64(codes[401])/float64(b.N), "checked/op")
	b.ReportMetric(float64(codes[503])/float64(b.N), "busy/op")
	if len(codes) > 2 || codes[401]+codes[503] != 100*b.N {
		b.Fatalf("answers: %v", codes)
	}
}
