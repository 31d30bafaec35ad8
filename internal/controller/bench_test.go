package controller

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// benchFleet is a simulator holding n VMs created by proxmops, and the
// repository declaring them.
type benchFleet struct {
	sim   *pvesim.Server
	repo  *gittest.Repo
	files map[string]string
}

func newBenchFleet(b *testing.B, n int) *benchFleet {
	b.Helper()
	sim := simtest.Start(b, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, Seed: 1})
	repo := gittest.New(b)
	files := map[string]string{}
	for i := range n {
		m := vmManifest(fmt.Sprintf("vm-%04d", i), 1000+i, 1)
		files[fmt.Sprintf("vms/vm-%04d.yaml", i)] = strings.Replace(m, "node: pve1", fmt.Sprintf("node: pve%d", 1+i%3), 1)
	}
	repo.Commit("fleet", files)
	// A first daemon creates the fleet.
	e := newEnvB(b, sim, repo, b.TempDir(), func(o *Options) { o.PerNode, o.Config.Reconcile.Concurrency, o.QueueLimit = 16, 32, 2000 })
	e.timeout = 10 * time.Minute
	e.start()
	e.waitFor("fleet created", func(l api.ResourceList) bool { return l.Counts[vocab.StatusSynced] == n })
	e.stop()
	return &benchFleet{sim: sim, repo: repo, files: files}
}

func heapInUse() uint64 {
	goruntime.GC()
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapInuse
}

// BenchmarkIdleMemory1000 measures the heap the daemon's controller holds,
// idle, with 1,000 managed resources all in sync (the simulator in the same
// process is measured before and subtracted).
func BenchmarkIdleMemory1000(b *testing.B) {
	const n = 1000
	f := newBenchFleet(b, n)
	for b.Loop() {
		before := heapInUse()
		e := newEnvB(b, f.sim, f.repo, b.TempDir())
		e.timeout = 5 * time.Minute
		e.start()
		e.waitFor("first pass in sync", func(l api.ResourceList) bool { return l.Counts[vocab.StatusSynced] == n })
		// Two more idle passes.
		for range 2 {
			last := e.lastPass()
			e.c.Refresh(context.Background())
			e.waitFor("idle pass", func(l api.ResourceList) bool { return l.LastPass != nil && !l.LastPass.Equal(last) })
		}
		after := heapInUse()
		b.ReportMetric(float64(after-before)/(1<<20), "MiB-heap")
		b.ReportMetric(float64(after-before)/n, "B-heap/resource")
		e.stop()
	}
}

// BenchmarkWebhookToFirstAction measures the time from a GitHub webhook
// delivery (signed, over HTTP) to the start of the first action it causes,
// with 1,000 managed resources: the pull, the load, a full observation of
// the cluster and the plan are all in it.
func BenchmarkWebhookToFirstAction(b *testing.B) {
	const n = 1000
	f := newBenchFleet(b, n)
	e := newEnvB(b, f.sim, f.repo, b.TempDir(), func(o *Options) { o.Config.Server.WebhookSecret = "hook-secret" })
	e.timeout = 5 * time.Minute
	e.start()
	e.waitFor("in sync", func(l api.ResourceList) bool { return l.Counts[vocab.StatusSynced] == n })
	url := serveHTTP(b, e.serverOptions(e.c.opts.Config)) + "/api/v1/webhooks/github"

	cores := 1
	for b.Loop() {
		b.StopTimer()
		cores = 3 - cores // 1 <-> 2
		f.repo.Commit("change", map[string]string{"vms/vm-0000.yaml": vmManifest("vm-0000", 1000, cores)})
		sub, _, _ := e.hub.Subscribe("")
		body := []byte(`{"ref":"refs/heads/main"}`)
		mac := hmac.New(sha256.New, []byte("hook-secret"))
		mac.Write(body)
		req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		b.StartTimer()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK {
			b.Fatalf("webhook: %s", resp.Status)
		}
		waitActionStarted(b, sub.C, "VirtualMachine/vm-0000")
		b.StopTimer()
		e.hub.Unsubscribe(sub)
		e.waitStatus("VirtualMachine/vm-0000", vocab.StatusSynced)
		b.StartTimer()
	}
}

func waitActionStarted(b *testing.B, c <-chan eventsEvent, key string) {
	b.Helper()
	nextOn(b, c, time.After(60*time.Second), "event subscription ended", "no action started", func(ev eventsEvent) bool {
		return ev.Type == api.SSEResource && bytes.Contains(ev.Data, []byte(`"name":"`+key[len("VirtualMachine/"):]+`"`)) &&
			bytes.Contains(ev.Data, []byte(`started"`))
	})
}
