package engine_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

const nasISOYAML = `apiVersion: proxmops.dev/v1
kind: Storage
metadata:
  name: nas-iso
spec:
  type: nfs
  server: 192.168.1.5
  export: /export/iso
  content: [iso, vztmpl]
  nodes: [pve1, pve2]
`

const smbYAML = `apiVersion: proxmops.dev/v1
kind: Storage
metadata:
  name: smb
spec:
  type: cifs
  server: nas.example.lan
  share: backups
  username: pve
  passwordFrom: { env: PROXMOPS_TEST_SMB_PASSWORD }
  content: [backup]
`

const scratchYAML = `apiVersion: proxmops.dev/v1
kind: Storage
metadata:
  name: scratch
spec:
  type: dir
  path: /srv/scratch
  content: [images, iso]
`

func storageConfig(t *testing.T, c *pve.Client, name string) map[string]any {
	t.Helper()
	var out map[string]any
	if err := c.Get(context.Background(), "storage/"+name, nil, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func storageExists(t *testing.T, c *pve.Client, name string) bool {
	t.Helper()
	return listItem(t, c, "storage", "storage", name) != nil
}

// NFS and CIFS storages are created (the CIFS password read from its
// reference, sent to Proxmox and shown nowhere in the plan), recorded as
// proxmops' so that a later engine on the same store sees them in sync,
// and drift made by hand (content, nodes, disable) is found by field with
// its manifest path and fixed.
func TestStorageCreatedInSyncDriftFixedPasswordNeverShown(t *testing.T) {
	const secret = "s3cret-smb-pw"
	t.Setenv("PROXMOPS_TEST_SMB_PASSWORD", secret)
	e := newEnv(t)
	rec := openStore(t)
	e.write("storage/nas-iso.yaml", nasISOYAML)
	e.write("storage/smb.yaml", smbYAML)
	eng := e.engine(engine.Options{Records: rec})
	p := e.plan(eng)
	smb := p.Find(engine.KindStorage, "smb")
	if smb.Action != vocab.ActionCreate || !strings.Contains(fwChangePaths(smb), "password@spec.passwordFrom") {
		t.Fatalf("smb planned %s with %s", smb.Action, fwChangePaths(smb))
	}
	doc, err := p.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(doc), secret) || strings.Contains(smb.Reason, secret) {
		t.Fatalf("the plan shows the password: %s", doc)
	}
	e.converge(eng)
	if pw, _ := e.sim.StorageSecret("smb", "password"); pw != secret {
		t.Fatalf("the CIFS password Proxmox keeps: %q", pw)
	}
	nas := storageConfig(t, e.client, "nas-iso")
	if nas["server"] != "192.168.1.5" || nas["export"] != "/export/iso" || nas["content"] != "iso,vztmpl" || nas["nodes"] != "pve1,pve2" {
		t.Fatalf("nas-iso as Proxmox keeps it: %v", nas)
	}
	e.assertInSync(e.engine(engine.Options{Records: rec}))

	// Drift, made as a person would.
	if err := e.client.Put(context.Background(), "storage/nas-iso", pve.NewParams().Set("content", "iso").Set("nodes", "pve1").Set("disable", "1"), nil); err != nil {
		t.Fatal(err)
	}
	eng = e.engine(engine.Options{Records: rec})
	p = e.plan(eng)
	a := p.Find(engine.KindStorage, "nas-iso")
	if a.Action != vocab.ActionUpdate || fwChangePaths(a) != "content@spec.content nodes@spec.nodes disable@spec.disable" {
		t.Fatalf("drift: %s %s (%s)", a.Action, fwChangePaths(a), a.Reason)
	}
	e.converge(eng)
	e.assertInSync(eng)
	if nas := storageConfig(t, e.client, "nas-iso"); nas["disable"] != nil || nas["nodes"] != "pve1,pve2" {
		t.Fatalf("after the fix: %v", nas)
	}
}

// Storages made by hand are left alone, also with prune on; a declared
// name held by one is a Conflict, also for an engine without the record
// (ownership is the store's record, never assumed); adoption by
// annotation records it and applies the differences.
func TestStorageHandMadeLeftAloneConflictAdoption(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rec := openStore(t)
	for _, p := range []*pve.Params{
		pve.NewParams().Set("storage", "theirs").Set("type", "dir").Set("path", "/srv/theirs"),
		pve.NewParams().Set("storage", "scratch").Set("type", "dir").Set("path", "/srv/scratch").Set("content", "images"),
	} {
		if err := e.client.Post(ctx, "storage", p, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.write("storage/scratch.yaml", scratchYAML)
	pruning := e.engine(engine.Options{Prune: true, Records: rec})
	p := e.plan(pruning)
	if a := p.Find(engine.KindStorage, "scratch"); !a.Conflicted() || !strings.Contains(a.Reason, "no record in proxmops' store") {
		t.Fatalf("a declared name held by hand: %s %s", a.Status, a.Reason)
	}
	if a := p.Find(engine.KindStorage, "theirs"); a != nil {
		t.Fatalf("a storage made by hand is in the plan: %s %s", a.Action, a.Reason)
	}
	if _, err := pruning.Apply(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if !storageExists(t, e.client, "theirs") || storageConfig(t, e.client, "scratch")["content"] != "images" {
		t.Fatal("a storage made by hand was changed or removed")
	}

	e.write("storage/scratch.yaml", strings.Replace(scratchYAML, "  name: scratch\n", "  name: scratch\n  annotations: { proxmops.dev/adopt: \"true\" }\n", 1))
	p = e.plan(pruning)
	a := p.Find(engine.KindStorage, "scratch")
	if !a.Adopt || a.Action != vocab.ActionUpdate || !strings.Contains(fwChangePaths(a), "content@spec.content") {
		t.Fatalf("adoption planned: %s %s %s", a.Action, fwChangePaths(a), a.Reason)
	}
	e.converge(pruning)
	e.write("storage/scratch.yaml", scratchYAML) // the annotation goes
	e.assertInSync(e.engine(engine.Options{Prune: true, Records: rec}))
	if a := e.plan(e.engine(engine.Options{})).Find(engine.KindStorage, "scratch"); !a.Conflicted() {
		t.Fatalf("an engine without the record: %s %s", a.Status, a.Reason)
	}
	if !storageExists(t, e.client, "theirs") {
		t.Fatal("prune removed a storage made by hand")
	}
}

// An owned storage no longer declared is not removed while it holds a
// volume, whatever prune says, and the plan says why; once empty it is
// removed and its record forgotten.
func TestStorageHoldingVolumesIsNeverPruned(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	rec := openStore(t)
	e.write("storage/scratch.yaml", scratchYAML)
	eng := e.engine(engine.Options{Prune: true, Records: rec})
	e.converge(eng)
	if err := e.client.Post(ctx, "nodes/pve1/storage/scratch/content", pve.NewParams().Set("filename", "vm-900-disk-0.raw").Set("size", "1G").Set("vmid", "900"), nil); err != nil {
		t.Fatal(err)
	}
	e.remove("storage/scratch.yaml")
	p := e.plan(eng)
	a := p.Find(engine.KindStorage, "scratch")
	if a == nil || a.Status != vocab.StatusFailed || a.Runnable() || !strings.Contains(a.Reason, "still holds 1 volumes (1 images)") || !strings.Contains(a.Reason, "never removed") {
		t.Fatalf("prune of a storage in use: %+v", a)
	}
	if _, err := eng.Apply(ctx, p, nil); err != nil {
		t.Fatal(err)
	}
	if !storageExists(t, e.client, "scratch") {
		t.Fatal("a storage holding a volume was removed")
	}
	// The one-shot delete (the UI's, the API's) refuses it with the reason.
	if _, err := eng.Delete(ctx, e.desired(), engine.KindStorage, "scratch", nil); !errors.Is(err, api.ErrConflict) || !strings.Contains(err.Error(), "still holds 1 volumes") {
		t.Fatalf("one-shot delete of a storage in use: %v", err)
	}
	if err := e.client.Delete(ctx, "nodes/pve1/storage/scratch/content/"+pve.PathEscape("scratch:900/vm-900-disk-0.raw"), nil, nil); err != nil {
		t.Fatal(err)
	}
	p = e.plan(eng)
	if a := p.Find(engine.KindStorage, "scratch"); a.Action != vocab.ActionDelete {
		t.Fatalf("an empty owned storage no longer declared: %s %s %s", a.Action, a.Status, a.Reason)
	}
	e.converge(eng)
	if storageExists(t, e.client, "scratch") {
		t.Fatal("the empty storage stayed")
	}
	// The name made again by hand is not proxmops'.
	if err := e.client.Post(ctx, "storage", pve.NewParams().Set("storage", "scratch").Set("type", "dir").Set("path", "/srv/scratch"), nil); err != nil {
		t.Fatal(err)
	}
	if a := e.plan(eng).Find(engine.KindStorage, "scratch"); a != nil {
		t.Fatalf("a storage made again by hand is planned: %s %s", a.Action, a.Reason)
	}
}

// A change of a field Proxmox fixes at creation (an NFS export) is
// refused with the annotation to add, and replaces the definition once
// the manifest carries proxmops.dev/replace.
func TestStorageFixedFieldChangeNeedsReplaceAnnotation(t *testing.T) {
	e := newEnv(t)
	rec := openStore(t)
	e.write("storage/nas-iso.yaml", nasISOYAML)
	eng := e.engine(engine.Options{Records: rec})
	e.converge(eng)
	moved := strings.Replace(nasISOYAML, "/export/iso", "/export/images", 1)
	e.write("storage/nas-iso.yaml", moved)
	p := e.plan(eng)
	a := p.Find(engine.KindStorage, "nas-iso")
	if a.Status != vocab.StatusFailed || a.Runnable() || fwChangePaths(a) != "export@spec.export" || !strings.Contains(a.Reason, "proxmops.dev/replace") {
		t.Fatalf("fixed field change without the annotation: %s %s %s", a.Status, fwChangePaths(a), a.Reason)
	}
	e.sim.ResetRequests()
	if _, err := eng.Apply(t.Context(), p, nil); err != nil {
		t.Fatal(err)
	}
	if n := e.sim.RequestCountFor("DELETE", "/storage/{storage}") + e.sim.RequestCountFor("PUT", "/storage/{storage}"); n != 0 {
		t.Fatalf("a refused replacement sent %d requests", n)
	}
	e.write("storage/nas-iso.yaml", strings.Replace(moved, "  name: nas-iso\n", "  name: nas-iso\n  annotations: { proxmops.dev/replace: \"true\" }\n", 1))
	e.converge(eng)
	if got := storageConfig(t, e.client, "nas-iso")["export"]; got != "/export/images" {
		t.Fatalf("export after the replacement: %v", got)
	}
	e.assertInSync(e.engine(engine.Options{Records: rec}))
}

// A token without Datastore.Allocate on /storage: the plan names the
// privilege and apply sends nothing Proxmox would refuse.
func TestStoragePlanNamesMissingDatastoreAllocate(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = allPrivilegesBut("Datastore.Allocate") })
	e.write("storage/scratch.yaml", scratchYAML)
	eng := e.engine(engine.Options{Records: openStore(t)})
	e.assertRefusedSendingNothing(eng, engine.KindStorage, "scratch", "lacks Datastore.Allocate on /storage", "POST", "/storage")
}

// An ISO on a storage declared in the same commit: the storage is
// created first (the Iso depends on it through manifest.Dependencies),
// and the ISO is not refused for a storage that does not exist yet; one
// converge brings both in sync.
func TestIsoOnANewlyDeclaredStorageConvergesInOnePass(t *testing.T) {
	e := newEnv(t)
	rec := openStore(t)
	e.write("storage/nas-iso.yaml", nasISOYAML)
	e.write("isos/debian.yaml", strings.Replace(seedIso, "storage: local", "storage: nas-iso", 1))
	e.assertCreatedAfterItsStorage(rec, engine.KindIso, "debian-12", "Storage/nas-iso")
}

// A token that may allocate storages but not see one (no Datastore.Audit
// nor Datastore.AllocateSpace on /storage/{id}, so GET /storage hides
// it): the plan names what it needs to see the storage instead of
// creating one that exists.
func TestStoragePlanNamesTheAuditPrivilegeItNeedsToSeeIt(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) {
		o.TokenPrivileges = allPrivilegesBut("Datastore.Audit", "Datastore.AllocateSpace")
	})
	e.write("storage/scratch.yaml", scratchYAML)
	p := e.plan(e.engine(engine.Options{Records: openStore(t)}))
	e.assertRefused(p.Find(engine.KindStorage, "scratch"), "Datastore.Audit or Datastore.AllocateSpace on /storage/scratch")
}

