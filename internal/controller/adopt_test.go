package controller

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// A guest made by hand and annotated for adoption is tagged and
// reconciled by the daemon, and its history says it was adopted, at
// which commit.
func TestAdoptionIsRecordedInHistory(t *testing.T) {
	sim := startSim(t, 0.1)
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 440, Node: "pve1", Config: map[string]string{
		"name": "h", "cores": "1", "memory": "1024", "tags": "lab",
		"scsi0": "local-lvm:vm-440-disk-0,size=4G", "net0": "virtio=BC:24:11:00:04:40,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	repo := newGitRepo(t)
	commit := repo.commit("adopt h", map[string]string{"vms/h.yaml": vmManifest("h", 440, 2, `proxmops.dev/adopt="true"`)})
	e := newEnv(t, sim, repo, "").start()
	e.waitStatus("VirtualMachine/h", vocab.StatusSynced)
	g, _ := sim.Guest(440)
	if !strings.Contains(g.Config["tags"], engine.OwnerTag) || g.Config["cores"] != "2" {
		t.Fatalf("not adopted: %v", g.Config)
	}
	var adopted *api.HistoryEntry
	for _, h := range e.history("VirtualMachine/h") {
		if h.Event == api.EventAdopted {
			adopted = &h
		}
	}
	if adopted == nil || adopted.Commit != commit.String() || !strings.Contains(adopted.Message, "VMID 440") {
		t.Fatalf("history: %+v", e.history("VirtualMachine/h"))
	}
}
