package engine_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// On a cluster whose tag-style is case-sensitive=1,ordering=config,
// adopting a guest keeps its own tags as a person wrote them (case and
// order) and only adds proxmops' tags; the adopted guest is then in sync.
func TestAdoptionKeepsTheGuestsTagCaseOnACaseSensitiveCluster(t *testing.T) {
	e := newEnv(t)
	asRoot(t, e, "PUT", "/cluster/options", url.Values{"tag-style": {"case-sensitive=1,ordering=config"}})
	handMadeClone(t, e)
	asRoot(t, e, "PUT", "/nodes/pve1/qemu/130/config", url.Values{"tags": {"Web;Prod"}})
	e.write("vms/app-02.yaml", strings.Replace(adoptClone, "tags: [web]", "tags: [Web, Prod]", 1))
	eng := e.engine(engine.Options{})
	e.mustApply(eng)
	if got, want := e.guest(130).Config["tags"], "Web;Prod;"+engine.OwnerTag+";"+engine.AdoptedTag; got != want {
		t.Fatalf("tags after adoption %q, want %q (the guest's own tags as they were)", got, want)
	}
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02"); a.Status != vocab.StatusSynced {
		t.Fatalf("after adoption: %s %s %+v", a.Status, a.Reason, a.Changes)
	}
	// A manifest whose tag differs in case alone is a change there.
	e.write("vms/app-02.yaml", strings.Replace(adoptClone, "tags: [web]", "tags: [web, Prod]", 1))
	if a := e.plan(eng).Find(engine.KindVirtualMachine, "app-02"); a.Status == vocab.StatusSynced {
		t.Fatal("web and Web are different tags on a case-sensitive cluster")
	}
}

// With user-tag-access user-allow=list and a token without Sys.Modify on
// /, the plan names the tag it may not set before anything happens
// (GuestHelpers.pm assert_tag_permissions) instead of failing on Proxmox's
// refusal.
func TestPlanNamesATagPermissionTheTokenLacks(t *testing.T) {
	e := newEnv(t)
	asRoot(t, e, "PUT", "/cluster/options", url.Values{"user-tag-access": {"user-allow=list,user-allow-list=" + engine.OwnerTag}})
	e.sim.SetTokenPrivileges(allPrivilegesBut("Sys.Modify"))
	e.write("vm.yaml", strings.Replace(snapVMYAML("1", "local-lvm", "stopped"), "  node: pve1\n", "  node: pve1\n  tags: [web]\n", 1))
	eng := e.engine(engine.Options{})
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "snappy")
	want := "the API token lacks Sys.Modify on /, needed to set or remove the tag 'web' (the datacenter's user-tag-access is list and does not allow it)"
	if a.Status != vocab.StatusFailed || !strings.Contains(a.Reason, want) {
		t.Fatalf("want the plan to name the tag permission %q:\n%s", want, planText(p))
	}
	if _, ok := e.sim.Guest(330); ok {
		t.Fatal("planning created the guest")
	}
	_, rep := e.apply(eng)
	if _, ok := e.sim.Guest(330); ok || rep.Failed != 1 {
		t.Fatalf("a refused plan was applied: %+v", rep)
	}
}
