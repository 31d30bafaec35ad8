package engine_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// maxRequestsPerClone is the budget of a VM cloned from a template and
// started, plan and apply together: the floor is about six (the clone, its
// task, one config write with the settings and the cloud-init drive, the
// start, its task and one read-back), and what a pass reads once for all
// its guests (the resources, the cluster options, the token's privileges)
// is counted too, spread over them.
const maxRequestsPerClone = 7

// One plan and apply of clones started spends at most
// maxRequestsPerClone requests per VM over real HTTP: a read made once per
// action instead of once per pass (the privileges), or a config written in
// several calls, goes over it. Tasks end before their UPID is returned, so
// each is polled once and the count does not depend on timing.
func TestApplyOfStartedClonesStaysWithinTheRequestBudget(t *testing.T) {
	const n = 10
	e, eng := withCloneTemplate(t, engine.Options{Concurrency: 4, PerNode: 2, PerStorage: 2},
		func(o *pvesim.Options) { o.TaskSpeed = 0 })
	e.sim.ResetRequests()
	p, err := eng.Plan(context.Background(), clonesOfOneTemplate(n), "bench")
	if err != nil {
		t.Fatal(err)
	}
	if p.Summary.Create != n {
		t.Fatalf("planned %+v, want %d creates", p.Summary, n)
	}
	rep, err := eng.Apply(context.Background(), p, nil)
	if err != nil || rep.Failed > 0 {
		t.Fatalf("apply: %v %+v", err, rep.Results)
	}
	var total int64
	mix := map[string]int64{}
	for _, c := range e.sim.Requests() {
		total += c.Count
		mix[requestClass(c.Method, c.Path)] += c.Count
	}
	for i := range n {
		g := e.guest(2000 + i)
		if !g.Running {
			t.Fatalf("VM %d not started", 2000+i)
		}
	}
	if total > maxRequestsPerClone*n {
		var lines []string
		for class, c := range mix {
			lines = append(lines, fmt.Sprintf("%s %d", class, c))
		}
		slices.Sort(lines)
		t.Fatalf("%d requests for %d started clones (%.1f per VM, budget %d):\n%s",
			total, n, float64(total)/n, maxRequestsPerClone, strings.Join(lines, "\n"))
	}
	again, err := eng.Plan(context.Background(), clonesOfOneTemplate(n), "bench")
	if err != nil || again.Summary.Statuses[vocab.StatusSynced] != n+1 {
		t.Fatalf("not converged after one apply: %+v %v", again.Summary, err)
	}
}
