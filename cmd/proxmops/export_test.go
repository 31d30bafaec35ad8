package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// export over the CLI: a hand-made guest becomes vms/NAME.yaml annotated
// for adoption, which validates and plans as the adoption alone; a second
// export refuses to overwrite it without --force; a bad --vmid or --kind
// is an error.
func TestExportCommand(t *testing.T) {
	sim, _ := cliEnv(t)
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 150, Node: "pve1", Running: true, Config: map[string]string{
		"name": "legacy-01", "cores": "2", "memory": "1024", "tags": "old", "scsi0": "local-lvm:vm-150-disk-0,size=4G",
		"net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0", "boot": "order=scsi0"}}); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	common := []string{"--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--out", out}
	code, stdout, stderr := runCLI(t, append([]string{"export", "--vmid", "150", "--kind", "vm,template", "--kind", "Container"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "wrote vms/legacy-01.yaml") || !strings.Contains(stdout, "shows only the adoptions") {
		t.Fatalf("export: %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(filepath.Join(out, "vms/legacy-01.yaml"))
	if err != nil || !strings.Contains(string(b), "proxmops.dev/adopt: \"true\"") || !strings.Contains(string(b), "macaddr: BC:24:11:00:00:01") {
		t.Fatalf("vms/legacy-01.yaml: %v\n%s", err, b)
	}
	if code, stdout, stderr := runCLI(t, "validate", out); code != 0 {
		t.Fatalf("validate: %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, append([]string{"export", "--all"}, common...)...)
	if code != 1 || !strings.Contains(stderr, "vms/legacy-01.yaml") || !strings.Contains(stderr, "--force") {
		t.Fatalf("second export: %d\n%s%s", code, stdout, stderr)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"export", "--all", "--force"}, common...)...); code != 0 {
		t.Fatalf("export --force: %d\n%s%s", code, stdout, stderr)
	}
	for args, want := range map[string]string{"--vmid 9x": "is not a VMID", "--all --kind disks": "not a kind export writes", "--kind vm": "--vmid LIST"} {
		code, stdout, stderr := runCLI(t, append(append([]string{"export"}, strings.Fields(args)...), common...)...)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("export %s: %d\n%s%s", args, code, stdout, stderr)
		}
	}
}

// export refuses a VM whose name a manifest would change, listing it with
// the reason, and fails after writing the others; --vmid leaving it out
// succeeds.
func TestExportCommandRefusesWhatItWouldRename(t *testing.T) {
	sim, _ := cliEnv(t)
	for id, name := range map[int]string{150: "legacy-01", 151: "Legacy.02"} {
		if err := sim.AddGuest(pvesim.GuestSpec{VMID: id, Node: "pve1", Config: map[string]string{"name": name,
			"scsi0": fmt.Sprintf("local-lvm:vm-%d-disk-0,size=4G", id), "boot": "order=scsi0"}}); err != nil {
			t.Fatal(err)
		}
	}
	out := t.TempDir()
	common := []string{"--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint(), "--out", out}
	code, stdout, stderr := runCLI(t, append([]string{"export", "--all"}, common...)...)
	if code != 1 || !strings.Contains(stdout, "wrote vms/legacy-01.yaml") || !strings.Contains(stderr, "1 guest(s) not exported") ||
		!strings.Contains(stderr, `VMID 151 (VM on pve1): its name "Legacy.02" is not a manifest name`) {
		t.Fatalf("export: %d\n%s%s", code, stdout, stderr)
	}
	if entries, _ := os.ReadDir(filepath.Join(out, "vms")); len(entries) != 1 {
		t.Fatalf("written: %v", entries)
	}
	if code, stdout, stderr := runCLI(t, append([]string{"export", "--vmid", "150", "--force"}, common...)...); code != 0 {
		t.Fatalf("export --vmid 150: %d\n%s%s", code, stdout, stderr)
	}
}
