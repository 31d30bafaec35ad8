package manifest

import (
	"encoding/json"
	"testing"

	"github.com/proxmops/proxmops/internal/vocab"
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

func TestExamplesLoad(t *testing.T) {
	set, err := LoadDir("../../examples")
	if err != nil {
		t.Fatalf("examples must validate:\n%v", err)
	}
	counts := set.Counts()
	for _, k := range Kinds() {
		if counts[k] == 0 {
			t.Errorf("examples declare no %s; they must use every kind", k)
		}
	}
	for _, n := range set.Networks() {
		if n.Node() != "pve1" && n.Node() != "pve2" && n.Node() != "pve3" {
			t.Errorf("Network %s on node %q; the demo cluster has pve1-pve3", n.Name(), n.Node())
		}
	}
	// References resolve to declared resources or are marked external.
	dns := set.Get(KindContainer, "dns-01")
	var tmplRef *Ref
	for i, r := range dns.References() {
		if r.Kind == KindContainerTemplate {
			tmplRef = &dns.References()[i]
		}
	}
	if tmplRef == nil || tmplRef.External || tmplRef.Name != "debian-12-standard" {
		t.Errorf("dns-01 template ref = %+v, want the declared ContainerTemplate", tmplRef)
	}
	media := set.Get(KindContainer, "media").(*Container)
	for _, r := range media.References() {
		if r.Kind == KindContainerTemplate && (r.External || r.Name != "alpine-3-20") {
			t.Errorf("media's volume template should resolve to alpine-3-20: %+v", r)
		}
	}
	if got := media.Spec.Mountpoints[1].Slot; got != "mp1" {
		t.Errorf("second mount point slot = %q, want mp1", got)
	}
	k3s := set.Get(KindVirtualMachine, "k3s-server-1").(*VirtualMachine)
	if ic := k3s.Spec.CloudInit.EffectiveIPConfigs(); ic["net1"].String() != "ip=10.40.0.30/24" || ic["net0"].String() != "gw=192.168.1.1,ip=192.168.1.30/24" {
		t.Errorf("ipconfigs = %v", ic)
	}
	ci := set.Get(KindVirtualMachine, "ci-runner-1")
	for _, r := range ci.References() {
		if r.Path == "spec.net[0].bridge" && (r.External || r.Kind != KindSdnVnet) {
			t.Errorf("bridge labnet should resolve to the SdnVnet: %+v", r)
		}
	}
	if set.Get(KindVirtualMachine, "ci-runner-2").Meta().Sync() != vocab.SyncManual {
		t.Errorf("sync annotation not parsed")
	}
	bridge := set.Get(KindNetwork, "pve3-vmbr1")
	if r := bridge.References(); len(r) != 1 || r[0].External || r[0].Name != "pve3-bond0" {
		t.Errorf("pve3-vmbr1 port ref = %+v, want the declared bond", r)
	}
}

// TestJSONRoundTrip: a resource marshalled to JSON is a manifest again (JSON
// is YAML) that loads to the same JSON.
func TestJSONRoundTrip(t *testing.T) {
	set, err := LoadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Resources {
		first, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, errs := ParseFile("roundtrip.json", first)
		if len(errs) > 0 || len(again) != 1 {
			t.Fatalf("%s/%s: marshalled form does not load: %v\n%s", r.Kind(), r.Name(), errs, first)
		}
		second, _ := json.Marshal(again[0])
		if string(first) != string(second) {
			t.Errorf("%s/%s changes on a round trip:\n%s\n%s", r.Kind(), r.Name(), first, second)
		}
	}
}
