package engine_test

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

func taggedVM(name string, vmid int, tags string) string {
	return "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: " + name + "\n  node: pve1\n  tags: [" + tags + "]\nspec:\n  vmid: " + strconv.Itoa(vmid) + "\n  cores: 1\n  memory: 512\n"
}

const nightlyByTag = `apiVersion: proxmops.dev/v1
kind: BackupJob
metadata:
  name: nightly
spec:
  schedule: "02:30"
  storage: local
  mode: snapshot
  compress: zstd
  selector: { tags: [prod] }
  retention: { keepLast: 3, keepDaily: 7 }
  notesTemplate: "{{guestname}}"
  comment: every night
`

// backupJob reads one job through GET /cluster/backup/{id}; nil when
// there is none.
func backupJob(t *testing.T, c *pve.Client, id string) map[string]any {
	t.Helper()
	return listItem(t, c, "cluster/backup", "id", id)
}

// A job selecting its guests by tag is created after them as
// proxmops-<name> with the marked comment, in sync on the next plan;
// drift made by hand is found by field with its manifest path and fixed;
// a guest tagged later (made by hand) joins the job on the next pass.
func TestBackupJobCreatedInSyncDriftFixedNewlyTaggedGuestJoins(t *testing.T) {
	e, eng := withManifests(t, engine.Options{},
		"vms/web.yaml", taggedVM("web", 150, "prod"),
		"vms/db.yaml", taggedVM("db", 151, "prod"),
		"vms/lab.yaml", taggedVM("lab", 152, "lab"),
		"backup/nightly.yaml", nightlyByTag,
	)
	ctx := context.Background()
	p := e.plan(eng)
	a := p.Find(engine.KindBackupJob, "nightly")
	deps := strings.Join(a.DependsOn, " ")
	if a.Action != vocab.ActionCreate || !strings.Contains(deps, "VirtualMachine/web") || !strings.Contains(deps, "VirtualMachine/db") || strings.Contains(deps, "lab") {
		t.Fatalf("job planned %s %s, depends on %v", a.Action, a.Reason, a.DependsOn)
	}
	e.converge(eng)
	j := backupJob(t, e.client, "proxmops-nightly")
	if j == nil || j["vmid"] != "150,151" || j["comment"] != "every night (managed-by-proxmops)" || j["schedule"] != "02:30" ||
		j["notes-template"] != "{{guestname}}" || j["compress"] != "zstd" {
		t.Fatalf("job as Proxmox keeps it: %v", j)
	}
	if pb, _ := j["prune-backups"].(map[string]any); fmt.Sprint(pb["keep-last"]) != "3" || fmt.Sprint(pb["keep-daily"]) != "7" {
		t.Fatalf("prune-backups: %v", j["prune-backups"])
	}
	e.assertInSync(eng)

	// Drift, made as a person would.
	if err := e.client.Put(ctx, "cluster/backup/proxmops-nightly", pve.NewParams().Set("schedule", "sat 04:00").Set("mode", "stop").
		Set("prune-backups", "keep-last=1").Set("delete", "compress"), nil); err != nil {
		t.Fatal(err)
	}
	a = e.plan(eng).Find(engine.KindBackupJob, "nightly")
	if want := "schedule@spec.schedule compress@spec.compress mode@spec.mode prune-backups@spec.retention"; a.Action != vocab.ActionUpdate || sortedWords(fwChangePaths(a)) != sortedWords(want) {
		t.Fatalf("drift: %s %s", a.Action, fwChangePaths(a))
	}
	e.converge(eng)
	e.assertInSync(eng)

	// A guest made and tagged by hand joins the job on the next pass.
	upid, err := e.client.QemuCreate(ctx, "pve1", 160, pve.NewParams().Set("name", "later").Set("tags", "prod"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.WaitTask(ctx, upid, nil); err != nil {
		t.Fatal(err)
	}
	a = e.plan(eng).Find(engine.KindBackupJob, "nightly")
	if a.Action != vocab.ActionUpdate || fwChangePaths(a) != "vmid@spec.selector.tags" {
		t.Fatalf("a newly tagged guest: %s %s", a.Action, fwChangePaths(a))
	}
	e.converge(eng)
	if j := backupJob(t, e.client, "proxmops-nightly"); j["vmid"] != "150,151,160" {
		t.Fatalf("vmid after the new guest: %v", j["vmid"])
	}
	e.assertInSync(eng)
}

func sortedWords(s string) string {
	w := strings.Fields(s)
	sort.Strings(w)
	return strings.Join(w, " ")
}

// Jobs made by hand are left alone, also with prune on; a job at
// proxmops-<name> without the mark is a Conflict; an owned job no longer
// declared goes only with prune on; a hand-made job is taken over by a
// manifest named by its ID and annotated for adoption: made again as
// proxmops-<name> with the manifest's settings, the old one removed.
func TestBackupJobHandMadeLeftAloneConflictPruneAdopt(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("vms/web.yaml", taggedVM("web", 150, "prod"))
	for _, id := range []string{"backup-1a2b3c4d-5e6f", "proxmops-weekly", "handmade"} {
		if err := e.client.Post(ctx, "cluster/backup", pve.NewParams().Set("id", id).Set("schedule", "sun 01:00").Set("all", "1").Set("comment", "by hand"), nil); err != nil {
			t.Fatal(err)
		}
	}
	e.write("backup/weekly.yaml", "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: weekly}\nspec: {schedule: \"sat 03:00\", guests: [web]}\n")
	e.write("backup/mine.yaml", "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata: {name: mine}\nspec: {schedule: daily, all: true, exclude: [web]}\n")
	pruning := e.engine(engine.Options{Prune: true})
	p := e.plan(pruning)
	if a := p.Find(engine.KindBackupJob, "weekly"); a.Status != vocab.StatusConflict || a.Runnable() {
		t.Fatalf("a declared job held by hand: %s %s", a.Status, a.Reason)
	}
	for _, n := range []string{"backup-1a2b3c4d-5e6f", "handmade", "1a2b3c4d-5e6f"} {
		if a := p.Find(engine.KindBackupJob, n); a != nil {
			t.Fatalf("hand-made job %s is in the plan: %s %s", n, a.Action, a.Reason)
		}
	}
	e.converge(pruning)
	if j := backupJob(t, e.client, "proxmops-weekly"); j["schedule"] != "sun 01:00" || j["comment"] != "by hand" {
		t.Fatalf("the conflicting job was changed: %v", j)
	}
	if j := backupJob(t, e.client, "proxmops-mine"); j["all"] != float64(1) || j["exclude"] != "150" {
		t.Fatalf("all less exclude: %v", j)
	}

	// No longer declared: kept with prune off, deleted with it on.
	e.remove("backup/mine.yaml")
	assertPlanned(t, e.plan(e.engine(engine.Options{})), engine.KindBackupJob, "mine", vocab.ActionNone, "prune is off")
	e.converge(pruning)
	if backupJob(t, e.client, "proxmops-mine") != nil || backupJob(t, e.client, "handmade") == nil || backupJob(t, e.client, "backup-1a2b3c4d-5e6f") == nil {
		t.Fatal("prune removed the wrong jobs")
	}

	// Adoption of proxmops-weekly marks it in place; of backup-..., which
	// Proxmox cannot rename, makes it again as proxmops-backup-....
	adopt := "  annotations: {proxmops.dev/adopt: \"true\"}\n"
	e.write("backup/weekly.yaml", "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata:\n  name: weekly\n"+adopt+"spec: {schedule: \"sat 03:00\", guests: [web]}\n")
	e.write("backup/old.yaml", "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata:\n  name: backup-1a2b3c4d-5e6f\n"+adopt+"spec: {schedule: \"sun 01:00\", all: true, comment: by hand}\n")
	p = e.plan(pruning)
	assertPlanned(t, p, engine.KindBackupJob, "weekly", vocab.ActionUpdate, "adopting backup job proxmops-weekly")
	assertPlanned(t, p, engine.KindBackupJob, "backup-1a2b3c4d-5e6f", vocab.ActionCreate, "Proxmox cannot rename it")
	e.converge(pruning)
	if j := backupJob(t, e.client, "proxmops-weekly"); j["schedule"] != "sat 03:00" || j["vmid"] != "150" || j["comment"] != "managed-by-proxmops" {
		t.Fatalf("adopted weekly: %v", j)
	}
	if backupJob(t, e.client, "backup-1a2b3c4d-5e6f") != nil {
		t.Fatal("the replaced job is still there")
	}
	if j := backupJob(t, e.client, "proxmops-backup-1a2b3c4d-5e6f"); j["schedule"] != "sun 01:00" || j["comment"] != "by hand (managed-by-proxmops)" {
		t.Fatalf("the job made again: %v", j)
	}
	e.assertInSync(pruning)
	if backupJob(t, e.client, "handmade") == nil {
		t.Fatal("the other hand-made job was touched")
	}

	// Delete on request: an owned job goes, a hand-made one is refused.
	e.assertDeleteOnRequest(pruning, engine.KindBackupJob, "weekly", "proxmops-weekly", "handmade",
		func(id string) bool { return backupJob(t, e.client, id) != nil })
}

// A tag selecting no guest is refused before anything is made: Proxmox
// keeps no job without guests.
func TestBackupJobSelectingNoGuestIsRefused(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "backup/nightly.yaml", nightlyByTag)
	e.assertRefused(e.plan(eng).Find(engine.KindBackupJob, "nightly"), "no guest carries the tags prod")
	e.converge(eng)
	if backupJob(t, e.client, "proxmops-nightly") != nil {
		t.Fatal("a job without guests was made")
	}
}

// A token without Datastore.Allocate on the job's storage: the plan names
// it and apply calls nothing (Backup.pm assert_param_permission_create).
func TestBackupJobPlanNamesMissingDatastoreAllocate(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut("Datastore.Allocate") })
	e.write("vms/web.yaml", taggedVM("web", 150, "prod"))
	e.write("backup/nightly.yaml", nightlyByTag)
	eng := e.engine(engine.Options{})
	e.assertRefusedSendingNothing(eng, engine.KindBackupJob, "nightly", "lacks Datastore.Allocate on /storage/local", "POST", "/cluster/backup")
}
