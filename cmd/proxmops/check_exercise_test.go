package main

import (
	"slices"
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
		for _, st := range []string{"local-lvm", "nfs-shared"} {
			for _, v := range sim.Volumes(n, st) {
				t.Errorf("volume %s left behind on %s", v, n)
			}
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

// ctTemplate is the container template exerciseEnv puts on pve1.
const ctTemplate = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"

// exerciseEnv is cliEnv with a container template on pve1, as a cluster
// that has run pveam download has.
func exerciseEnv(t *testing.T) (*pvesim.Server, string) {
	t.Helper()
	sim, repo := cliEnv(t)
	exerciseTemplate(t, sim)
	return sim, repo
}

// exerciseTemplate puts the container template on pve1.
func exerciseTemplate(t *testing.T, sim *pvesim.Server) {
	t.Helper()
	if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: ctTemplate, Size: 120 << 20}); err != nil {
		t.Fatal(err)
	}
}

var (
	migrateStep   = []string{"exercise: migrate the VM to the second node and back"}
	containerStep = []string{"exercise: create a container from an existing template", "exercise: update the container's memory and description",
		"exercise: grow the container's root disk", "exercise: delete the container"}
)

// Every step of --exercise answers as the simulator does: zero deviations;
// the steps a cluster cannot take (no shared storage to migrate on, no
// container template) are WARN lines that say why and what would let
// them run; nothing is left behind.
func TestCheckExerciseMatchesTheSimulatorAndLeavesNothing(t *testing.T) {
	tests := []struct {
		name     string
		template bool
		storage  string
		skipped  []string
		summary  string
	}{
		{"local LVM-thin storage and a container template", true, "", migrateStep, "none: all 23 steps answered as the simulator does (1 skipped"},
		{"shared NFS storage: migration and qcow2 linked clones", true, "nfs-shared", nil, "none: all 24 steps answered as the simulator does"},
		{"no container template", false, "", append(append([]string{}, migrateStep...), containerStep...), "none: all 19 steps answered as the simulator does (5 skipped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sim, repo := cliEnv(t)
			if tt.template {
				sim, repo = exerciseEnv(t)
			}
			args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
			if tt.storage != "" {
				args = append(args, "--storage", tt.storage)
			}
			code, rep, out := runCheck(t, args...)
			if code != 0 || !rep.OK {
				t.Fatalf("exit %d:\n%s", code, out)
			}
			steps := 0
			for _, c := range rep.Checks {
				if !strings.HasPrefix(c.Name, "exercise: ") {
					continue
				}
				steps++
				want := "OK"
				if slices.Contains(tt.skipped, c.Name) {
					want = "WARN"
					if !strings.HasPrefix(c.Message, "skipped: ") || c.Fix == "" {
						t.Errorf("a skipped step says why and what to do: %+v", c)
					}
				}
				if c.Level != want {
					t.Errorf("against the simulator: %+v", c)
				}
			}
			if level, msg, _ := rep.line(t, "exercise: deviations"); level != "OK" || !strings.HasPrefix(msg, tt.summary) {
				t.Errorf("deviations: %s %s", level, msg)
			}
			if _, msg, _ := rep.line(t, "exercise: refuse to shrink the disk"); !strings.Contains(msg, "shrinking disks is not supported") {
				t.Errorf("the provoked refusal: %s", msg)
			}
			if _, msg, _ := rep.line(t, "exercise: cleanup"); msg != "nothing left (0 throwaway guests removed)" {
				t.Errorf("cleanup after a run that deleted its own guests: %s", msg)
			}
			if steps != 27 {
				t.Errorf("%d exercise lines, want 27 (24 steps, target, deviations, cleanup):\n%s", steps, out)
			}
			assertNothingLeft(t, sim)
		})
	}
}

// Injected write errors, lock timeouts and failing tasks make steps fail;
// the exercise stops, and its cleanup still removes everything it made.
func TestCheckExerciseUnderFaultsLeavesNothing(t *testing.T) {
	for _, tt := range []struct{ faults, storage string }{
		{"write.error-rate=0.3", ""},
		{"lock-timeout-rate=0.4", ""},
		{"task-fail-rate=0.3", ""},
		{"write.error-rate=0.2,lock-timeout-rate=0.2,task-fail-rate=0.2", ""},
		// Rarer faults let the run get further: clones, a migration.
		{"lock-timeout-rate=0.08", "nfs-shared"},
		{"write.error-rate=0.05,task-fail-rate=0.05", "nfs-shared"},
	} {
		faults := tt.faults
		t.Run(faults+" "+tt.storage, func(t *testing.T) {
			sim, repo := exerciseEnv(t)
			sim.SetFaults(mustFaults(t, faults))
			args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
			if tt.storage != "" {
				args = append(args, "--storage", tt.storage)
			}
			code, rep, out := runCheck(t, args...)
			if level, msg, _ := rep.line(t, "exercise: cleanup"); level != "OK" {
				t.Errorf("cleanup under %s: %s %s\n%s", faults, level, msg, out)
			}
			failed := false
			for _, c := range rep.Checks {
				if c.Level == "FAIL" {
					failed = true
					t.Logf("%s: %s", c.Name, c.Message)
				}
			}
			if failed != (code == 1) {
				t.Errorf("exit %d with FAIL lines %v", code, failed)
			}
			sim.SetFaults(pvesim.Faults{})
			assertNothingLeft(t, sim)
		})
	}
}

