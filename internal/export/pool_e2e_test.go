package export_test

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/vocab"
)

// --kind pool writes a Pool per pool whose ID is a manifest name, one
// proxmops does not own with proxmops.dev/adopt; a guest's manifest names
// its pool; the first sync of the export adopts the pool by marking its
// comment and changes nothing else, and the next plan is in sync.
func TestExportPoolsAndAdoptThem(t *testing.T) {
	c := newCluster(t)
	c.call("POST", "/pools", "poolid", "prod", "comment", "Production")
	c.call("POST", "/pools", "poolid", "own", "comment", "Mine ("+engine.OwnerMark+")")
	c.call("POST", "/pools", "poolid", "Team")
	c.call("POST", "/nodes/pve1/qemu", "vmid", "100", "name", "web", "cores", "1", "memory", "512", "pool", "prod")
	res := export1(t, c, export.Options{Kinds: []string{"pools", "vm"}, VMIDs: "100"})
	wantFiles(t, res, "pools/own.yaml pools/prod.yaml vms/web.yaml")
	if len(res.Skipped) != 1 || !strings.Contains(res.Skipped[0], "pool Team: its ID is not a manifest name") {
		t.Fatalf("skipped: %q", res.Skipped)
	}
	fileWith(t, res, "pools/prod.yaml", "kind: Pool", "name: prod", "proxmops.dev/adopt: \"true\"", "comment: Production")
	own := file(t, res, "pools/own.yaml")
	if !strings.Contains(own, "comment: Mine\n") || strings.Contains(own, "proxmops.dev/adopt") {
		t.Errorf("pools/own.yaml:\n%s", own)
	}
	if y := file(t, res, "vms/web.yaml"); !strings.Contains(y, "pool: prod") {
		t.Errorf("vms/web.yaml lacks its pool:\n%s", y)
	}

	ad := adopt(t, c, res)
	p := ad.plan()
	a := p.Find(engine.KindPool, "prod")
	if a.Action != vocab.ActionUpdate || !a.Adopt || len(a.Changes) != 1 || a.Changes[0].To != "Production ("+engine.OwnerMark+")" {
		t.Fatalf("adoption of prod: %+v", a)
	}
	if a := p.Find(engine.KindPool, "own"); a.Status != vocab.StatusSynced {
		t.Fatalf("own: %+v", a)
	}
	if web := p.Find(engine.KindVirtualMachine, "web"); web == nil || len(web.Changes) != 1 || web.Changes[0].Field != "tags" {
		t.Fatalf("web plans more than its adoption: %+v", web)
	}
	ad.applyInSync(p)
}
