package main

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/pvesim"
)

// assertNothingLeft fails when the simulator still has a VM, a disk or
// the pool of the exercise, read through its API as a user would.
func assertNothingLeft(t *testing.T, sim *pvesim.Server) {
	t.Helper()
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!cli", TokenSecret: "cli-secret", Fingerprint: sim.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	guests, err := client.ClusterResources(t.Context(), "vm")
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range guests {
		if _, ok := sim.Guest(int(g.VMID)); ok {
			t.Errorf("VM %d (%s) left behind", g.VMID, g.Name)
		}
	}
	var pools []map[string]any
	if err := client.Get(t.Context(), "pools", nil, &pools); err != nil {
		t.Fatal(err)
	}
	if len(pools) > 0 {
		t.Errorf("pools left behind: %v", pools)
	}
	for _, n := range []string{"pve1", "pve2"} {
		for _, v := range sim.Volumes(n, "local-lvm") {
			t.Errorf("volume %s left behind on %s", v, n)
		}
	}
}

func TestCheckExerciseMatchesTheSimulatorAndLeavesNothing(t *testing.T) {
	sim, repo := cliEnv(t)
	args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
	code, rep, out := runCheck(t, args...)
	if code != 0 || !rep.OK {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	steps := 0
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "exercise: ") {
			steps++
			if c.Level != "OK" {
				t.Errorf("against the simulator: %+v", c)
			}
		}
	}
	if level, msg, _ := rep.line(t, "exercise: deviations"); level != "OK" || !strings.Contains(msg, "none: all 14 steps") {
		t.Errorf("deviations: %s %s", level, msg)
	}
	if _, msg, _ := rep.line(t, "exercise: refuse to shrink the disk"); !strings.Contains(msg, "shrinking disks is not supported") {
		t.Errorf("the provoked refusal: %s", msg)
	}
	if _, msg, _ := rep.line(t, "exercise: cleanup"); msg != "nothing left (0 throwaway VMs removed)" {
		t.Errorf("cleanup after a run that deleted its own VMs: %s", msg)
	}
	if steps < 16 {
		t.Errorf("only %d exercise lines:\n%s", steps, out)
	}
	assertNothingLeft(t, sim)
}
