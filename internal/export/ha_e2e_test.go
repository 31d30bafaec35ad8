package export_test

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/export"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Exported guests under HA carry spec.ha (what differs from Proxmox's
// defaults); --kind harule writes the rules whose guests are exported
// with them (by their manifest names, nodes with priorities) and refuses
// one naming a guest it does not write; the first sync adopts the guests
// and the rule (its comment's mark) and changes no HA setting; the next
// plan is in sync.
func TestExportHAAndAdoptIt(t *testing.T) {
	c := newCluster(t)
	for _, g := range [][2]string{{"100", "web"}, {"101", "db"}, {"102", "other"}} {
		c.call("POST", "/nodes/pve1/qemu", "vmid", g[0], "name", g[1], "cores", "1", "memory", "512")
	}
	c.call("POST", "/cluster/ha/resources", "sid", "vm:100", "state", "stopped", "max_restart", "3", "failback", "0", "comment", "front")
	c.call("POST", "/cluster/ha/resources", "sid", "vm:101", "state", "ignored")
	c.call("POST", "/cluster/ha/resources", "sid", "vm:102", "state", "ignored")
	c.call("POST", "/cluster/ha/rules", "rule", "web-db", "type", "node-affinity", "resources", "vm:100,vm:101", "nodes", "pve1:2,pve2", "comment", "prefer pve1")
	c.call("POST", "/cluster/ha/rules", "rule", "with-other", "type", "node-affinity", "resources", "vm:102", "nodes", "pve2")
	res := export1(t, c, export.Options{Kinds: []string{"vm", "harule"}, VMIDs: "100,101"})
	fileWith(t, res, "vms/web.yaml", "state: stopped", "maxRestart: 3", "failback: false", "comment: front")
	if db := file(t, res, "vms/db.yaml"); !strings.Contains(db, "state: ignored") {
		t.Errorf("vms/db.yaml:\n%s", db)
	}
	fileWith(t, res, "ha/rule-web-db.yaml", "kind: HARule", "proxmops.dev/adopt: \"true\"", "type: node-affinity", "- web", "- db", "node: pve1", "priority: 2", "node: pve2", "comment: prefer pve1")
	if len(res.Refused) != 1 || !strings.Contains(res.Refused[0], "HARule with-other: names vm:102, which this export does not write") {
		t.Fatalf("refused: %q", res.Refused)
	}

	ad := adopt(t, c, res)
	p := ad.plan()
	if a := p.Find(engine.KindHARule, "web-db"); a.Action != vocab.ActionUpdate || !a.Adopt || len(a.Changes) != 1 {
		t.Fatalf("adoption of the rule: %+v", a)
	}
	for _, name := range []string{"web", "db"} {
		for _, ch := range p.Find(engine.KindVirtualMachine, name).Changes {
			if strings.HasPrefix(ch.Path, "spec.ha") {
				t.Errorf("%s: the export's spec.ha plans %+v", name, ch)
			}
		}
	}
	ad.applyInSync(p)
}
