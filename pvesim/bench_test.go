package pvesim

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
)

// populate adds n running and stopped guests spread over the nodes.
func populate(tb testing.TB, srv *Server, n int) {
	tb.Helper()
	for i := 0; i < n; i++ {
		vmid := 1000 + i
		node := fmt.Sprintf("pve%d", i%3+1)
		err := srv.AddGuest(GuestSpec{VMID: vmid, Node: node, Running: i%2 == 0, Config: map[string]string{
			"name": fmt.Sprintf("vm-%d", vmid), "cores": "2", "memory": "2048", "tags": "managed-by-proxmops;prod",
			"scsi0":  fmt.Sprintf("local-lvm:vm-%d-disk-0,size=20G", vmid),
			"ide2":   fmt.Sprintf("local-lvm:vm-%d-cloudinit,media=cdrom", vmid),
			"net0":   "virtio=BC:24:11:00:00:01,bridge=vmbr0,tag=10",
			"boot":   "order=scsi0;ide2;net0",
			"ciuser": "admin", "ipconfig0": "ip=10.0.0.5/24,gw=10.0.0.1",
		}})
		if err != nil {
			tb.Fatal(err)
		}
	}
}

// benchGET sends GETs in parallel; before, when set, runs before each request.
func benchGET(b *testing.B, srv *Server, path string, before func()) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := srv.APIURL() + path
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if before != nil {
				before()
			}
			req, _ := http.NewRequest("GET", url, nil)
			req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
			resp, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				b.Fatalf("status %s", resp.Status)
			}
		}
	})
}

// BenchmarkClusterResources5000 measures GET /cluster/resources with 5,000
// guests and no change between requests (answered from the cached encoding).
func BenchmarkClusterResources5000(b *testing.B) {
	srv := startSim(b, Options{})
	populate(b, srv, 5000)
	benchGET(b, srv, "/cluster/resources", nil)
}

// BenchmarkClusterResources5000Changing changes one guest before every
// request, so every answer is built afresh.
func BenchmarkClusterResources5000Changing(b *testing.B) {
	srv := startSim(b, Options{})
	populate(b, srv, 5000)
	var n atomic.Int64
	benchGET(b, srv, "/cluster/resources", func() {
		i := n.Add(1)
		if err := srv.MutateGuest(1000+int(i%5000), func(conf map[string]string) { conf["cores"] = strconv.Itoa(int(i%8) + 1) }); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkQemuConfig measures GET /nodes/{node}/qemu/{vmid}/config with 5,000 guests.
func BenchmarkQemuConfig(b *testing.B) {
	srv := startSim(b, Options{})
	populate(b, srv, 5000)
	benchGET(b, srv, "/nodes/pve2/qemu/1001/config", nil)
}

// BenchmarkMemory5000Guests reports the heap held by a simulator with 5,000
// guests, and again once it has answered /cluster/resources (which keeps
// the encoded answer).
func BenchmarkMemory5000Guests(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after, cached runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		srv := New(Options{TokenID: testTokenID, TokenSecret: testTokenSecret})
		populate(b, srv, 5000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		req := httptest.NewRequest("GET", "/api2/json/cluster/resources", nil)
		req.Header.Set("Authorization", "PVEAPIToken="+testTokenID+"="+testTokenSecret)
		rec := httptest.NewRecorder()
		srv.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d", rec.Code)
		}
		rec = nil
		runtime.GC()
		runtime.ReadMemStats(&cached)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
		b.ReportMetric(float64(cached.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap-answered")
		runtime.KeepAlive(srv)
	}
}
