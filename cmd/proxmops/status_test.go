package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// statusRun is one CLI run of the status scenarios against the simulator.
type statusRun struct {
	sim    *pvesim.Server
	repo   string
	common []string
}

func newStatusRun(t *testing.T) *statusRun {
	sim, repo := cliEnv(t)
	return &statusRun{sim: sim, repo: repo, common: cliArgs(sim, repo)}
}

func (s *statusRun) write(t *testing.T, name, body string) {
	t.Helper()
	if body == "" {
		if err := os.Remove(filepath.Join(s.repo, name)); err != nil {
			t.Fatal(err)
		}
		return
	}
	if err := os.WriteFile(filepath.Join(s.repo, name), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (s *statusRun) run(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	return runCLI(t, append(args, s.common...)...)
}

// applied runs apply, which must exit 0 (what names the run).
func (s *statusRun) applied(t *testing.T, what string) {
	t.Helper()
	if code, out, errOut := s.run(t, "apply"); code != 0 {
		t.Fatalf("%s exit %d:\n%s%s", what, code, out, errOut)
	}
}

// planDoc runs plan --output json and decodes the document strictly.
func (s *statusRun) planDoc(t *testing.T, extra ...string) api.Plan {
	t.Helper()
	code, out, errOut := s.run(t, append([]string{"plan", "--output", "json"}, extra...)...)
	if code != 0 {
		t.Fatalf("plan --output json exit %d:\n%s%s", code, out, errOut)
	}
	var doc api.Plan
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		t.Fatalf("plan document: %v\n%s", err, out)
	}
	total := 0
	for _, n := range doc.Summary.Statuses {
		total += n
	}
	if total != len(doc.Actions) || len(doc.Summary.Statuses) != len(vocab.Statuses) {
		t.Fatalf("statuses %v count %d resources, the plan has %d", doc.Summary.Statuses, total, len(doc.Actions))
	}
	return doc
}

const isoOnMissingStorage = `apiVersion: proxmops.dev/v1
kind: Iso
metadata:
  name: debian
spec:
  source: http://127.0.0.1:1/debian.iso
  node: pve1
  storage: nosuch
`

// An Iso on a storage that does not exist cannot be planned: Failed with
// the reason everywhere, never "in sync" nor "to create"; plan
// --detailed-exitcode exits 2 and apply exits 1.
func TestUnplannableIsoIsFailedEverywhere(t *testing.T) {
	s := newStatusRun(t)
	s.write(t, "app-01.yaml", "")
	s.write(t, "iso.yaml", isoOnMissingStorage)
	want := "storage 'nosuch' does not exist"

	code, out, errOut := s.run(t, "plan", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, want) || !strings.Contains(out, "Status: 0 in sync") ||
		!strings.Contains(out, "1 failed") || !strings.Contains(out, "Plan: 0 to create") {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
	doc := s.planDoc(t)
	if doc.Summary.Statuses[vocab.StatusFailed] != 1 || doc.Summary.Failed != 1 || doc.Summary.Create != 0 || doc.Summary.InSync() != 0 {
		t.Fatalf("summary %+v", doc.Summary)
	}
	// The action itself says it is Failed (the text's "(cannot be planned)"), so
	// a reader of the JSON or the UI's plan table does not take it for a create.
	if len(doc.Actions) != 1 || doc.Actions[0].Status != vocab.StatusFailed || !strings.Contains(doc.Actions[0].Reason, want) {
		t.Fatalf("actions %+v, want the Iso Failed with the reason", doc.Actions)
	}
	code, out, errOut = s.run(t, "apply")
	if code != 1 || !strings.Contains(out, "0 applied, 1 failed") || !strings.Contains(out+errOut, want) {
		t.Fatalf("apply exit %d:\n%s%s", code, out, errOut)
	}
	// Foreseen, so not tried again and again: one failure line.
	if n := strings.Count(out, "✗ Iso/debian"); n != 1 {
		t.Fatalf("apply reported the refusal %d times:\n%s", n, out)
	}
}

// A VM proxmops owns that no manifest declares any more, with prune off,
// is out of sync in the text as in the UI; plan --prune shows its deletion.
func TestOrphanIsOutOfSyncAndPlanPrunePreviewsItsDeletion(t *testing.T) {
	s := newStatusRun(t)
	// A second VM stays declared: a load with no manifests prunes nothing
	// (TestPruneFromAnEmptyLoadIsHeldBack).
	s.write(t, "app-02.yaml", strings.NewReplacer("name: app-01", "name: app-02", "vmid: 120", "vmid: 121").Replace(cliVM))
	s.applied(t, "apply")
	s.write(t, "app-01.yaml", "")
	code, out, errOut := s.run(t, "plan", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "Status: 1 in sync, 1 out of sync") || !strings.Contains(out, "prune is off") {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
	doc := s.planDoc(t)
	if doc.Summary.Statuses[vocab.StatusOutOfSync] != 1 || doc.Summary.Delete != 0 {
		t.Fatalf("summary without prune %+v", doc.Summary)
	}
	doc = s.planDoc(t, "--prune")
	if doc.Summary.Delete != 1 || len(doc.Actions) != 2 || doc.Actions[0].Name != "app-01" || doc.Actions[0].Action != vocab.ActionDelete {
		t.Fatalf("plan --prune %+v", doc)
	}
	if _, ok := s.sim.Guest(120); !ok {
		t.Fatal("plan --prune deleted the VM")
	}
}

// An empty repository prunes nothing, even with --prune (the daemon's
// guard): plan --prune shows no deletion and names the guard, and apply
// --prune leaves the VM in place.
func TestPruneFromAnEmptyLoadIsHeldBack(t *testing.T) {
	s := newStatusRun(t)
	s.applied(t, "apply")
	s.write(t, "app-01.yaml", "")
	const guard = "nothing is pruned from an empty load"
	doc := s.planDoc(t, "--prune")
	if doc.Summary.Delete != 0 || len(doc.Actions) != 1 || doc.Actions[0].Action != vocab.ActionNone || !strings.Contains(doc.Actions[0].Reason, guard) {
		t.Fatalf("plan --prune from an empty load: %+v", doc)
	}
	code, out, errOut := s.run(t, "apply", "--prune")
	if code != 0 || !strings.Contains(out, guard) || !strings.Contains(out, "0 to delete") {
		t.Fatalf("apply --prune exit %d:\n%s%s", code, out, errOut)
	}
	if _, ok := s.sim.Guest(120); !ok {
		t.Fatal("apply --prune deleted the VM from an empty repository")
	}
}

// A running VM whose change waits for a reboot is out of sync and counted
// as pending a reboot, never in sync.
func TestPendingChangeIsNotInSync(t *testing.T) {
	s := newStatusRun(t)
	s.applied(t, "apply")
	s.write(t, "app-01.yaml", strings.Replace(cliVM, "cores: 2", "cores: 4", 1))
	s.applied(t, "second apply")
	code, out, errOut := s.run(t, "plan", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "needs reboot") || !strings.Contains(out, "Status: 0 in sync, 1 out of sync (1 pending a reboot)") {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
	doc := s.planDoc(t)
	if doc.Summary.NeedsReboot != 1 || doc.Summary.InSync() != 0 {
		t.Fatalf("summary %+v", doc.Summary)
	}
}

// A resource that cannot be read is Unknown: plan --detailed-exitcode
// exits 2 even when nothing else differs, and apply exits 1 with the reason.
func TestOnlyUnknownLeftIsAChange(t *testing.T) {
	s := newStatusRun(t)
	s.applied(t, "apply")
	// Every read of the VM's configuration fails from now on (more
	// answers than the plan and the apply below ask for).
	for range 40 {
		s.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "GET", Path: "/nodes/{node}/qemu/{vmid}/pending", Message: "config unreadable"})
	}
	code, out, errOut := s.run(t, "plan", "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "config unreadable") || !strings.Contains(out, "Status: 0 in sync, 0 out of sync, 0 in progress, 0 failed, 0 conflict(s), 1 unknown.") {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
	code, out, errOut = s.run(t, "apply")
	if code != 1 || !strings.Contains(out, "not evaluated: configuration could not be read") || !strings.Contains(out, "0 applied, 1 failed") {
		t.Fatalf("apply exit %d:\n%s%s", code, out, errOut)
	}
}

const tplOnNode = `apiVersion: proxmops.dev/v1
kind: Template
metadata:
  name: tpl
  node: NODE
spec:
  vmid: 9000
  image:
    source: local:import/debian.qcow2
  disks:
    - storage: local-lvm
      size: 10G
  net:
    - bridge: vmbr0
`

const cloneOfTpl = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-02
  node: NODE
spec:
  vmid: 121
  fromTemplate: tpl
`

// A node name the cluster does not have is the reason, named with the
// nodes it has, before the storage, template or read errors that follow
// from it; what depends on such a resource says so.
func TestUnknownNodeIsTheReason(t *testing.T) {
	s := newStatusRun(t)
	s.write(t, "app-01.yaml", strings.Replace(cliVM, "node: pve1", "node: pve-node1", 1))
	s.write(t, "tpl.yaml", strings.Replace(tplOnNode, "NODE", "pve-node1", 1))
	s.write(t, "app-02.yaml", strings.Replace(cloneOfTpl, "NODE", "pve2", 1))
	s.write(t, "iso.yaml", strings.NewReplacer("node: pve1", "node: pve-node1", "nosuch", "local").Replace(isoOnMissingStorage))
	s.write(t, "net.yaml", "apiVersion: proxmops.dev/v1\nkind: Network\nmetadata:\n  name: n1\n  node: pve-node1\nspec:\n  type: bridge\n  iface: vmbr5\n")
	want := "node pve-node1 does not exist; the cluster has pve1, pve2"
	doc := s.planDoc(t)
	for _, a := range doc.Actions {
		switch a.Name {
		case "app-02":
			if !strings.Contains(a.Reason, "blocked: Template/tpl is Failed ("+want) {
				t.Errorf("%s/%s: %q", a.Kind, a.Name, a.Reason)
			}
		default:
			if !strings.HasPrefix(a.Reason, want) {
				t.Errorf("%s/%s: %q, want %q first", a.Kind, a.Name, a.Reason, want)
			}
		}
	}
	if doc.Summary.Statuses[vocab.StatusFailed] != 5 || doc.Summary.Changed() != 0 {
		t.Fatalf("summary %+v", doc.Summary)
	}
	if code, out, errOut := s.run(t, "plan", "--detailed-exitcode"); code != 2 {
		t.Fatalf("plan exit %d:\n%s%s", code, out, errOut)
	}
}
