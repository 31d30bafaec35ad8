package server

import (
	"encoding/json"
	"testing"

	"github.com/proxmops/proxmops/internal/api"
)

func TestManifestAndLiveConfigAreReadsForLoggedInUsersOnly(t *testing.T) {
	e := newEnv(t)
	a := e.admin()
	v := e.viewer(a)
	anon := e.client()
	for _, p := range []string{"/api/v1/resources/VirtualMachine/app-01/manifest", "/api/v1/resources/VirtualMachine/app-01/live"} {
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
	// A resource only on the cluster has no manifest; an unknown one has neither.
	v.expect(404, "GET", "/api/v1/resources/VirtualMachine/foreign/manifest", nil)
	v.expect(404, "GET", "/api/v1/resources/VirtualMachine/ghost/live", nil)
}
