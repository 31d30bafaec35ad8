package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/store"
)

// proxmops adopt over the CLI against the simulator: it shows the plan
// with the adoption (the undeclared tag's removal included), tags the
// guest and nothing else, and records "adopted" in the daemon's history
// with the commit and the OS user; a second run has nothing to do.
// Its disk, larger than declared, stays accepted: apply after apply
// reports it and succeeds, never shrinks it.
func TestAdoptCommand(t *testing.T) {
	sim, repo := cliEnv(t)
	db := filepath.Join(t.TempDir(), "proxmops.db")
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", db)
	addApp01(t, sim, "tags", "old", "scsi0", "local-lvm:vm-120-disk-0,size=32G")
	common := cliArgs(sim, repo)
	code, out, errOut := runCLI(t, append([]string{"adopt", "VirtualMachine/app-01"}, common...)...)
	if code != 0 || !strings.Contains(out, "adopt") || !strings.Contains(out, "tags") || !strings.Contains(out, "old") ||
		!strings.Contains(out, "adopted VirtualMachine/app-01") {
		t.Fatalf("adopt: %d\n%s%s", code, out, errOut)
	}
	g, _ := sim.Guest(120)
	if g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";old" || g.Config["cores"] != "1" {
		t.Fatalf("want the ownership tags only: %v", g.Config)
	}
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	h, err := st.History(context.Background(), "VirtualMachine", "app-01", 0)
	st.Close()
	if err != nil || len(h) != 1 || h[0].Event != api.EventAdopted || h[0].Actor == nil || *h[0].Actor != (api.Actor{Kind: api.ActorCLI, Name: cliUser()}) || cliUser() == "" ||
		h[0].Commit != "local" || !strings.Contains(h[0].Message, "VMID 120") {
		t.Fatalf("history: %+v %v", h, err)
	}
	if d := g.Config["description"]; d != engine.AdoptedLinePrefix+" scsi0=32G" {
		t.Fatalf("the record of the sizes at adoption: %q", d)
	}
	code, out, errOut = runCLI(t, append([]string{"adopt", "VirtualMachine/app-01"}, common...)...)
	if code != 0 || !strings.Contains(out, "VirtualMachine/app-01 is already adopted: it carries") || !strings.HasSuffix(out, "nothing to do\n") {
		t.Fatalf("adopting again: %d\n%s%s", code, out, errOut)
	}
	for i := range 2 {
		code, out, errOut = runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
		if code != 0 || !strings.Contains(out, " 0 failed") || i == 0 && !strings.Contains(out, "disk scsi0 is 32G on the cluster but 20G in the manifest: never shrunk (32G at adoption, accepted)") {
			t.Fatalf("apply %d after the adoption: %d\n%s%s", i, code, out, errOut)
		}
	}
	code, out, errOut = runCLI(t, append([]string{"plan", "--output", "json"}, common...)...)
	if code != 0 || !strings.Contains(out, `"Synced": 1`) || !strings.Contains(out, `"reason": "in sync; disk scsi0 is 32G on the cluster but 20G in the manifest: never shrunk`) {
		t.Fatalf("plan after the applies: %d\n%s%s", code, out, errOut)
	}
	if g, _ := sim.Guest(120); g.Config["cores"] != "2" || !strings.Contains(g.Config["scsi0"], "size=32G") {
		t.Fatalf("after apply: %v", g.Config)
	}
}

// proxmops apply of a manifest annotated proxmops.dev/adopt adopts the
// guest and records "adopted" in the daemon's history, with the revision
// and the OS user, as the daemon and proxmops adopt do.
func TestApplyRecordsAnAnnotatedAdoption(t *testing.T) {
	sim, repo := cliEnv(t)
	db := filepath.Join(t.TempDir(), "proxmops.db")
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", db)
	addApp01(t, sim)
	annotated := strings.Replace(cliVM, "  node: pve1\n", "  node: pve1\n  annotations:\n    proxmops.dev/adopt: \"true\"\n", 1)
	if err := os.WriteFile(filepath.Join(repo, "app-01.yaml"), []byte(annotated), 0o644); err != nil {
		t.Fatal(err)
	}
	common := cliArgs(sim, repo)
	code, out, errOut := runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
	if code != 0 || !strings.Contains(out, "adopt") || strings.Contains(out+errOut, "Warning") {
		t.Fatalf("apply: %d\n%s%s", code, out, errOut)
	}
	if g, _ := sim.Guest(120); !strings.Contains(g.Config["tags"], engine.OwnerTag) || !strings.Contains(g.Config["tags"], engine.AdoptedTag) {
		t.Fatalf("not adopted: %v", g.Config)
	}
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, err := st.History(context.Background(), "VirtualMachine", "app-01", 0)
	if err != nil || len(h) != 1 || h[0].Event != api.EventAdopted || h[0].Actor == nil || *h[0].Actor != (api.Actor{Kind: api.ActorCLI, Name: cliUser()}) || h[0].Commit != "local" ||
		!strings.Contains(h[0].Message, "VMID 120") || !strings.Contains(h[0].Message, "annotated") {
		t.Fatalf("history: %+v %v", h, err)
	}
}

// A guest adopted before proxmops recorded adoptions carries the ownership
// tag alone, so its larger disk fails like one proxmops made; `proxmops
// adopt` run again completes the adoption, says so, and from then on the
// disk is accepted; run once more it has nothing to do.
func TestAdoptCommandCompletesAnOlderAdoption(t *testing.T) {
	sim, repo := cliEnv(t)
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", filepath.Join(t.TempDir(), "proxmops.db"))
	addApp01(t, sim, "cores", "2", "tags", engine.OwnerTag, "scsi0", "local-lvm:vm-120-disk-0,size=32G")
	common := cliArgs(sim, repo)
	code, out, errOut := runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
	if code != 1 || !strings.Contains(out, "shrinking disks is not supported") {
		t.Fatalf("apply before: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"adopt", "VirtualMachine/app-01"}, common...)...)
	if code != 0 || !strings.Contains(out, "completed the adoption of VirtualMachine/app-01, which proxmops owned already: added "+engine.AdoptedTag+
		" and recorded its disk sizes (scsi0=32G)") {
		t.Fatalf("adopt: %d\n%s%s", code, out, errOut)
	}
	if g, _ := sim.Guest(120); g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag || g.Config["description"] != engine.AdoptedLinePrefix+" scsi0=32G" {
		t.Fatalf("after adopt: %v", g.Config)
	}
	code, out, errOut = runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
	if code != 0 || !strings.Contains(out, " 0 failed") {
		t.Fatalf("apply after: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"plan", "--output", "json"}, common...)...)
	if code != 0 || !strings.Contains(out, `"Synced": 1`) || !strings.Contains(out, "never shrunk (32G at adoption, accepted)") {
		t.Fatalf("plan after: %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"adopt", "VirtualMachine/app-01"}, common...)...)
	if code != 0 || !strings.Contains(out, "is already adopted") {
		t.Fatalf("adopt again: %d\n%s%s", code, out, errOut)
	}
}
