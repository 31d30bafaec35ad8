package check

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/pvesim"
)

// simConfig starts a simulator over TLS and a directory of manifests,
// and returns the configuration that points at both.
func simConfig(t *testing.T) (*pvesim.Server, *config.Config) {
	t.Helper()
	sim := pvesim.New(pvesim.Options{Nodes: 2, TokenID: "root@pam!check", TokenSecret: "s3cret", TaskSpeed: 0.01, Seed: 3})
	if err := sim.StartTLS("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	dir := t.TempDir()
	vm := "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: app\n  node: pve1\nspec:\n  vmid: 150\n" +
		"  disks:\n    - storage: local-lvm\n      size: 4G\n  net:\n    - bridge: vmbr0\n"
	if err := os.WriteFile(filepath.Join(dir, "app.yaml"), []byte(vm), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Defaults()
	cfg.Cluster = config.Cluster{Endpoint: sim.APIURL(), TokenID: "root@pam!check", TokenSecret: "s3cret", Fingerprint: sim.Fingerprint()}
	cfg.Source.RepoURL = dir
	cfg.Source.CacheDir = t.TempDir()
	return sim, cfg
}

func lineOf(t *testing.T, res api.TestResult, name string) api.Check {
	t.Helper()
	for _, c := range res.Checks {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no line %q in %+v", name, res.Checks)
	return api.Check{}
}

// Ctrl-C in the middle of the exercise ends its steps, and its cleanup
// still removes every guest made so far (a template and its linked clone,
// a running VM, a container) and the pool.
func TestExerciseCancelledMidwayStillCleansUp(t *testing.T) {
	for _, tt := range []struct {
		method, path string
		count        int64  // cancel when the simulator has seen this many
		step         string // the interrupted step
	}{
		{"POST", "/nodes/{node}/qemu/{vmid}/snapshot", 1, "snapshot, roll back and delete the snapshot"},
		{"POST", "/nodes/{node}/qemu/{vmid}/clone", 2, "linked clone of the template"},
		{"POST", "/nodes/{node}/qemu/{vmid}/status/stop", 1, "stop the VM"},
		{"POST", "/nodes/{node}/lxc", 1, "create a container from an existing template"},
	} {
		t.Run(tt.step, func(t *testing.T) {
			sim, cfg := simConfig(t)
			if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 120 << 20}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			go func() {
				for sim.RequestCountFor(tt.method, tt.path) < tt.count {
					select {
					case <-ctx.Done():
						return
					case <-time.After(time.Millisecond):
					}
				}
				cancel()
			}()
			res := Run(ctx, Options{Config: cfg, Exercise: &ExerciseOptions{}})
			if c := lineOf(t, res, "exercise: "+tt.step); c.Level != api.CheckFail {
				t.Errorf("the interrupted step: %+v", c)
			}
			if c := lineOf(t, res, "exercise: cleanup"); c.Level != api.CheckOK || !strings.HasPrefix(c.Message, "nothing left") {
				t.Errorf("cleanup after Ctrl-C: %+v", c)
			}
			assertNothingLeft(t, sim)
		})
	}
}

// An answer that differs from the simulator's is a deviation line naming
// both; the same answer is OK.
func TestCompareReportsEachDeviation(t *testing.T) {
	steps := []exerciseStep{{name: "create"}, {name: "refuse", refusal: true}, {name: "start", optional: true}}
	target := &exerciseRun{plan: exercisePlan{node: "hv1"}, ids: map[string]int{"vm": 120}}
	sim := &exerciseRun{plan: exercisePlan{node: "pve1"}, ids: map[string]int{"vm": 100}}
	obs := func(x *exerciseRun, outcome string, rb map[string]string) *observation {
		o := &observation{outcome: x.placeholders(outcome), readBack: map[string]string{}}
		for k, v := range rb {
			o.readBack[k] = x.placeholders(v)
		}
		return o
	}
	got := []*observation{
		obs(target, "ok", map[string]string{"scsi0": "local-lvm:vm-120-disk-0,size=1G", "cores": "1"}),
		obs(target, "500 unable to create VM 120 - VM 120 already exists on node 'hv1'", nil),
		obs(target, "500 KVM virtualisation configured, but not available", nil),
	}
	want := []*observation{
		obs(sim, "ok", map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=1G", "cores": "2"}),
		obs(sim, "500 unable to create VM 100 - VM 100 already exists on node 'pve1'", nil),
		obs(sim, "ok", nil),
	}
	r := &report{}
	if n := compare(r, steps, target, got, want, make([]time.Duration, 3)); n != 1 {
		t.Errorf("%d deviations, want 1: %+v", n, r.checks)
	}
	byName := map[string]api.Check{}
	for _, c := range r.checks {
		byName[c.Name] = c
	}
	if c := byName["exercise: create: deviation"]; c.Level != api.CheckWarn || !strings.Contains(c.Message, `cores reads back "1", the simulator's "2"`) {
		t.Errorf("deviation: %+v", c)
	}
	if c := byName["exercise: refuse"]; c.Level != api.CheckOK {
		t.Errorf("the same refusal with other VMIDs and node: %+v", c)
	}
	if c := byName["exercise: start"]; c.Level != api.CheckWarn || !strings.Contains(c.Message, "could not do it") {
		t.Errorf("a node that cannot start guests: %+v", c)
	}
}

// A VMID freed by one step and handed out again to the next guest stands
// for the new guest only, and one VMID inside another is not half
// replaced.
func TestPlaceholdersFollowReusedVMIDs(t *testing.T) {
	x := &exerciseRun{plan: exercisePlan{node: "hv1", node2: "hv2"}, ids: map[string]int{"vm": 10, "clone": 101}}
	if got := x.placeholders("vm-101-disk-0 of 10 on 'hv1', then 'hv2'"); got != "vm-<clone-vmid>-disk-0 of <vm-vmid> on '<node>', then '<node2>'" {
		t.Errorf("placeholders: %s", got)
	}
	// What newID does when /cluster/nextid answers the clone's VMID again.
	for r, id := range x.ids {
		if id == 101 {
			delete(x.ids, r)
		}
	}
	x.ids["ct"] = 101
	if got := x.placeholders("local-lvm:vm-101-disk-0"); got != "local-lvm:vm-<ct-vmid>-disk-0" {
		t.Errorf("a reused VMID: %s", got)
	}
}

// exerciseLines are the report's exercise lines by name.
func exerciseLines(res api.TestResult) map[string]api.Check {
	out := map[string]api.Check{}
	for _, c := range res.Checks {
		if strings.HasPrefix(c.Name, "exercise: ") {
			out[c.Name] = c
		}
	}
	return out
}

// Against the simulator, every step of the exercise, on a local LVM-thin
// storage and on a shared NFS one (migrations, qcow2 linked clones), with
// a container from an existing template, answers as the reference
// simulator does: zero deviations, and nothing left.
func TestExerciseRunsEveryStepWithoutDeviation(t *testing.T) {
	for _, tt := range []struct {
		storage string
		skipped []string // steps this cluster cannot take, each a WARN
		summary string
	}{
		{"", []string{"exercise: migrate the VM to the second node and back"}, "none: all 23 steps answered as the simulator does (1 skipped"},
		{"nfs-shared", nil, "none: all 24 steps answered as the simulator does"},
		{"thick-lvm", []string{"exercise: snapshot, roll back and delete the snapshot", "exercise: turn the clone into a template",
			"exercise: linked clone of the template", "exercise: delete the linked clone", "exercise: migrate the VM to the second node and back"},
			"none: all 19 steps answered as the simulator does (5 skipped"},
	} {
		storage := tt.storage
		t.Run("storage="+storage, func(t *testing.T) {
			sim, cfg := simConfig(t)
			if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 120 << 20}); err != nil {
				t.Fatal(err)
			}
			// A volume group without thin provisioning: no snapshots, no
			// base volumes.
			if err := sim.SetStorage(pvesim.StorageSpec{ID: "thick-lvm", Type: "lvm", Content: []string{"images", "rootdir"}}); err != nil {
				t.Fatal(err)
			}
			res := Run(t.Context(), Options{Config: cfg, Exercise: &ExerciseOptions{Storage: storage}})
			lines := exerciseLines(res)
			for _, name := range slices.Sorted(maps.Keys(lines)) {
				want := api.CheckOK
				if contains(tt.skipped, name) {
					want = api.CheckWarn
				}
				if c := lines[name]; c.Level != want {
					t.Errorf("%s: %s %s — %s", name, c.Level, c.Message, c.Fix)
				}
			}
			if n := len(exerciseSteps()) + 3; len(lines) != n {
				t.Errorf("%d exercise lines, want %d (each step, target, deviations, cleanup)", len(lines), n)
			}
			if c := lines["exercise: deviations"]; !strings.HasPrefix(c.Message, tt.summary) {
				t.Errorf("deviations: %+v", c)
			}
			assertNothingLeft(t, sim)
		})
	}
}

// assertNothingLeft fails when the simulator still has a guest or the
// pool of the exercise.
func assertNothingLeft(t *testing.T, sim *pvesim.Server) {
	t.Helper()
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!check", TokenSecret: "s3cret", Fingerprint: sim.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	found, pool, err := exerciseGuests(context.Background(), client, nil)
	if err != nil || pool || len(found) > 0 {
		t.Errorf("left behind: %v, pool %v, %v", found, pool, err)
	}
	for _, st := range []string{"local-lvm", "nfs-shared", "thick-lvm"} {
		for _, n := range []string{"pve1", "pve2"} {
			if vols := sim.Volumes(n, st); len(vols) > 0 {
				t.Errorf("volumes left on %s %s: %v", n, st, vols)
			}
		}
	}
}
