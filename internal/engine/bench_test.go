package engine_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// inSyncCluster fills the simulator with n owned VMs exactly as the desired
// state returned describes them, and n unowned guests beside them.
func inSyncCluster(b *testing.B, e *env, n int) *engine.Desired {
	b.Helper()
	nodes := []string{"pve1", "pve2", "pve3"}
	d := &engine.Desired{}
	for i := 0; i < n; i++ {
		vmid, node := 1000+i, nodes[i%3]
		name := fmt.Sprintf("app-%04d", i)
		cfg := map[string]string{
			"name": name, "cores": "2", "memory": "2048", "tags": "app;managed-by-proxmops",
			"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=20G", vmid), "boot": "order=scsi0",
			"ide2":   fmt.Sprintf("local-lvm:vm-%d-cloudinit,media=cdrom", vmid),
			"net0":   fmt.Sprintf("virtio=BC:24:11:%02X:%02X:%02X,bridge=vmbr0", i>>16&255, i>>8&255, i&255),
			"ciuser": "debian", "ipconfig0": "ip=dhcp", "scsihw": "virtio-scsi-single",
		}
		if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: vmid, Node: node, Config: cfg, Running: true}); err != nil {
			b.Fatal(err)
		}
		fw, tag := false, 0
		d.Add(&engine.VMSpec{
			Meta: engine.Meta{Kind: engine.KindVirtualMachine, Name: name, Node: node, Tags: []string{"app"}, Sync: vocab.SyncAuto},
			VMID: vmid, QemuHW: engine.QemuHW{Cores: 2, Memory: 2048}, State: "running",
			Image:     &engine.ImageSpec{Volume: "local:import/debian.qcow2"},
			Disks:     []engine.DiskSpec{{Slot: "scsi0", Storage: "local-lvm", Size: 20 << 30}},
			NICs:      []engine.NICSpec{{Slot: "net0", Model: "virtio", Bridge: "vmbr0", Tag: &tag, Firewall: &fw}},
			CloudInit: &engine.CloudInitSpec{User: "debian", IPConfigs: map[string]string{"net0": "ip=dhcp"}},
		})
		if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 5000 + i, Node: node, Running: i%2 == 0,
			Config: map[string]string{"name": fmt.Sprintf("other-%04d", i), "cores": "1", "memory": "512", "tags": "legacy",
				"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=8G", 5000+i)}}); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// BenchmarkPlan1000InSync plans over 1,000 owned VMs in sync with 1,000
// unowned guests beside them, over HTTP against the simulator.
func BenchmarkPlan1000InSync(b *testing.B) {
	e := newEnv(b)
	d := inSyncCluster(b, e, 1000)
	eng := e.engine(engine.Options{})
	p, err := eng.Plan(context.Background(), d, "bench")
	if err != nil {
		b.Fatal(err)
	}
	if p.Summary.InSync() != 1000 || p.Summary.Changed() != 0 || p.HasChanges() {
		for _, a := range p.Actions[:3] {
			b.Logf("%s %s %s %v", a.Key(), a.Status, a.Reason, a.Changes)
		}
		b.Fatalf("cluster not in sync: %+v", p.Summary)
	}
	b.ResetTimer()
	var requests int64
	for i := 0; i < b.N; i++ {
		p, err := eng.Plan(context.Background(), d, "bench")
		if err != nil {
			b.Fatal(err)
		}
		requests = p.Stats.Requests
	}
	b.ReportMetric(float64(requests), "requests/pass")
}

