package engine_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// Proxmox refuses notes on ISOs and templates, so proxmops proves its
// downloads from the node's task history: downloaded volumes plan clean
// (no Conflict) even for an engine that has no record of them, prune
// deletes only what proxmops downloaded, and a same-named volume someone
// else put there after removing ours is never deleted.
func TestDownloadedVolumesOwnedThroughTheTaskHistory(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.write("isos/debian-12.yaml", seedIso)
	e.write("tpl/debian.yaml", applianceTemplate)
	e.converge(e.engine(engine.Options{}))
	// A new engine (a restarted daemon, the CLI) knows nothing of the
	// downloads: the task history proves them.
	fresh := e.engine(engine.Options{})
	p := e.assertInSync(fresh)
	for _, k := range []string{engine.KindIso + "/debian-12", engine.KindContainerTemplate + "/debian-12-standard"} {
		kind, name, _ := strings.Cut(k, "/")
		if a := p.Find(kind, name); !a.Owned || a.Conflicted() || !strings.Contains(a.Observed["downloaded_by"].(string), ":download:") {
			t.Fatalf("%s: %+v", k, a)
		}
	}
	if n := e.fetches.Load(); n != 1 {
		t.Fatalf("ISO fetched %d times", n)
	}

	// Volumes proxmops did not download: by hand, and through an upload.
	if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:iso/manual.iso", Size: 10}); err != nil {
		t.Fatal(err)
	}
	up, err := e.client.Upload(ctx, "pve1", "local", "iso", "uploaded.iso", bytes.NewReader(bytes.Repeat([]byte("u"), 4096)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.client.WaitTask(ctx, up, nil); err != nil {
		t.Fatal(err)
	}
	e.remove("isos/debian-12.yaml")
	e.remove("tpl/debian.yaml")
	pruning := e.engine(engine.Options{Prune: true})
	p = e.plan(pruning)
	var deletes []string
	for _, a := range p.Actions {
		if a.Action == vocab.ActionDelete {
			deletes = append(deletes, a.Key())
		}
	}
	if strings.Join(deletes, ",") != "Iso/debian-12-amd64-netinst,ContainerTemplate/debian-12-standard-12-7-1-amd64" {
		t.Fatalf("prune deletes %v:\n%s", deletes, planText(p))
	}
	e.mustApply(pruning)
	vols := e.sim.Volumes("pve1", "local")
	if contains(vols, "local:iso/debian-12-amd64-netinst.iso") || !contains(vols, "local:iso/manual.iso") || !contains(vols, "local:iso/uploaded.iso") {
		t.Fatalf("after prune: %v", vols)
	}
}

// After proxmops' ISO is removed and someone else puts a file of the same
// name there, the volume is not proxmops': a Conflict in the plan, and
// the one-shot delete refuses it, whether or not the engine remembers its
// own download.
func TestSameNamedVolumeOfSomeoneElseIsNeverDeleted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		replace func(e *env)
	}{
		{"removed, then put there by hand", func(e *env) {
			e.deleteVolume("local:iso/debian-12-amd64-netinst.iso")
			if err := e.sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:iso/debian-12-amd64-netinst.iso", Size: 10}); err != nil {
				e.t.Fatal(err)
			}
		}},
		{"overwritten by an upload", func(e *env) {
			up, err := e.client.Upload(context.Background(), "pve1", "local", "iso", "debian-12-amd64-netinst.iso", bytes.NewReader([]byte("theirs")))
			if err == nil {
				_, err = e.client.WaitTask(context.Background(), up, nil)
			}
			if err != nil {
				e.t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, eng := convergedWith(t, engine.Options{}, "isos/debian-12.yaml", seedIso)
			tc.replace(e)
			for _, engName := range []string{"same engine", "fresh engine"} {
				use := eng
				if engName == "fresh engine" {
					use = e.engine(engine.Options{})
				}
				if a := e.plan(use).Find(engine.KindIso, "debian-12"); !a.Conflicted() || a.Owned {
					t.Fatalf("%s: %+v", engName, a)
				}
				_, err := use.Delete(context.Background(), e.desired(), engine.KindIso, "debian-12", nil)
				if !errors.Is(err, engine.ErrNothingToDelete) {
					t.Fatalf("%s: delete: %v", engName, err)
				}
			}
			if !contains(e.sim.Volumes("pve1", "local"), "local:iso/debian-12-amd64-netinst.iso") {
				t.Fatal("the other volume was deleted")
			}
		})
	}
}

