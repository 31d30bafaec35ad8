package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/gittest"
)

// seedLib is the second seed's libs/apache, as its Getting Started shows it.
var seedLib = map[string]string{
	"libs/apache/container.env":       "IP=192.168.178.42\nID=42\nCORES=2\nMEMORY=2048\nSWAP=512\nDISK=local-lvm:8\nBOOT=yes\n",
	"libs/apache/recipes/default.rb":  "package 'apache2'\n",
	"libs/apache/container.stage.env": "ID=242\n",
}

// `import proxmox-gitops` refuses the seed's ID=42 with the file and the
// flag to use, writes nothing; with --vmid-offset it writes manifests that
// `validate` accepts and lists what it did not map on stderr.
func TestImportProxmoxGitOpsCLI(t *testing.T) {
	dir := t.TempDir()
	gittest.WriteFiles(t, dir, seedLib)
	t.Cleanup(func() {
		f := rootCmd.Commands()
		for _, c := range f {
			if c.Name() == "import" {
				_ = c.PersistentFlags().Set("vmid-offset", "0")
				_ = c.PersistentFlags().Set("out", "")
			}
		}
	})
	out := filepath.Join(t.TempDir(), "manifests")

	code, stdout, stderr := runCapture(t, "import", "proxmox-gitops", dir, "--out", out, "--vmid-offset", "0")
	if code != 1 || !strings.Contains(stderr, "libs/apache/container.env:2: ID: VMID 42 is below 100") || !strings.Contains(stderr, "--vmid-offset") {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused import wrote its output directory")
	}

	code, stdout, stderr = runCapture(t, "import", "proxmox-gitops", dir, "--out", out, "--vmid-offset", "100")
	if code != 0 {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "imported 1 containers") || !strings.Contains(stderr, "not mapped: libs/apache/container.stage.env") {
		t.Errorf("stdout %q\nstderr %q", stdout, stderr)
	}
	ct, err := os.ReadFile(filepath.Join(out, "containers", "apache.yaml"))
	if err != nil || !strings.Contains(string(ct), "vmid: 142") || !strings.Contains(string(ct), "onboot: true") {
		t.Fatalf("containers/apache.yaml: %v\n%s", err, ct)
	}
	if code, stdout, stderr := runCapture(t, "validate", out); code != 0 || !strings.Contains(stdout, "valid: 2 resources") {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
}
