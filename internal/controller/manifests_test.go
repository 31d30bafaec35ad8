package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/vocab"
)

func TestDocumentAtCutsOneYAMLDocumentWithItsComments(t *testing.T) {
	file := "# first\nkind: A\nname: a\n---\n# the second one\nkind: B\nname: b\n...\n---\nkind: C\n"
	for _, tc := range []struct {
		line int
		want string
	}{
		{2, "# first\nkind: A\nname: a\n"},
		{6, "# the second one\nkind: B\nname: b\n"},
		{10, "kind: C\n"},
		{0, file}, // unknown line: the whole file rather than nothing
	} {
		if got := documentAt([]byte(file), tc.line); got != tc.want {
			t.Errorf("line %d: got %q, want %q", tc.line, got, tc.want)
		}
	}
}

func TestManifestIsTheDocumentAsInGitAndLiveIsReadFromProxmox(t *testing.T) {
	sim := startSim(t, 0)
	repo := gittest.New(t)
	// Two documents in one file, with a comment kept in the answer.
	doc := "# the web tier\n" + vmManifest("web", 361, 2)
	repo.Commit("vms", map[string]string{"vms/all.yaml": vmManifest("db", 362, 1) + "---\n" + doc})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/web", vocab.StatusSynced)
	ctx := context.Background()

	m, err := e.c.Manifest(ctx, "VirtualMachine", "web")
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != doc || m.File != "vms/all.yaml" || len(m.Revision) != 40 {
		t.Fatalf("manifest: %+v\nwant text %q", m, doc)
	}
	if _, err := e.c.Manifest(ctx, "VirtualMachine", "nope"); !errors.Is(err, api.ErrNotFound) {
		t.Fatalf("unknown resource: %v", err)
	}

	// The create's task log, as Proxmox has it.
	tl, err := e.c.TaskLog(ctx, "VirtualMachine", "web")
	if err != nil || !strings.Contains(tl.Task, ":361:root@pam") || tl.Running || len(tl.Lines) == 0 || tl.Lines[len(tl.Lines)-1] != "TASK OK" {
		t.Fatalf("task log: %+v, %v", tl, err)
	}

	// Changed behind proxmops' back: the live read shows it before any pass.
	if err := sim.MutateGuest(361, func(conf map[string]string) { conf["cores"], conf["cipassword"] = "6", "hunter2 hunter2" }); err != nil {
		t.Fatal(err)
	}
	l, err := e.c.Live(ctx, "VirtualMachine", "web")
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != "proxmox" || l.Path != "/nodes/pve1/qemu/361/config" || fmt.Sprint(l.Data["cores"]) != "6" || l.Data["name"] != "web" {
		t.Fatalf("live: %+v", l)
	}
	if pw := l.Data["cipassword"]; pw != "**********" {
		t.Fatalf("cipassword is shown as %v", pw)
	}
	if b, _ := json.Marshal(l); strings.Contains(string(b), "hunter2") {
		t.Fatal("the live answer carries the password")
	}
}