// BenchmarkConverge200Clones converges 200 VMs linked-cloned from one
// template (on shared storage) onto 3 nodes, with tasks at 1/100 of their
// real duration, and compares the time with the ideal: one VM's time alone
// times the number of rounds the limits allow.
func BenchmarkConverge200Clones(b *testing.B) {
	const n = 200
	opts := engine.Options{Concurrency: 4, PerNode: 2, PerStorage: 2}
	desired := clonesOfOneTemplate
	// prepared returns an engine on a fresh cluster that already has the
	// template, so that only the clones are measured.
	prepared := func() (*env, *engine.Engine) {
		return withCloneTemplate(b, opts, nil)
	}
	converge := func(e *env, eng *engine.Engine, count int) (time.Duration, *engine.Report) {
		start := time.Now()
		p, err := eng.Plan(context.Background(), desired(count), "bench")
		if err != nil {
			b.Fatal(err)
		}
		rep, err := eng.Apply(context.Background(), p, nil)
		if err != nil {
			b.Fatal(err)
		}
		return time.Since(start), rep
	}
	// One VM alone: the unit of the ideal.
	e1, eng1 := prepared()
	single, rep := converge(e1, eng1, 1)
	if rep.Failed > 0 {
		b.Fatalf("single clone failed: %+v", rep.Results)
	}
	// Every clone runs on the template's node, so PerNode bounds them.
	parallel := min(opts.Concurrency, opts.PerNode)
	ideal := time.Duration((n+parallel-1)/parallel) * single

	b.ResetTimer()
	var total time.Duration
	var requests, failed int
	mix := map[string]int64{}
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		e, eng := prepared()
		before := e.client.Stats()
		e.sim.ResetRequests()
		b.StartTimer()
		d, rep := converge(e, eng, n)
		b.StopTimer()
		total += d
		failed += rep.Failed
		requests += int(e.client.Stats().Sub(before).Total())
		for _, c := range e.sim.Requests() {
			mix[requestClass(c.Method, c.Path)] += c.Count
		}
		// A second pass finds nothing left to do.
		p, err := eng.Plan(context.Background(), desired(n), "bench")
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range rep.Results {
			if r.Status != vocab.StatusSynced {
				b.Logf("%s: %s", r.Name, r.Error)
			}
		}
		if p.Summary.Changed() != 0 {
			b.Fatalf("not converged after one pass: %+v", p.Summary)
		}
		b.StartTimer()
	}
	avg := total / time.Duration(b.N)
	b.ReportMetric(avg.Seconds(), "s/converge")
	b.ReportMetric(ideal.Seconds(), "ideal-s")
	b.ReportMetric(single.Seconds(), "single-vm-s")
	b.ReportMetric(avg.Seconds()/ideal.Seconds(), "x-ideal")
	b.ReportMetric(float64(requests)/float64(b.N)/n, "requests/vm")
	b.ReportMetric(float64(failed)/float64(b.N), "failed")
	for class, c := range mix {
		b.ReportMetric(float64(c)/float64(b.N)/n, class+"/vm")
	}
}

// requestClass names a request for the benchmark's mix: the method and the
// route template's last segments, e.g. GET:tasks/{upid}/status.
func requestClass(method, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if len(parts) > 2 {
		parts = parts[len(parts)-2:]
	}
	return method + ":" + strings.Join(parts, "/")
}

// minimalVMs declares n VMs with nothing but a name, a node, a VMID, cores
// and memory: each is one create, its ownership tag and a re-read.
func minimalVMs(n int) *engine.Desired {
	nodes := []string{"pve1", "pve2", "pve3"}
	d := &engine.Desired{}
	for i := range n {
		d.Add(&engine.VMSpec{
			Meta: engine.Meta{Kind: engine.KindVirtualMachine, Name: fmt.Sprintf("vm-%05d", i), Node: nodes[i%3], Sync: vocab.SyncAuto},
			VMID: 10000 + i, QemuHW: engine.QemuHW{Cores: 1, Memory: 512},
		})
	}
	return d
}

