package pvesim

import (
	"fmt"
	"io"
	"net/http"
	"runtime"
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

func benchGET(b *testing.B, srv *Server, path string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	url := srv.APIURL() + path
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
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

// BenchmarkClusterResources5000 measures GET /cluster/resources with 5,000 guests.
func BenchmarkClusterResources5000(b *testing.B) {
	srv := startSim(b, Options{})
	populate(b, srv, 5000)
	benchGET(b, srv, "/cluster/resources")
}

// BenchmarkQemuConfig measures GET /nodes/{node}/qemu/{vmid}/config with 5,000 guests.
func BenchmarkQemuConfig(b *testing.B) {
	srv := startSim(b, Options{})
	populate(b, srv, 5000)
	benchGET(b, srv, "/nodes/pve2/qemu/1001/config")
}

// BenchmarkMemory5000Guests reports the heap held by a simulator with 5,000 guests.
func BenchmarkMemory5000Guests(b *testing.B) {
	for i := 0; i < b.N; i++ {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		srv := New(Options{TokenID: testTokenID, TokenSecret: testTokenSecret})
		populate(b, srv, 5000)
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "MiB-heap")
		runtime.KeepAlive(srv)
	}
}