// A task that fails late in the exercise, after clones, a migration or a
// container's create began, stops it with a FAIL naming the step, and the
// cleanup still removes everything.
func TestCheckExerciseFailingLateLeavesNothing(t *testing.T) {
	for _, tt := range []struct{ task, storage, step string }{
		{"qmtemplate", "", "turn the clone into a template"},
		{"qmigrate", "nfs-shared", "migrate the VM to the second node and back"},
		{"vzcreate", "", "create a container from an existing template"},
	} {
		t.Run(tt.task, func(t *testing.T) {
			sim, repo := exerciseEnv(t)
			sim.FailNextTask(tt.task)
			args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
			if tt.storage != "" {
				args = append(args, "--storage", tt.storage)
			}
			code, rep, out := runCheck(t, args...)
			if level, msg, fix := rep.line(t, "exercise: "+tt.step); level != "FAIL" || !strings.HasPrefix(msg, "failed: task failed: ") || !strings.Contains(fix, "cleaned up") {
				t.Errorf("the failed step: %s %s — %s\n%s", level, msg, fix, out)
			}
			if level, msg, _ := rep.line(t, "exercise: cleanup"); level != "OK" || msg == "nothing left (0 throwaway guests removed)" {
				t.Errorf("cleanup: %s %s", level, msg)
			}
			if code != 1 {
				t.Errorf("exit %d", code)
			}
			assertNothingLeft(t, sim)
		})
	}
}

// A run finds what an interrupted one left, by pool, name and tag, and
// removes it first; a guest with the name but not the tag is never touched.
func TestCheckExerciseRemovesLeftoversOfAnEarlierRun(t *testing.T) {
	sim, repo := exerciseEnv(t)
	for _, g := range []pvesim.GuestSpec{
		{VMID: 301, Node: "pve2", Running: true, Config: map[string]string{"name": "proxmops-check-clone", "tags": "proxmops-check"}},
		{VMID: 302, Node: "pve1", Config: map[string]string{"name": "proxmops-check-mine", "tags": "keep"}},
	} {
		if err := sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
	// What an interrupted run leaves, made through the API as the run
	// makes it: a template in the pool with a linked clone of it (which
	// holds the template's base volume), and a running container.
	client := simClient(t, sim)
	ctx := t.Context()
	must := func(upid string, err error) {
		t.Helper()
		if err == nil {
			_, err = client.WaitTask(ctx, upid, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := client.Post(ctx, "pools", pve.NewParams().Set("poolid", "proxmops-check"), nil); err != nil {
		t.Fatal(err)
	}
	must(client.QemuCreate(ctx, "pve1", 300, pve.NewParams().Set("name", "proxmops-check-clone").Set("tags", "proxmops-check").
		Set("pool", "proxmops-check").Set("scsi0", "local-lvm:1")))
	must(client.QemuTemplate(ctx, "pve1", 300))
	linked := false
	must(client.QemuClone(ctx, "pve1", 300, pve.CloneOptions{NewID: 303, Name: "proxmops-check-linked", Full: &linked}))
	must(client.LxcCreate(ctx, "pve1", 304, pve.NewParams().Set("ostemplate", ctTemplate).Set("hostname", "proxmops-check-ct").
		Set("tags", "proxmops-check").Set("pool", "proxmops-check").Set("rootfs", "local-lvm:1")))
	must(client.LxcStart(ctx, "pve1", 304))

	args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
	code, rep, out := runCheck(t, args...)
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if level, msg, _ := rep.line(t, "exercise: leftovers of an earlier run"); level != "OK" || msg != "nothing left (4 throwaway guests removed)" {
		t.Errorf("leftovers: %s %s", level, msg)
	}
	for vmid, want := range map[int]bool{300: false, 301: false, 302: true, 303: false, 304: false} {
		if _, ok := sim.Guest(vmid); ok != want {
			t.Errorf("guest %d there: %v, want %v", vmid, ok, want)
		}
	}
}

// Without the privileges its steps need, the exercise refuses to start,
// naming each, and writes nothing.
func TestCheckExerciseRefusesATokenWithoutItsPrivileges(t *testing.T) {
	for _, tt := range []struct {
		storage string
		names   []string
	}{
		{"", []string{"Pool.Allocate on /pool/proxmops-check", "VM.Clone on /vms", "VM.Snapshot on /vms", "VM.Config.Network on /vms"}},
		// A shared storage adds the migration's privilege.
		{"nfs-shared", []string{"Pool.Allocate on /pool/proxmops-check", "VM.Migrate on /vms"}},
	} {
		t.Run("storage="+tt.storage, func(t *testing.T) {
			sim, repo := cliEnvWith(t, []string{"VM.Allocate", "VM.Audit", "VM.Config.CPU", "VM.Config.Memory", "VM.Config.Disk",
				"VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.HWType", "VM.PowerMgmt", "Datastore.AllocateSpace", "Datastore.Audit",
				"SDN.Use", "Sys.Audit"})
			exerciseTemplate(t, sim)
			sim.ResetRequests()
			args := []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--exercise"}
			if tt.storage != "" {
				args = append(args, "--storage", tt.storage)
			}
			code, rep, _ := runCheck(t, args...)
			level, msg, _ := rep.line(t, "exercise: privileges")
			for _, want := range tt.names {
				if !strings.Contains(msg, want) {
					t.Errorf("the refusal does not name %s: %s", want, msg)
				}
			}
			if level != "FAIL" || code != 1 {
				t.Errorf("%s, exit %d", level, code)
			}
			assertReadOnly(t, sim)
		})
	}
}