// A download whose answer is lost still ran: the next plan proves it from
// the task history and downloads nothing again.
func TestLostDownloadAnswerIsProvenFromTheHistory(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "isos/debian-12.yaml", seedIso)
	e.sim.InjectOnce(pvesim.OneShot{Kind: pvesim.FaultDrop, Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url"})
	e.apply(eng)
	testwait.For(t, "the ISO download to finish", 5*time.Second, func() bool { return contains(e.sim.Volumes("pve1", "local"), "local:iso/debian-12-amd64-netinst.iso") })
	e.assertInSync(eng)
	if n := e.fetches.Load(); n != 1 {
		t.Fatalf("ISO fetched %d times", n)
	}
}

// deleteVolume removes a volume through the API, as a person would.
func (e *env) deleteVolume(volid string) {
	e.t.Helper()
	storage, _, _ := strings.Cut(volid, ":")
	upid, err := e.client.DeleteVolume(context.Background(), "pve1", storage, volid)
	if err == nil && upid != "" {
		_, err = e.client.WaitTask(context.Background(), upid, nil)
	}
	if err != nil {
		e.t.Fatal(err)
	}
}

// Without Sys.Audit on the node Proxmox lists only the token's own tasks,
// so another user's later write would be hidden: a fresh engine proves
// nothing (Unknown, never a Conflict) and deletes nothing.
func TestNoProofWithoutSysAudit(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) {
		o.TokenPrivileges = []string{"Datastore.Audit", "Datastore.Allocate", "Datastore.AllocateSpace", "Datastore.AllocateTemplate", "Sys.AccessNetwork", "VM.Audit"}
	})
	e.write("isos/debian-12.yaml", seedIso)
	if _, rep := e.apply(e.engine(engine.Options{})); rep.Failed != 0 {
		t.Fatalf("%+v", rep.Results)
	}
	fresh := e.engine(engine.Options{})
	a := e.plan(fresh).Find(engine.KindIso, "debian-12")
	if a.Status != vocab.StatusUnknown || a.Conflicted() || a.Owned || !strings.Contains(a.Reason, "lacks Sys.Audit on /nodes/pve1") {
		t.Fatalf("%+v", a)
	}
	e.remove("isos/debian-12.yaml")
	if _, err := e.engine(engine.Options{Prune: true}).Delete(context.Background(), e.desired(), engine.KindIso, "debian-12", nil); !errors.Is(err, engine.ErrNothingToDelete) {
		t.Fatalf("delete: %v", err)
	}
	if !contains(e.sim.Volumes("pve1", "local"), "local:iso/debian-12-amd64-netinst.iso") {
		t.Fatal("deleted without proof")
	}
}

// openStore is the daemon's SQLite store, where the engine keeps its
// ownership and download records and which engines made later share.
func openStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{Path: filepath.Join(t.TempDir(), "proxmops.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Once the download's task has rotated out of Proxmox's task index, the
// store's record of it (with the file's ctime and size) still proves the
// volume; without the record nothing proves it: a Conflict, never pruned.
func TestDownloadProofSurvivesTaskIndexRotationThroughTheStore(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TaskIndexBytes = 1000 })
	e.write("isos/debian-12.yaml", seedIso)
	store := openStore(t)
	e.converge(e.engine(engine.Options{Records: store}))
	// Enough tasks on pve1 to rotate the index twice.
	if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 300, Node: "pve1", Config: map[string]string{"name": "busy"}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 30; i++ {
		power := e.client.QemuStart
		if i%2 == 1 {
			power = e.client.QemuStop
		}
		upid, err := power(context.Background(), "pve1", 300)
		if err == nil {
			_, err = e.client.WaitTask(context.Background(), upid, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	downloads, err := e.client.NodeTasks(context.Background(), "pve1", pve.TaskFilter{Type: "download", Limit: 1000})
	if err != nil || len(downloads) != 0 {
		t.Fatalf("the download is still listed: %v %v", downloads, err)
	}
	if a := e.assertInSync(e.engine(engine.Options{Records: store})).Find(engine.KindIso, "debian-12"); !a.Owned {
		t.Fatalf("with the record: %+v", a)
	}
	if a := e.plan(e.engine(engine.Options{})).Find(engine.KindIso, "debian-12"); !a.Conflicted() || a.Owned {
		t.Fatalf("without the record: %+v", a)
	}
	e.remove("isos/debian-12.yaml")
	if p := e.plan(e.engine(engine.Options{Prune: true})); p.Find(engine.KindIso, "debian-12-amd64-netinst") != nil {
		t.Fatalf("pruned without proof:\n%s", planText(p))
	}
	p := e.plan(e.engine(engine.Options{Prune: true, Records: store}))
	if a := p.Find(engine.KindIso, "debian-12-amd64-netinst"); a == nil || a.Action != vocab.ActionDelete {
		t.Fatalf("prune with the record:\n%s", planText(p))
	}
}