// BenchmarkApply creates n minimal VMs with one Apply against the simulator
// (tasks finish at once, concurrency 16) and reports the process's CPU time
// per action, simulator included, which must stay flat as n grows: a cost
// per finished action that walks all actions would make it grow with n.
func BenchmarkApply(b *testing.B) {
	for _, n := range []int{1000, 3000, 5000} {
		b.Run(fmt.Sprintf("actions=%d", n), func(b *testing.B) {
			var cpu, wall time.Duration
			var requests int64
			for range b.N {
				b.StopTimer()
				e := newEnvWith(b, func(o *pvesim.Options) { o.TaskSpeed = 0 })
				eng := e.engine(engine.Options{Concurrency: 16})
				p, err := eng.Plan(context.Background(), minimalVMs(n), "bench")
				if err != nil {
					b.Fatal(err)
				}
				before := e.client.Stats()
				cpu0, t0 := cpuTime(), time.Now()
				b.StartTimer()
				rep, err := eng.Apply(context.Background(), p, nil)
				b.StopTimer()
				cpu += cpuTime() - cpu0
				wall += time.Since(t0)
				requests += e.client.Stats().Sub(before).Total()
				if err != nil || rep.Applied != n {
					b.Fatalf("apply: %v, %d of %d applied, %d failed", err, rep.Applied, n, rep.Failed)
				}
				e.sim.Close()
				b.StartTimer()
			}
			actions := float64(b.N * n)
			b.ReportMetric(float64(cpu.Nanoseconds())/actions, "cpu-ns/action")
			b.ReportMetric(float64(wall.Nanoseconds())/actions, "ns/action")
			b.ReportMetric(float64(requests)/actions, "requests/action")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// cpuTime is the process's user and system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// clonesOfOneTemplate is the template tpl (VMID 9000, imported from
// nfs-shared:import/base.qcow2 on pve1) and count VMs linked-cloned from it
// onto three nodes, each with cloud-init and started.
func clonesOfOneTemplate(count int) *engine.Desired {
	fw, tag := false, 0
	d := &engine.Desired{}
	d.Add(&engine.TemplateSpec{
		Meta: engine.Meta{Kind: engine.KindTemplate, Name: "tpl", Node: "pve1", Sync: vocab.SyncAuto},
		VMID: 9000, QemuHW: engine.QemuHW{Cores: 1, Memory: 1024}, Image: &engine.ImageSpec{Volume: "nfs-shared:import/base.qcow2"},
		Disks: []engine.DiskSpec{{Slot: "scsi0", Storage: "nfs-shared", Size: 4 << 30}},
		NICs:  []engine.NICSpec{{Slot: "net0", Model: "virtio", Bridge: "vmbr0", Tag: &tag, Firewall: &fw}},
	})
	nodes := []string{"pve1", "pve2", "pve3"}
	for i := 0; i < count; i++ {
		d.Add(&engine.VMSpec{
			Meta: engine.Meta{Kind: engine.KindVirtualMachine, Name: fmt.Sprintf("web-%03d", i), Node: nodes[i%3], Sync: vocab.SyncAuto},
			VMID: 2000 + i, QemuHW: engine.QemuHW{Cores: 2, Memory: 2048}, State: "running",
			FromTemplate: &engine.TemplateRef{Name: "tpl", Linked: true},
			CloudInit:    &engine.CloudInitSpec{User: "web", IPConfigs: map[string]string{"net0": "ip=dhcp"}},
		})
	}
	return d
}

// withCloneTemplate starts a cluster (its options tuned by tune, when
// set) holding clonesOfOneTemplate's template, made by an engine with
// opts, so that only the clones are measured.
func withCloneTemplate(tb testing.TB, opts engine.Options, tune func(*pvesim.Options)) (*env, *engine.Engine) {
	tb.Helper()
	e := newEnvWith(tb, tune)
	if err := e.sim.AddVolume(pvesim.VolumeSpec{VolID: "nfs-shared:import/base.qcow2", Size: 2 << 30}); err != nil {
		tb.Fatal(err)
	}
	eng := e.engine(opts)
	p, err := eng.Plan(context.Background(), clonesOfOneTemplate(0), "bench")
	if err != nil {
		tb.Fatal(err)
	}
	if rep, err := eng.Apply(context.Background(), p, nil); err != nil || rep.Failed > 0 {
		tb.Fatalf("template: %v %+v", err, rep)
	}
	return e, eng
}
