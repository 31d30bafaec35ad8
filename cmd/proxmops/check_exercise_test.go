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
	client := simClient(t, sim)
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

// simClient is a client of cliEnv's simulator, as a user's script would have.
func simClient(t *testing.T, sim *pvesim.Server) *pve.Client {
	t.Helper()
	client, err := pve.New(pve.Config{Endpoint: sim.APIURL(), TokenID: "root@pam!cli", TokenSecret: "cli-secret", Fingerprint: sim.Fingerprint()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	return client
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
	if _, msg, _ := rep.line(t, "exercise: cleanup"); msg != "nothing left (0 throwaway guests removed)" {
		t.Errorf("cleanup after a run that deleted its own VMs: %s", msg)
	}
	if steps < 16 {
		t.Errorf("only %d exercise lines:\n%s", steps, out)
	}
	assertNothingLeft(t, sim)
}

// Injected write errors, lock timeouts and failing tasks make steps fail;
// the exercise stops, and its cleanup still removes everything it made.
func TestCheckExerciseUnderFaultsLeavesNothing(t *testing.T) {
	for _, faults := range []string{
		"write.error-rate=0.3",
		"lock-timeout-rate=0.4",
		"task-fail-rate=0.3",
		"write.error-rate=0.2,lock-timeout-rate=0.2,task-fail-rate=0.2",
	} {
		t.Run(faults, func(t *testing.T) {
			sim, repo := cliEnv(t)
			sim.SetFaults(mustFaults(t, faults))
			args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
			code, rep, out := runCheck(t, args...)
			if level, msg, _ := rep.line(t, "exercise: cleanup"); level != "OK" {
				t.Errorf("cleanup under %s: %s %s\n%s", faults, level, msg, out)
			}
			failed := false
			for _, c := range rep.Checks {
				failed = failed || c.Level == "FAIL"
			}
			if failed != (code == 1) {
				t.Errorf("exit %d with FAIL lines %v", code, failed)
			}
			sim.SetFaults(pvesim.Faults{})
			assertNothingLeft(t, sim)
		})
	}
}

// A run finds what an interrupted one left, by pool, name and tag, and
// removes it first; a guest with the name but not the tag is never touched.
func TestCheckExerciseRemovesLeftoversOfAnEarlierRun(t *testing.T) {
	sim, repo := cliEnv(t)
	for _, g := range []pvesim.GuestSpec{
		{VMID: 300, Node: "pve1", Config: map[string]string{"name": "proxmops-check-vm", "tags": "proxmops-check", "scsi0": "local-lvm:vm-300-disk-0,size=1G"}},
		{VMID: 301, Node: "pve2", Running: true, Config: map[string]string{"name": "proxmops-check-clone", "tags": "proxmops-check"}},
		{VMID: 302, Node: "pve1", Config: map[string]string{"name": "proxmops-check-mine", "tags": "keep"}},
	} {
		if err := sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	// VM 300 is in the pool, as the exercise creates its VMs; 301 only
	// has the name and tag.
	client := simClient(t, sim)
	if err := client.Post(t.Context(), "pools", pve.NewParams().Set("poolid", "proxmops-check"), nil); err != nil {
		t.Fatal(err)
	}
	if err := client.Put(t.Context(), "pools", pve.NewParams().Set("poolid", "proxmops-check").Set("vms", "300"), nil); err != nil {
		t.Fatal(err)
	}
	args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
	code, rep, out := runCheck(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if level, msg, _ := rep.line(t, "exercise: leftovers of an earlier run"); level != "OK" || msg != "nothing left (2 throwaway guests removed)" {
		t.Errorf("leftovers: %s %s", level, msg)
	}
	for vmid, want := range map[int]bool{300: false, 301: false, 302: true} {
		if _, ok := sim.Guest(vmid); ok != want {
			t.Errorf("VM %d there: %v, want %v", vmid, ok, want)
		}
	}
}

// Without the privileges its steps need, the exercise refuses to start,
// naming each, and writes nothing.
func TestCheckExerciseRefusesATokenWithoutItsPrivileges(t *testing.T) {
	sim, repo := cliEnvWith(t, []string{"VM.Allocate", "VM.Audit", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk", "VM.Config.Network",
		"VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.HWType", "VM.PowerMgmt", "Datastore.AllocateSpace", "Datastore.Audit", "SDN.Use", "Sys.Audit"})
	sim.ResetRequests()
	args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
	code, rep, _ := runCheck(t, args...)
	level, msg, _ := rep.line(t, "exercise: privileges")
	for _, want := range []string{"Pool.Allocate on /pool/proxmops-check", "VM.Clone on /vms", "VM.Snapshot on /vms"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the refusal does not name %s: %s", want, msg)
		}
	}
	if level != "FAIL" || code != 1 {
		t.Errorf("%s, exit %d", level, code)
	}
	assertReadOnly(t, sim)
}
