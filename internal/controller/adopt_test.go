package controller

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/server"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A guest made by hand and annotated for adoption is tagged and
// reconciled by the daemon, and its history says it was adopted, at
// which commit, by the commit's author.
func TestAdoptionIsRecordedInHistory(t *testing.T) {
	sim := startSim(t, 0.1, pvesim.GuestSpec{VMID: 440, Node: "pve1", Config: map[string]string{
		"name": "h", "cores": "1", "memory": "1024", "tags": "lab",
		"scsi0": "local-lvm:vm-440-disk-0,size=4G", "net0": "virtio=BC:24:11:00:04:40,bridge=vmbr0"}})
	repo := gittest.New(t)
	commit := repo.Commit("adopt h", map[string]string{"vms/h.yaml": vmManifest("h", 440, 2, `proxmops.dev/adopt="true"`)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/h", vocab.StatusSynced)
	g, _ := sim.Guest(440)
	if !strings.Contains(g.Config["tags"], engine.OwnerTag) || g.Config["cores"] != "2" {
		t.Fatalf("not adopted: %v", g.Config)
	}
	wantAdopted(t, e, "VirtualMachine/h", commit.String(), api.Actor{Kind: api.ActorCommit, Name: "Test"}, "VMID 440")
}

// wantAdopted fails unless key's history records its adoption at commit
// by actor, its message naming vmid ("VMID 440").
func wantAdopted(t *testing.T, e *env, key, commit string, actor api.Actor, vmid string) {
	t.Helper()
	var adopted *api.HistoryEntry
	for _, h := range e.history(key) {
		if h.Event == api.EventAdopted {
			adopted = &h
		}
	}
	if adopted == nil || adopted.Commit != commit || adopted.Actor == nil || *adopted.Actor != actor || !strings.Contains(adopted.Message, vmid) {
		t.Fatalf("history: %+v", e.history(key))
	}
}

var _ server.AdoptBackend = (*Controller)(nil)

// waitPasses waits for n more passes, each forced by a full sync.
func (e *env) waitPasses(n int) { e.passesAfter(n, e.c.SyncAll) }

// A hand-made guest at a declared VMID stays a Conflict over several
// passes of the daemon; an admin adopts it through the API (a viewer may
// not), after a dry run that shows the plan, its undeclared tag removed
// included; the adoption only tags it, is recorded with the commit and the
// user, and the next sync applies the rest. Adopting it again is a 409.
func TestAdoptThroughTheAPI(t *testing.T) {
	sim := startSim(t, 0.1, pvesim.GuestSpec{VMID: 441, Node: "pve1", Running: true, Config: map[string]string{
		"name": "h2", "cores": "1", "memory": "1024", "tags": "lab;old",
		"scsi0": "local-lvm:vm-441-disk-0,size=4G", "net0": "virtio=BC:24:11:00:04:41,bridge=vmbr0"}})
	repo := gittest.New(t)
	commit := repo.Commit("h2", map[string]string{"vms/h2.yaml": vmManifest("h2", 441, 2)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/h2", vocab.StatusConflict)
	before, _ := sim.Guest(441)
	w0 := writes(sim)
	e.waitPasses(3)
	if g, _ := sim.Guest(441); !maps.Equal(g.Config, before.Config) || writes(sim) != w0 {
		t.Fatalf("a Conflict was touched: %v (writes %d -> %d)", g.Config, w0, writes(sim))
	}
	e.waitStatus("VirtualMachine/h2", vocab.StatusConflict)
	c := serveAPI(t, e)
	const path = "/api/v1/resources/VirtualMachine/h2/adopt"

	var tok struct {
		Token string `json:"token"`
	}
	if st := c.do("POST", "/api/v1/tokens", map[string]string{"name": "ro", "role": "viewer"}, &tok); st != http.StatusCreated && st != http.StatusOK {
		t.Fatalf("token: %d", st)
	}
	req, _ := http.NewRequest("POST", c.Base+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("viewer adopt: %d", resp.StatusCode)
	}

	var dry api.AdoptResult
	if st := c.do("POST", path, api.AdoptRequest{DryRun: true}, &dry); st != http.StatusOK || !dry.DryRun || dry.Adopted || dry.VMID != 441 {
		t.Fatalf("dry run: %d %+v", st, dry)
	}
	var tags *vocab.Change
	fields := map[string]bool{}
	for i, ch := range dry.Plan.Changes {
		fields[ch.Field] = true
		if ch.Field == "tags" {
			tags = &dry.Plan.Changes[i]
		}
	}
	if tags == nil || !strings.Contains(tags.From, "old") || strings.Contains(tags.To, "old") || !strings.Contains(tags.To, engine.OwnerTag) || !fields["cores"] {
		t.Fatalf("the dry run's plan must show the tag removed and cores: %+v", dry.Plan)
	}
	if g, _ := sim.Guest(441); !maps.Equal(g.Config, before.Config) {
		t.Fatalf("a dry run changed the guest: %v", g.Config)
	}

	var res api.AdoptResult
	if st := c.do("POST", path, nil, &res); st != http.StatusOK || !res.Adopted || res.Revision != commit.String() {
		t.Fatalf("adopt: %d %+v", st, res)
	}
	wantAdopted(t, e, "VirtualMachine/h2", commit.String(), api.Actor{Kind: api.ActorUser, Name: "admin"}, "VMID 441")
	// The daemon's next sync applies the rest: the declared tags and the
	// ownership tag, 2 cores.
	e.waitFor("the adopted guest synced", func(l api.ResourceList) bool {
		g, _ := sim.Guest(441)
		r := find(l, "VirtualMachine/h2")
		return r != nil && r.Status == vocab.StatusSynced && g.Config["cores"] == "2"
	})
	if g, _ := sim.Guest(441); g.Config["tags"] != engine.AdoptedTag+";lab;"+engine.OwnerTag {
		t.Fatalf("tags after the sync: %q", g.Config["tags"])
	}
	var errBody struct {
		Error string `json:"error"`
	}
	// The sync's job may still hold the resource a moment after its status.
	st := 0
	for range 100 {
		if st = c.do("POST", path, nil, &errBody); !strings.Contains(errBody.Error, "already running") {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if st != http.StatusConflict || !strings.Contains(errBody.Error, "VirtualMachine/h2 is already adopted") {
		t.Fatalf("adopting again: %d %+v", st, errBody)
	}
}

// A refused adoption and a resource without a guest are 409s with the
// reason, an undeclared resource a 404.
func TestAdoptRefusedThroughTheAPI(t *testing.T) {
	sim := startSim(t, 0.1, pvesim.GuestSpec{VMID: 442, Node: "pve1", Config: map[string]string{
		"name": "locked", "cores": "1", "memory": "1024", "lock": "backup"}})
	repo := gittest.New(t)
	repo.Commit("two", map[string]string{"vms/locked.yaml": vmManifest("locked", 442, 1), "vms/fresh.yaml": vmManifest("fresh", 443, 1, "proxmops.dev/sync=manual")})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/locked", vocab.StatusConflict)
	c := serveAPI(t, e)
	for _, tc := range []struct {
		path string
		code int
		want string
	}{
		{"/api/v1/resources/VirtualMachine/locked/adopt", http.StatusConflict, "it is locked (backup)"},
		{"/api/v1/resources/VirtualMachine/fresh/adopt", http.StatusConflict, "is not adopted"},
		{"/api/v1/resources/VirtualMachine/nope/adopt", http.StatusNotFound, "not declared"},
	} {
		var errBody struct {
			Error string `json:"error"`
		}
		if st := c.do("POST", tc.path, nil, &errBody); st != tc.code || !strings.Contains(errBody.Error, tc.want) {
			t.Errorf("%s: %d %q, want %d %q", tc.path, st, errBody.Error, tc.code, tc.want)
		}
	}
	if g, _ := sim.Guest(442); strings.Contains(g.Config["tags"], engine.OwnerTag) {
		t.Fatalf("a refused adoption tagged the guest: %v", g.Config)
	}
}

// Two hand-made guests, each with a disk larger than its manifest
// declares and no adoption annotation: one adopted by `proxmops adopt`
// (its own engine and client, as the command builds them), the other by
// the UI's button (POST .../adopt over HTTP). The daemon then reconciles
// both pass after pass: each applies the rest of its manifest and ends
// Synced with its larger disk reported, never Failed; no disk is resized,
// no guest replaced, and each keeps the record of its adoption.
func TestAdoptedGuestsWithLargerDisksReconcile(t *testing.T) {
	sim := startSim(t, 0.1,
		pvesim.GuestSpec{VMID: 450, Node: "pve1", Config: map[string]string{"name": "by-cli", "cores": "1", "memory": "1024", "tags": "lab",
			"scsi0": "local-lvm:vm-450-disk-0,size=8G", "net0": "virtio=BC:24:11:00:04:50,bridge=vmbr0"}},
		pvesim.GuestSpec{VMID: 451, Node: "pve1", Config: map[string]string{"name": "by-ui", "cores": "1", "memory": "1024", "tags": "lab",
			"scsi0": "nfs-shared:451/vm-451-disk-0.qcow2,size=8G", "net0": "virtio=BC:24:11:00:04:51,bridge=vmbr0"}},
	)
	repo := gittest.New(t)
	repo.Commit("two", map[string]string{"vms/by-cli.yaml": vmManifest("by-cli", 450, 2), "vms/by-ui.yaml": vmManifest("by-ui", 451, 2)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/by-cli", vocab.StatusConflict)
	e.waitStatus("VirtualMachine/by-ui", vocab.StatusConflict)
	c := serveAPI(t, e)

	seen := map[string]int{} // history entries before the adoptions (the Conflict's)
	for _, key := range []string{"VirtualMachine/by-cli", "VirtualMachine/by-ui"} {
		seen[key] = len(e.history(key))
	}
	ds := e.c.currentDesired()
	cli := engine.New(simClient(t, sim), engine.Options{})
	ad, err := cli.PlanAdoption(context.Background(), ds.desired, ds.commit, "VirtualMachine/by-cli")
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.ApplyAdoption(context.Background(), ad, nil); err != nil {
		t.Fatal(err)
	}
	var res api.AdoptResult
	if st := c.do("POST", "/api/v1/resources/VirtualMachine/by-ui/adopt", nil, &res); st != http.StatusOK || !res.Adopted {
		t.Fatalf("adopt by the button: %d %+v", st, res)
	}
	e.waitFor("both adopted guests synced", func(l api.ResourceList) bool {
		a, b := find(l, "VirtualMachine/by-cli"), find(l, "VirtualMachine/by-ui")
		return a != nil && b != nil && a.Status == vocab.StatusSynced && b.Status == vocab.StatusSynced
	})
	e.waitPasses(3)
	var list api.ResourceList
	if st := c.do("GET", "/api/v1/resources", nil, &list); st != http.StatusOK {
		t.Fatalf("resources: %d", st)
	}
	for _, key := range []string{"VirtualMachine/by-cli", "VirtualMachine/by-ui"} {
		r := find(list, key)
		if r == nil || r.Status != vocab.StatusSynced || !strings.Contains(r.Reason, "disk scsi0 is 8G on the cluster but 4G in the manifest: never shrunk") {
			t.Errorf("%s: want Synced with the larger disk reported: %+v", key, r)
		}
		for _, h := range e.history(key)[seen[key]:] {
			if h.Event == api.EventFailed {
				t.Errorf("%s failed after its adoption: %+v", key, h)
			}
		}
	}
	if r := find(list, "VirtualMachine/by-ui"); r == nil || !strings.Contains(r.Reason, "disk scsi0 is on nfs-shared, the manifest says local-lvm (accepted as it is, never moved)") {
		t.Errorf("the other storage is not reported: %+v", r)
	}
	for _, vmid := range []int{450, 451} {
		g, _ := sim.Guest(vmid)
		if g.Config["cores"] != "2" || !strings.Contains(g.Config["scsi0"], "size=8G") ||
			g.Config["tags"] != engine.AdoptedTag+";lab;"+engine.OwnerTag {
			t.Errorf("VMID %d after the passes: %v", vmid, g.Config)
		}
	}
	for _, r := range sim.Requests() {
		if strings.HasSuffix(r.Path, "/resize") || strings.HasSuffix(r.Path, "/move_disk") || r.Method == "DELETE" ||
			r.Method == "POST" && (strings.HasSuffix(r.Path, "/qemu") || strings.HasSuffix(r.Path, "/clone")) {
			t.Errorf("a resize or replacement: %+v", r)
		}
	}
}

// A guest adopted with adopted-by-proxmops but before proxmops recorded
// the disk sizes: its larger disk is reported (OutOfSync), not accepted
// blindly. The UI's button (POST .../adopt) completes the adoption, which
// writes only the description's record (the tags are there already), and
// the daemon's next pass ends it Synced with the disk accepted.
func TestAdoptButtonCompletesAnAdoptionWithoutRecord(t *testing.T) {
	sim := startSim(t, 0.1, pvesim.GuestSpec{VMID: 460, Node: "pve1", Config: map[string]string{"name": "older", "cores": "2", "memory": "1024",
		"tags": engine.AdoptedTag + ";lab;" + engine.OwnerTag, "scsi0": "local-lvm:vm-460-disk-0,size=8G", "net0": "virtio=BC:24:11:00:04:60,bridge=vmbr0"}})
	repo := gittest.New(t)
	repo.Commit("older", map[string]string{"vms/older.yaml": vmManifest("older", 460, 2)})
	e := newEnv(t, sim, repo, "").start()
	r := e.waitStatus("VirtualMachine/older", vocab.StatusOutOfSync)
	if !strings.Contains(r.Reason, "its size at adoption is not recorded") {
		t.Fatalf("before: %+v", r)
	}
	c := serveAPI(t, e)
	var res api.AdoptResult
	if st := c.do("POST", "/api/v1/resources/VirtualMachine/older/adopt", nil, &res); st != http.StatusOK || !res.Adopted ||
		!strings.Contains(res.Plan.Reason, "completing the adoption") {
		t.Fatalf("adopt: %d %+v", st, res)
	}
	if g, _ := sim.Guest(460); g.Config["description"] != engine.AdoptedLinePrefix+" scsi0=8G" {
		t.Fatalf("the record: %v", g.Config)
	}
	r = e.waitStatus("VirtualMachine/older", vocab.StatusSynced)
	if !strings.Contains(r.Reason, "never shrunk (8G at adoption, accepted)") {
		t.Fatalf("after: %+v", r)
	}
	h := e.history("VirtualMachine/older")
	if !slices.ContainsFunc(h, func(x api.HistoryEntry) bool {
		return x.Event == api.EventAdopted && strings.Contains(x.Message, "completed the adoption of VMID 460")
	}) {
		t.Errorf("history: %+v", h)
	}
}
