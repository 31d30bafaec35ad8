package manifest

import (
	"encoding/json"
	"testing"
)

func TestSeedsLoad(t *testing.T) {
	set, err := LoadDir("testdata/seeds")
	if err != nil {
		t.Fatalf("seed manifests must load:\n%v", err)
	}
	counts := set.Counts()
	want := map[Kind]int{KindVirtualMachine: 5, KindTemplate: 1, KindIso: 1, KindContainer: 2}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s: %d resources, want %d", k, counts[k], n)
		}
	}
	vm := set.Get(KindVirtualMachine, "app-02-linked").(*VirtualMachine)
	if vm.Spec.FromTemplate == nil || !vm.Spec.FromTemplate.Linked || vm.Spec.FromTemplate.Name != "debian-12-tpl" {
		t.Errorf("fromTemplate object form: %+v", vm.Spec.FromTemplate)
	}
	refs := vm.References()
	if len(refs) != 1 || refs[0].Kind != KindTemplate || refs[0].External {
		t.Errorf("app-02-linked refs = %+v, want the declared Template", refs)
	}
	web := set.Get(KindVirtualMachine, "web01")
	if r := web.References(); len(r) != 1 || !r[0].External {
		t.Errorf("web01 refs = %+v, want an external template", r)
	}
	iso := set.Get(KindIso, "debian-12")
	if iso.Node() != "pve-node1" {
		t.Errorf("Iso spec.node not folded into metadata.node: %q", iso.Node())
	}
	app := set.Get(KindVirtualMachine, "app-01").(*VirtualMachine)
	if app.Spec.Image.Type != ImageURL || app.Spec.Disks[0].Slot != "scsi0" || app.Spec.Disks[0].Size.Bytes != 20<<30 || app.Spec.Net[0].Slot != "net0" {
		t.Errorf("app-01 normalisation: %+v %+v %+v", app.Spec.Image, app.Spec.Disks, app.Spec.Net)
	}
	vol := set.Get(KindVirtualMachine, "app-01-from-volume").(*VirtualMachine)
	if vol.Spec.Image.Type != ImageVolume {
		t.Errorf("volume image classified as %q", vol.Spec.Image.Type)
	}
	b, err := json.Marshal(app)
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["apiVersion"] != APIVersion || back["kind"] != "VirtualMachine" || back["spec"].(map[string]any)["vmid"].(float64) != 120 {
		t.Errorf("JSON shape: %s", b)
	}
}