// A creation whose answer is lost (Proxmox made the storage) leaves it
// proxmops': the record is written before the request, so the next plan
// finds it in sync, not a Conflict of proxmops' own making; a creation
// Proxmox refused leaves no record, so a storage a person makes later
// under that name is theirs.
func TestStorageCreationWithALostAnswerStaysProxmops(t *testing.T) {
	e := newEnv(t)
	rec := openStore(t)
	e.write("storage/scratch.yaml", scratchYAML)
	eng := e.engine(engine.Options{Records: rec})
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "POST", Path: "/storage"})
	if _, rep := e.apply(eng); rep.Failed != 1 {
		t.Fatalf("apply with the answer lost: %+v", rep.Results)
	}
	if !storageExists(t, e.client, "scratch") {
		t.Fatal("the dropped POST made no storage")
	}
	e.assertInSync(e.engine(engine.Options{Records: rec}))

	e.write("storage/other.yaml", strings.Replace(scratchYAML, "name: scratch", "name: other", 1))
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultError, Method: "POST", Path: "/storage"})
	if _, rep := e.apply(eng); rep.Failed != 1 {
		t.Fatalf("apply with the creation refused: %+v", rep.Results)
	}
	e.remove("storage/other.yaml")
	if err := e.client.Post(context.Background(), "storage", pve.NewParams().Set("storage", "other").Set("type", "dir").Set("path", "/srv/scratch"), nil); err != nil {
		t.Fatal(err)
	}
	if a := e.plan(e.engine(engine.Options{Prune: true, Records: rec})).Find(engine.KindStorage, "other"); a != nil {
		t.Fatalf("a storage made by hand after a refused creation is planned: %s %s", a.Action, a.Reason)
	}
}

