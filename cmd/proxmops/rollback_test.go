package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

// rollback over the CLI against the simulator: the change took a
// snapshot, rollback goes back to it, says the guest is OutOfSync and what
// the sync policy will do; --list shows the snapshots; a missing snapshot
// is an error naming the ones there are.
func TestRollbackCommand(t *testing.T) {
	sim, repo := cliEnv(t)
	common := cliArgs(sim, repo)
	manifest := func(cores string) {
		y := strings.Replace(cliVM, "cores: 2", "cores: "+cores, 1)
		y = strings.Replace(y, "state: running\n", "state: running\n  applyMode: reboot\n  snapshots:\n    beforeChange: true\n    keep: 2\n", 1)
		if err := os.WriteFile(filepath.Join(repo, "app-01.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	manifest("2")
	if code, out, errOut := runCLI(t, append([]string{"apply"}, common...)...); code != 0 {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := runCLI(t, append([]string{"rollback", "VirtualMachine/app-01"}, common...)...)
	if code != 1 || !strings.Contains(errOut, "has no proxmops- snapshot") {
		t.Fatalf("rollback without snapshots: %d\n%s%s", code, out, errOut)
	}
	manifest("4")
	code, out, errOut = runCLI(t, append([]string{"apply"}, common...)...)
	if code != 0 || !strings.Contains(out, "+ snapshot: proxmops-<UTC time> before the change") || !strings.Contains(out, "taking snapshot proxmops-") {
		t.Fatalf("apply with a snapshot: %d\n%s%s", code, out, errOut)
	}
	g, _ := sim.Guest(120)
	if g.Config["cores"] != "4" || len(g.Snapshots) != 1 {
		t.Fatalf("after the change: cores %s, snapshots %v", g.Config["cores"], g.Snapshots)
	}

	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01", "--list"}, common...)...)
	if code != 0 || !strings.Contains(out, "* "+g.Snapshots[0]) || !strings.Contains(out, "before the update of VirtualMachine/app-01 (cores)") {
		t.Fatalf("rollback --list: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01", "--list", "-o", "json"}, common...)...)
	var l api.SnapshotList
	if code != 0 || json.Unmarshal([]byte(out), &l) != nil || len(l.Snapshots) != 1 || l.Current != g.Snapshots[0] || !l.Snapshots[0].Proxmops {
		t.Fatalf("rollback --list -o json: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01", "--snapshot", "nope"}, common...)...)
	if code != 1 || !strings.Contains(errOut, `there is no snapshot "nope" (snapshots: `+g.Snapshots[0]+")") {
		t.Fatalf("rollback to a missing snapshot: %d\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01"}, common...)...)
	if code != 0 || !strings.Contains(out, "rolled back to "+g.Snapshots[0]+" and started again.") ||
		!strings.Contains(out, "Against Git it is now OutOfSync: cores differ from the manifest") ||
		!strings.Contains(out, "its sync policy is auto, so the next pass re-applies the manifest") {
		t.Fatalf("rollback: %d\n%s%s", code, out, errOut)
	}
	if g, _ := sim.Guest(120); g.Config["cores"] != "2" || !g.Running {
		t.Fatalf("after rollback: cores %s, running %v", g.Config["cores"], g.Running)
	}
	code, out, errOut = runCLI(t, append([]string{"plan", "--detailed-exitcode"}, common...)...)
	if code != 2 {
		t.Fatalf("plan after rollback: %d\n%s%s", code, out, errOut)
	}
}
