package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// seedDir holds the manifests of the two seed documents, placeholders
// filled (its README says how each was made).
var seedDir = filepath.Join("..", "..", "internal", "manifest", "testdata", "seeds")

// The seed documents' manifests as a user meets them on the command line:
// `proxmops validate` accepts each file and the whole directory, and
// `proxmops plan` against a simulated cluster plans every resource as a
// create, none failed, in conflict or unknown.
func TestSeedManifestsValidateAndPlanAgainstTheSimulator(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(seedDir, "*.yaml"))
	if err != nil || len(files) < 8 {
		t.Fatalf("seed manifests: %v %v", files, err)
	}
	for _, f := range files {
		if code, out, errs := runCLI(t, "validate", f); code != 0 {
			t.Errorf("validate %s: exit %d\n%s%s", filepath.Base(f), code, out, errs)
		}
	}
	code, out, errs := runCLI(t, "validate", "--output", "json", seedDir)
	if code != 0 {
		t.Fatalf("validate %s: exit %d\n%s%s", seedDir, code, out, errs)
	}

	sim, _ := cliEnv(t)
	// What the seeds expect on the cluster without declaring it: the
	// imported cloud image app-01-from-volume boots from, the container
	// template dns-01 and apache name, and web01's hand-made template.
	for _, vol := range []string{"local:import/debian-12-genericcloud-amd64.qcow2", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"} {
		if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: vol, Size: 2 << 30}); err != nil {
			t.Fatal(err)
		}
	}
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 9100, Node: "pve1", Config: map[string]string{
		"name": "guix-homelab-template", "template": "1", "ostype": "l26", "scsihw": "virtio-scsi-single",
		"scsi0": "local-lvm:base-9100-disk-0,size=8G", "net0": "virtio=BC:24:11:91:00:01,bridge=vmbr0"}}); err != nil {
		t.Fatal(err)
	}
	// The simulator's nodes are pve1..pveN; the seeds name pve-node1.
	repo := t.TempDir()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		seed := strings.ReplaceAll(string(data), "pve-node1", "pve1")
		if err := os.WriteFile(filepath.Join(repo, filepath.Base(f)), []byte(seed), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errs = runCLI(t, "plan", "--output", "json", "--detailed-exitcode", "--repo", repo,
		"--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint())
	if code != 2 {
		t.Fatalf("plan: exit %d, want 2 (changes)\n%s%s", code, out, errs)
	}
	var doc struct {
		Actions []struct {
			Kind, Name, Action, Status, Reason string
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("plan --output json: %v\n%s", err, out)
	}
	planned := map[string]bool{}
	for _, a := range doc.Actions {
		planned[a.Kind+"/"+a.Name] = true
		if a.Action != "create" || a.Status != "OutOfSync" {
			t.Errorf("%s/%s: %s %s (%s), want a create", a.Kind, a.Name, a.Action, a.Status, a.Reason)
		}
	}
	for _, want := range []string{"VirtualMachine/app-01", "VirtualMachine/app-01-from-volume", "VirtualMachine/app-02",
		"VirtualMachine/app-02-linked", "VirtualMachine/web01", "Template/debian-12-tpl", "Iso/debian-12",
		"Container/dns-01", "Container/apache"} {
		if !planned[want] {
			t.Errorf("the plan has no action for %s", want)
		}
	}
	if len(doc.Actions) != 9 {
		t.Errorf("%d actions, want the 9 seed resources", len(doc.Actions))
	}
}