// A password reference that cannot be read fails that storage's plan,
// naming the reference, and sends nothing.
func TestStorageWithAnUnreadablePasswordFails(t *testing.T) {
	e := newEnv(t)
	e.write("storage/smb.yaml", smbYAML) // PROXMOPS_TEST_SMB_PASSWORD unset
	eng := e.engine(engine.Options{Records: openStore(t)})
	e.assertRefusedSendingNothing(eng, engine.KindStorage, "smb", "passwordFrom: environment variable PROXMOPS_TEST_SMB_PASSWORD is not set", "POST", "/storage")
}

// A backup job writing to a storage declared in the same commit waits for
// the storage's creation, and both converge in one pass.
func TestBackupJobOnANewlyDeclaredStorageConvergesInOnePass(t *testing.T) {
	e := newEnv(t)
	rec := openStore(t)
	e.write("storage/backups.yaml", strings.NewReplacer("name: scratch", "name: backups", "/srv/scratch", "/srv/backups", "[images, iso]", "[backup]").Replace(scratchYAML))
	e.write("backup/nightly.yaml", "apiVersion: proxmops.dev/v1\nkind: BackupJob\nmetadata:\n  name: nightly\nspec:\n  schedule: \"02:30\"\n  storage: backups\n  all: true\n")
	e.assertCreatedAfterItsStorage(rec, engine.KindBackupJob, "nightly", "Storage/backups")
}

// assertCreatedAfterItsStorage checks that kind/name is planned as a
// create depending on the storage declared beside it, and that one
// converge brings both in sync.
func (e *env) assertCreatedAfterItsStorage(rec engine.Records, kind, name, storage string) {
	e.t.Helper()
	eng := e.engine(engine.Options{Records: rec})
	a := e.plan(eng).Find(kind, name)
	if a.Action != vocab.ActionCreate || !strings.Contains(strings.Join(a.DependsOn, " "), storage) {
		e.t.Fatalf("%s/%s planned %s %s (%s), depends on %v", kind, name, a.Action, a.Status, a.Reason, a.DependsOn)
	}
	e.converge(eng)
	e.assertInSync(e.engine(engine.Options{Records: rec}))
}
