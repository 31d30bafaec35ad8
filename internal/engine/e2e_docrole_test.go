package engine_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/testvm"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// The role docs/configuration.md tells users to create is
// config.RequiredPrivileges (the config package's docs test keeps the two
// equal). A privilege-separated token holding exactly that role, checked
// by pvesim as Proxmox checks it, must be enough for everything proxmops
// does with every kind: create, change with a snapshot first, roll back,
// and prune.
func TestTheDocumentedRoleManagesEveryKind(t *testing.T) {
	e := newEnvWith(t, func(o *pvesim.Options) { o.TokenPrivileges = config.RequiredPrivilegeNames() })
	ctx := context.Background()
	e.write("sdn/zones.yaml", testvm.Example(t, "sdn/zones.yaml"))
	e.write("sdn/vnets.yaml", testvm.Example(t, "sdn/vnets.yaml"))
	e.write("net/vmbr7.yaml", hostBridge)
	e.write("fw/firewall.yaml", testvm.Example(t, "firewall/firewall.yaml"))
	e.write("isos/debian-12.yaml", seedIso)
	e.write("cts/debian-12-standard.yaml", testvm.Example(t, "container-templates/debian-12-standard.yaml"))
	e.write("cts/dns-01.yaml", testvm.Example(t, "containers/dns-01.yaml"))
	e.write("cts/legacy.yaml", strings.Replace(privilegedCT, "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", "debian-12-standard", 1))
	e.write("templates/debian-12-tpl.yaml", seedTemplate)
	e.write("pools/prod.yaml", testvm.Example(t, "pools/prod.yaml"))
	e.write("storage/nas-iso.yaml", testvm.Example(t, "storage/nas-iso.yaml"))
	e.write("vms/app-02.yaml", seedClone)
	e.write("vms/web01.yaml", seedUserData)
	app01 := seedVMImage + "  startup: { order: 2 }\n  snapshots:\n    beforeChange: true\n  pool: prod\n"
	e.write("vms/app-01.yaml", app01)
	e.write("backup/nightly.yaml", testvm.Example(t, "backup/nightly.yaml"))
	rec := openStore(t) // the ownership records of storages, shared by the engines
	eng := e.engine(engine.Options{Concurrency: 4, Records: rec})
	p := e.plan(eng)
	created := map[string]bool{}
	for _, a := range p.Actions {
		if a.Action == vocab.ActionCreate {
			created[a.Kind] = true
		}
	}
	for _, k := range []string{engine.KindFirewallAlias, engine.KindFirewallIPSet, engine.KindSdnZone, engine.KindSdnVnet, engine.KindNetwork, engine.KindIso, engine.KindContainerTemplate,
		engine.KindPool, engine.KindStorage, engine.KindTemplate, engine.KindVirtualMachine, engine.KindContainer, engine.KindBackupJob} {
		if !created[k] {
			t.Fatalf("the plan creates no %s:\n%s", k, planText(p))
		}
	}
	e.converge(eng)
	e.requireInSync(eng)

	// A change of a guest with snapshots.beforeChange snapshots it first.
	e.write("vms/app-01.yaml", strings.Replace(app01, "cores: 2", "cores: 4", 1))
	e.converge(eng)
	if own, _ := snapshotNames(t, e, "qemu", 120); len(own) != 1 {
		t.Fatalf("app-01 has snapshots %v, want the one taken before the change", own)
	}
	if _, err := eng.Rollback(ctx, e.desired(), engine.KindVirtualMachine, "app-01", "", nil); err != nil {
		t.Fatalf("rollback: %v", err)
	}

	// Prune removes everything again, downloads included.
	for _, f := range []string{"sdn/zones.yaml", "sdn/vnets.yaml", "net/vmbr7.yaml", "isos/debian-12.yaml", "cts/debian-12-standard.yaml",
		"cts/dns-01.yaml", "cts/legacy.yaml", "pools/prod.yaml", "storage/nas-iso.yaml", "templates/debian-12-tpl.yaml", "vms/app-02.yaml", "vms/web01.yaml", "vms/app-01.yaml", "backup/nightly.yaml"} {
		e.remove(f)
	}
	e.write("keep.yaml", isoManifest) // prune never runs on an empty load
	pruner := e.engine(engine.Options{Concurrency: 4, Prune: true, Records: rec})
	rep := e.converge(pruner)
	deleted := map[string]int{}
	for _, r := range rep.Results {
		if r.Action == vocab.ActionDelete {
			deleted[r.Kind]++
		}
	}
	for _, k := range []string{engine.KindSdnZone, engine.KindSdnVnet, engine.KindNetwork, engine.KindIso, engine.KindContainerTemplate,
		engine.KindPool, engine.KindStorage, engine.KindTemplate, engine.KindVirtualMachine, engine.KindContainer, engine.KindBackupJob} {
		if deleted[k] == 0 {
			t.Errorf("prune deleted no %s: %v", k, deleted)
		}
	}
	e.requireInSync(pruner)
}
