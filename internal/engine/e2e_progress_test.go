package engine_test

import (
	"context"
	"sync"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/pvesim"
)

// The disk import of a VM made from an image is a long task whose log says
// how far it is (qemu-img convert's "transferred X of Y (P%)"): the engine
// reports those percents while it waits, in order.
func TestImportProgressIsReadFromTheTaskLog(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TaskSpeed = 0.05 })
	e.write("vms/app-01.yaml", seedVMImage)
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	var mu sync.Mutex
	var pcts []int
	var tasks []string
	rep, err := eng.Apply(context.Background(), p, engine.ProgressFuncs{Progress: func(a *engine.Action, ev engine.ProgressEvent) {
		mu.Lock()
		defer mu.Unlock()
		if a.Name == "app-01" && ev.Percent >= 0 {
			pcts = append(pcts, ev.Percent)
			tasks = append(tasks, ev.Task)
		}
	}})
	if err != nil || rep.Failed > 0 {
		t.Fatalf("apply: %v %+v", err, rep.Results)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pcts) == 0 {
		t.Fatal("no percent was reported while the import ran")
	}
	for i := range pcts {
		if pcts[i] < 0 || pcts[i] > 100 || (i > 0 && pcts[i] <= pcts[i-1] && tasks[i] == tasks[i-1]) {
			t.Fatalf("percents not rising within a task: %v (%v)", pcts, tasks)
		}
	}
}
