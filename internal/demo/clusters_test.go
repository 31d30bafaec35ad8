package demo

import (
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
)

// TestDemoWithTwoClusters runs the demo with two simulated clusters: the
// repository has a directory per cluster, each cluster converges its own,
// and the API tells them apart.
func TestDemoWithTwoClusters(t *testing.T) {
	run := startDemo(t, Options{Dir: t.TempDir(), Clusters: 2})
	info, out, logs := run.info, &run.out, &run.logs
	if len(info.Clusters) != 2 || !strings.Contains(out.String(), "cluster lab-2") || !strings.Contains(out.String(), "clusters/lab-1/vms/app-01.yaml") {
		t.Fatalf("banner:\n%s", out.String())
	}
	hc := run.login(t)
	list := func(query string) api.ResourceList {
		var l api.ResourceList
		run.call(t, hc, "GET", "/api/v1/resources"+query, "", &l)
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
	var d api.ResourceDetail
	run.call(t, hc, "GET", "/api/v1/resources/VirtualMachine/app-01", "", &d)
	if d.Cluster != "lab-1" {
		t.Fatalf("app-01: %+v", d.ResourceSummary)
	}
}
