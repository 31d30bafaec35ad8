package server

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

func TestManifestAndLiveConfigAreReadsForLoggedInUsersOnly(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)
	anon := e.client()
	for _, p := range []string{"/api/v1/resources/VirtualMachine/app-01/manifest", "/api/v1/resources/VirtualMachine/app-01/live", "/api/v1/resources/VirtualMachine/app-01/tasklog"} {
		anon.expect(401, "GET", p, nil)
	}
	if calls := e.backend.Calls(); len(calls) != 0 {
		t.Fatalf("an anonymous read reached the backend: %v", calls)
	}
	var m api.Manifest
	json.Unmarshal(v.expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01/manifest", nil), &m)
	if m.File != "vms/app-01.yaml" || m.Text == "" || m.Revision != "abc123" {
		t.Fatalf("manifest: %+v", m)
	}
	var l api.Live
	json.Unmarshal(v.expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01/live", nil), &l)
	if l.Source != "proxmox" || l.Data["cores"] != float64(2) {
		t.Fatalf("live: %+v", l)
	}
	var tl api.TaskLog
	json.Unmarshal(v.expect(200, "GET", "/api/v1/resources/VirtualMachine/app-01/tasklog", nil), &tl)
	if !tl.Running || len(tl.Lines) != 1 {
		t.Fatalf("task log: %+v", tl)
	}
	v.expect(404, "GET", "/api/v1/resources/VirtualMachine/ghost/tasklog", nil)
	// A resource only on the cluster has no manifest; an unknown one has neither.
	v.expect(404, "GET", "/api/v1/resources/VirtualMachine/foreign/manifest", nil)
	v.expect(404, "GET", "/api/v1/resources/VirtualMachine/ghost/live", nil)
}

func TestSyncOptionsReachTheBackendAndADryRunAnswersThePlan(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)
	v.expect(403, "POST", "/api/v1/sync", map[string]bool{"dryRun": true})
	a.expect(202, "POST", "/api/v1/sync", nil)
	a.expect(202, "POST", "/api/v1/resources/VirtualMachine/app-01/sync", map[string]bool{"reboot": true})
	a.expect(400, "POST", "/api/v1/sync", map[string]any{"prune": "yes"})
	a.expect(400, "POST", "/api/v1/sync", map[string]any{"force": true})
	var dry struct {
		Status string
		Plan   api.Plan
	}
	json.Unmarshal(a.expect(200, "POST", "/api/v1/sync", map[string]bool{"prune": true, "dryRun": true}), &dry)
	if dry.Plan.Summary.Delete != 1 || len(dry.Plan.Actions) != 1 || dry.Status != "dry run of a full sync: nothing was changed" {
		t.Fatalf("dry run: %+v", dry)
	}
	want := []string{"SyncAll", "SyncOne VirtualMachine/app-01 {Prune:false DryRun:false Reboot:true}", "SyncAll {Prune:true DryRun:true Reboot:false}"}
	if got := e.backend.Calls(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("calls: %q, want %q", got, want)
	}
}
