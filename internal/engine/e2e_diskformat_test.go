package engine_test

import (
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// formatVM is an empty VM with a first disk of FORMAT on STORAGE and a
// second without a format (the storage's default).
func formatVM(storage, format string) string {
	return strings.NewReplacer("STORAGE", storage, "FORMAT", format).Replace(`apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: fmt-01
  node: pve1
spec:
  vmid: 160
  disks:
    - storage: STORAGE
      size: 4G
      format: FORMAT
    - storage: STORAGE
      size: 2G
`)
}

// disks[].format picks the image format Proxmox allocates in; it is kept
// only in the volume name, so a later change is reported as creation-only
// and never applied.
func TestDiskFormatAllocatesTheNamedFormatAndStaysInSync(t *testing.T) {
	e, eng := convergedWith(t, engine.Options{}, "vms/fmt.yaml", formatVM("nfs-shared", "raw"))
	e.assertInSync(eng)
	cfg := e.guest(160).Config
	if !strings.HasPrefix(cfg["scsi0"], "nfs-shared:160/vm-160-disk-0.raw,") || strings.Contains(cfg["scsi0"], "format=") {
		t.Fatalf("scsi0 = %q, want a .raw volume and no format= in the config", cfg["scsi0"])
	}
	if !strings.HasPrefix(cfg["scsi1"], "nfs-shared:160/vm-160-disk-1.qcow2,") {
		t.Fatalf("scsi1 = %q, want the storage's default qcow2", cfg["scsi1"])
	}

	e.write("vms/fmt.yaml", formatVM("nfs-shared", "qcow2"))
	p := e.plan(eng)
	a := p.Find(engine.KindVirtualMachine, "fmt-01")
	text := planText(p)
	if a == nil || !strings.Contains(text, "scsi0.format (creation-only): raw -> qcow2") {
		t.Fatalf("want the format change reported as creation-only:\n%s", text)
	}
	// The JSON plan says the same as data: the bare key, held as creation-only.
	doc, err := p.JSON()
	if err != nil || !strings.Contains(string(doc), `"field": "scsi0.format",`) || !strings.Contains(string(doc), `"hold": "creation-only"`) {
		t.Fatalf("want the held change as data in the JSON plan (%v):\n%s", err, doc)
	}
	if _, err := eng.Apply(t.Context(), p, nil); err != nil {
		t.Fatalf("apply: %v", err)
	}
	if got := e.guest(160).Config["scsi0"]; got != cfg["scsi0"] {
		t.Fatalf("scsi0 changed to %q, want %q kept", got, cfg["scsi0"])
	}
}

// LVM-thin holds raw images only: Proxmox refuses a qcow2 disk there.
func TestDiskFormatTheStorageCannotHoldFails(t *testing.T) {
	e, eng := withManifests(t, engine.Options{}, "vms/fmt.yaml", formatVM("local-lvm", "qcow2"))
	_, rep := e.apply(eng)
	var errs []string
	for _, r := range rep.Results {
		if r.Status == vocab.StatusFailed {
			errs = append(errs, r.Error)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "unsupported format 'qcow2'") {
		t.Fatalf("want the create to fail on the format, got %v", errs)
	}
}
