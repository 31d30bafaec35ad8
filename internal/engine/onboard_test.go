package engine

import (
	"slices"
	"testing"
)

// Every managed field of the guest tables has an export reader, and every
// reader reads a managed field: the export cannot leave a field out, nor
// write one the engine does not manage.
func TestEveryFieldRowIsExported(t *testing.T) {
	var qemu, ct []string
	for _, r := range qemuFields {
		k := r.path
		if k == "" {
			k = r.key
		}
		qemu = append(qemu, k)
		if qemuReaders[k] == nil {
			t.Errorf("qemu field %s has no export reader", k)
		}
	}
	for _, r := range ctFields {
		ct = append(ct, r.path)
		if ctReaders[r.path] == nil {
			t.Errorf("container field %s has no export reader", r.path)
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
	for k, p := range netPaths {
		if netReaders[p] == nil {
			t.Errorf("network key %s (%s) has no export reader", k, p)
		}
	}
}

// Names that are not manifest names are derived, never dropped.
func TestExportNamesAreDNSLabels(t *testing.T) {
	for in, want := range map[string]string{"web-01": "web-01", "App02": "app02", "db.example.org": "db-example-org", "--": ""} {
		if got := dnsLabel(in); got != want {
			t.Errorf("dnsLabel(%q) = %q, want %q", in, got, want)
		}
	}
	es := &ExportSnapshot{Snapshot: &Snapshot{Guests: map[int]*Guest{
		100: {VMID: 100, Type: "qemu", Name: "web"}, 101: {VMID: 101, Type: "qemu", Name: "Web"},
		102: {VMID: 102, Type: "lxc", Name: "web"}, 103: {VMID: 103, Type: "qemu", Name: "--"}}}}
	names := es.guestNames()
	if names[100] != "web-100" || names[101] != "web-101" || names[102] != "web" || names[103] != "103" {
		t.Fatalf("names: %v", names)
	}
}
