package export

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// Every managed field of the guest tables has an export reader, and every
// reader reads a managed field: the export cannot leave a field out, nor
// write one the engine does not manage.
func TestEveryFieldRowIsExported(t *testing.T) {
	qemu, ct := pvefields.FieldRows(engine.KindVirtualMachine), pvefields.FieldRows(engine.KindContainer)
	if len(qemu) == 0 || len(ct) == 0 {
		t.Fatalf("no field rows: qemu %v, container %v", qemu, ct)
	}
	for _, k := range qemu {
		if qemuReaders[k] == nil {
			t.Errorf("qemu field %s has no export reader", k)
		}
	}
	for _, k := range ct {
		if ctReaders[k] == nil {
			t.Errorf("container field %s has no export reader", k)
		}
	}
	for k := range qemuReaders {
		if !slices.Contains(qemu, k) {
			t.Errorf("qemu export reader %s reads no managed field", k)
		}
	}
	for k := range ctReaders {
		if !slices.Contains(ct, k) {
			t.Errorf("container export reader %s reads no managed field", k)
		}
	}
	for k, p := range pvefields.FieldPaths(engine.KindNetwork) {
		if k == "type" || k == "iface" || k == "comments" {
			continue // read apart
		}
		if netReaders[p] == nil {
			t.Errorf("network key %s (%s) has no export reader", k, p)
		}
	}
	// Every zone option the export reads is a managed one, with its
	// manifest field.
	zone := pvefields.FieldPaths(engine.KindSdnZone)
	for k := range zoneReaders {
		if zone[k] == "" {
			t.Errorf("zone option %s: FieldPaths has no manifest field for it", k)
		}
	}
}

// A VM's or template's manifest name is its Proxmox name: one that is not
// a manifest name, or is shared within its kind, is refused (its manifest
// would rename it). A container keeps its hostname in spec.hostname, so
// its manifest name is derived when need be, unique.
func TestExportNamesKeepProxmoxNamesOrRefuse(t *testing.T) {
	for in, want := range map[string]string{"web-01": "web-01", "App02": "app02", "db.example.org": "db-example-org", "--": ""} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
	vm := func(id int, node, name string, tpl bool) *engine.Guest {
		return &engine.Guest{VMID: id, Type: "qemu", Node: node, Template: tpl, Read: true, Effective: map[string]string{"name": name}}
	}
	ct := func(id int, host string) *engine.Guest {
		return &engine.Guest{VMID: id, Type: "lxc", Node: "pve1", Name: host, Read: true, Effective: map[string]string{"hostname": host}}
	}
	es := &cluster{Selected: &engine.Selected{Observation: &engine.Observation{Guests: map[int]*engine.Guest{
		100: vm(100, "pve1", "web", false), 101: vm(101, "pve2", "web", false), 102: vm(102, "pve1", "App02", false),
		103: vm(103, "pve1", "", false), 104: vm(104, "pve1", "db", false), 105: vm(105, "pve1", "web", true),
		200: ct(200, "web"), 201: ct(201, "Mail.example.org"), 202: ct(202, "cache"), 203: ct(203, "cache"),
		204: ct(204, "cache-202")}}}}
	names, refused := es.guestNames()
	wantNames := map[int]string{104: "db", 105: "web", 200: "web", 201: "mail-example-org", 202: "cache-202-2", 203: "cache-203", 204: "cache-202"}
	if !maps.Equal(names, wantNames) {
		t.Errorf("names: %v, want %v", names, wantNames)
	}
	for id, want := range map[int]string{100: `2 guests of kind VirtualMachine are named "web" (VMID 100 on pve1, VMID 101 on pve2)`,
		101: "VMID 100 on pve1, VMID 101 on pve2", 102: `its name "App02" is not a manifest name`, 103: "has no name"} {
		if !strings.Contains(refused[id], want) {
			t.Errorf("refused[%d] = %q, want it to say %q", id, refused[id], want)
		}
	}
	if len(refused) != 4 {
		t.Errorf("refused: %v", refused)
	}
}
