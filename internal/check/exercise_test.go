package check

import (
	"context"
	"os"
	"path/filepath"
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
// still removes the VM and the pool.
func TestExerciseCancelledMidwayStillCleansUp(t *testing.T) {
	sim, cfg := simConfig(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Cancel as the snapshot is asked for: the VM exists by then.
		for sim.RequestCountFor("POST", "/nodes/{node}/qemu/{vmid}/snapshot") == 0 {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Millisecond):
			}
		}
		cancel()
	}()
	res := Run(ctx, Options{Config: cfg, Exercise: &ExerciseOptions{}})
	if c := lineOf(t, res, "exercise: snapshot, roll back and delete the snapshot"); c.Level != api.CheckFail {
		t.Errorf("the interrupted step: %+v", c)
	}
	if c := lineOf(t, res, "exercise: cleanup"); c.Level != api.CheckOK || c.Message != "nothing left (1 throwaway VMs removed)" {
		t.Errorf("cleanup after Ctrl-C: %+v", c)
	}
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!check", TokenSecret: "s3cret", Fingerprint: sim.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	found, pool, err := exerciseGuests(context.Background(), client, nil)
	if err != nil || pool || len(found) > 0 {
		t.Errorf("left behind: %v, pool %v, %v", found, pool, err)
	}
}

// An answer that differs from the simulator's is a deviation line naming
// both; the same answer is OK.
func TestCompareReportsEachDeviation(t *testing.T) {
	steps := []exerciseStep{{name: "create"}, {name: "refuse", refusal: true}, {name: "start", optional: true}}
	target := &exerciseRun{node: "hv1", vmid: 120}
	sim := &exerciseRun{node: "pve1", vmid: 100}
	got := []*observation{
		{outcome: "ok", readBack: map[string]string{"scsi0": "local-lvm:vm-120-disk-0,size=1G", "cores": "1"}},
		{outcome: "500 unable to create VM 120 - VM 120 already exists on node 'hv1'"},
		{outcome: "500 KVM virtualisation configured, but not available"},
	}
	want := []*observation{
		{outcome: "ok", readBack: map[string]string{"scsi0": "local-lvm:vm-100-disk-0,size=1G", "cores": "2"}},
		{outcome: "500 unable to create VM 100 - VM 100 already exists on node 'pve1'"},
		{outcome: "ok"},
	}
	r := &report{}
	if n := compare(r, steps, target, sim, got, want, make([]time.Duration, 3)); n != 1 {
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
