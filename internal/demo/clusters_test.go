package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/cookiejar"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/auth"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestDemoWithTwoClusters runs the demo with two simulated clusters: the
// repository has a directory per cluster, each cluster converges its own,
// and the API tells them apart.
func TestDemoWithTwoClusters(t *testing.T) {
	passwordParams = auth.Params{Memory: 1024, Time: 1, Threads: 1}
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan Info, 1)
	var out, logs syncBuffer
	done := make(chan error, 1)
	// The demo restores the environment when it ends: wait for it, so the
	// next test's demo keeps its secrets.
	defer func() { cancel(); <-done }()
	go func() {
		done <- Run(ctx, Options{Addr: "127.0.0.1:0", Dir: t.TempDir(), TaskSpeed: 0.01, Interval: time.Hour, Clusters: 2,
			Out: &out, Log: &logs, Started: func(i Info) { started <- i }})
	}()
	var info Info
	select {
	case info = <-started:
	case err := <-done:
		t.Fatalf("demo stopped: %v\n%s", err, logs.String())
	case <-time.After(60 * time.Second):
		t.Fatal("demo did not start")
	}
	if len(info.Clusters) != 2 || !strings.Contains(out.String(), "cluster lab-2") || !strings.Contains(out.String(), "clusters/lab-1/vms/app-01.yaml") {
		t.Fatalf("banner:\n%s", out.String())
	}
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, Timeout: 10 * time.Second}
	body, _ := json.Marshal(map[string]string{"username": info.Username, "password": info.Password})
	resp, err := hc.Post(info.URL+"/api/v1/login", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	list := func(query string) api.ResourceList {
		var l api.ResourceList
		resp, err := hc.Get(info.URL + "/api/v1/resources" + query)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&l)
		return l
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		l := list("?cluster=lab-2")
		synced := 0
		for _, r := range l.Resources {
			if r.Cluster != "lab-2" {
				t.Fatalf("?cluster=lab-2 listed %s/%s of %s", r.Kind, r.Name, r.Cluster)
			}
			if r.Status == vocab.StatusSynced {
				synced++
			}
		}
		if synced == 2 && len(l.Resources) == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab-2 did not converge: %+v\n%s", l.Resources, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		l := list("?cluster=lab-1")
		if len(l.Clusters) == 1 && l.Clusters[0].LastPass != nil && len(l.Resources) >= 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("lab-1 did not pass: %+v", l.Clusters)
		}
		time.Sleep(100 * time.Millisecond)
	}
	all := list("")
	clusters := map[string]int{}
	for _, r := range all.Resources {
		clusters[r.Cluster]++
	}
	if clusters["lab-2"] != 2 || clusters["lab-1"] < 5 || len(all.Clusters) != 2 {
		t.Fatalf("both clusters listed: %v %+v", clusters, all.Clusters)
	}
	// app-01 is lab-1's only: found without naming the cluster.
	resp, err = hc.Get(info.URL + "/api/v1/resources/VirtualMachine/app-01")
	if err != nil {
		t.Fatal(err)
	}
	var d api.ResourceDetail
	json.NewDecoder(resp.Body).Decode(&d)
	resp.Body.Close()
	if d.Cluster != "lab-1" {
		t.Fatalf("app-01: %+v", d.ResourceSummary)
	}
}
