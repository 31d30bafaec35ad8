package engine

import (
	"testing"

	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

func guestWith(cfg map[string]string, status string) *Guest {
	eff := map[string]string{}
	for k, v := range cfg {
		eff[k] = v
	}
	return &Guest{VMID: 120, Type: "qemu", Node: "pve1", Status: status, Owned: true, Read: true,
		Current: cfg, Effective: eff, Pending: map[string]string{}, PendingDelete: map[string]bool{}}
}

func TestPendingReported(t *testing.T) {
	g := guestWith(map[string]string{"cores": "2"}, "running")
	g.Effective["cores"] = "4"
	g.Pending["cores"] = "4"
	d := &pvefields.Diff{Pending: []vocab.Change{{Field: "cores", Path: "spec.cores", From: "2", To: "4"}}}
	a := &Action{Action: vocab.ActionNone}
	planUpdate(a, g, d, updateOptions{})
	if a.Action != vocab.ActionNone || !a.NeedsReboot || a.Status != vocab.StatusOutOfSync {
		t.Fatalf("without applyMode: %+v", a)
	}
	a = &Action{Action: vocab.ActionNone}
	planUpdate(a, g, d, updateOptions{rebootIfNeeded: true})
	if a.Action != vocab.ActionReboot || !a.NeedsReboot {
		t.Fatalf("with applyMode reboot: %+v", a)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		a    *Action
		want vocab.Health
	}{
		{&Action{Kind: KindVirtualMachine, Action: vocab.ActionCreate, Status: vocab.StatusOutOfSync}, vocab.HealthMissing},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusProgressing, Observed: map[string]any{"status": "running"}}, vocab.HealthProgressing},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "running"}}, vocab.HealthHealthy},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusOutOfSync, Observed: map[string]any{"status": "stopped"}, wantRunning: true}, vocab.HealthDegraded},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "stopped"}}, vocab.HealthHealthy},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusConflict, Observed: map[string]any{"status": "running"}}, vocab.HealthUnknown},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusSynced, Observed: map[string]any{"status": "paused"}}, vocab.HealthSuspended},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusFailed, Observed: map[string]any{"status": "running"}}, vocab.HealthDegraded},
		{&Action{Kind: KindVirtualMachine, Status: vocab.StatusUnknown}, vocab.HealthUnknown},
		{&Action{Kind: KindVirtualMachine}, vocab.HealthUnknown},
		{&Action{Kind: KindTemplate, Status: vocab.StatusSynced, Observed: map[string]any{"status": "stopped"}}, vocab.HealthHealthy},
	}
	for i, tt := range tests {
		if got := HealthOf(tt.a); got != tt.want {
			t.Errorf("%d: %s, want %s", i, got, tt.want)
		}
	}
}
