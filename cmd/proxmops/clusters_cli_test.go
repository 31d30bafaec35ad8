package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// twoClusterCLI starts two simulators and writes a configuration listing
// both, following clusters/home and clusters/office of one directory.
func twoClusterCLI(t *testing.T) (home, office *pvesim.Server, cfgFile, repo string) {
	t.Helper()
	start := func() *pvesim.Server {
		sim := pvesim.New(pvesim.Options{Nodes: 2, TokenID: "root@pam!cli", TokenSecret: "cli-secret", TaskSpeed: 0.01})
		if err := sim.Start("127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sim.Close() })
		if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:import/debian.qcow2", Size: 2 << 30}); err != nil {
			t.Fatal(err)
		}
		return sim
	}
	home, office = start(), start()
	repo = t.TempDir()
	for _, c := range []string{"home", "office"} {
		dir := filepath.Join(repo, "clusters", c)
		os.MkdirAll(dir, 0o755)
		// The same name and VMID in both: valid, each cluster is its own.
		if err := os.WriteFile(filepath.Join(dir, "app-01.yaml"), []byte(cliVM), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgFile = filepath.Join(t.TempDir(), "proxmops.yaml")
	cfg := fmt.Sprintf(`clusters:
  - name: home
    endpoint: %s
    tokenId: root@pam!cli
    tokenSecret: ${CLI_SECRET}
    path: clusters/home
  - name: office
    endpoint: %s
    tokenId: root@pam!cli
    tokenSecret: ${CLI_SECRET}
    path: clusters/office
source:
  repoURL: %s
`, home.APIURL(), office.APIURL(), repo)
	if err := os.WriteFile(cfgFile, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("CLI_SECRET", "cli-secret")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", t.TempDir())
	t.Setenv("NO_COLOR", "1")
	return home, office, cfgFile, repo
}

func TestPlanApplyValidateSeveralClusters(t *testing.T) {
	home, office, cfgFile, repo := twoClusterCLI(t)

	code, out, errOut := runCLI(t, "plan", "--config", cfgFile, "--detailed-exitcode")
	if code != 2 || !strings.Contains(out, "== cluster home") || !strings.Contains(out, "== cluster office") {
		t.Fatalf("plan of two clusters: %d\n%s\n%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "plan", "--config", cfgFile, "--output", "json")
	var doc struct {
		Cluster string
		Summary struct{ Create int }
		Actions []struct{ Cluster, Name string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Summary.Create != 2 || len(doc.Actions) != 2 ||
		doc.Actions[0].Cluster != "home" || doc.Actions[1].Cluster != "office" {
		t.Fatalf("plan json: %d %s", code, out)
	}

	code, out, errOut = runCLI(t, "apply", "--config", cfgFile, "--cluster", "office")
	if code != 0 || strings.Contains(out, "== cluster home") {
		t.Fatalf("apply --cluster office: %d\n%s\n%s", code, out, errOut)
	}
	if _, ok := office.Guest(120); !ok {
		t.Fatal("office has no app-01")
	}
	if _, ok := home.Guest(120); ok {
		t.Fatal("apply --cluster office changed home")
	}
	code, out, _ = runCLI(t, "plan", "--config", cfgFile, "--cluster", "office", "--detailed-exitcode")
	if code != 0 {
		t.Fatalf("office not in sync after its apply: %d\n%s", code, out)
	}
	if code, _, errOut = runCLI(t, "plan", "--config", cfgFile, "--cluster", "lab"); code != 1 || !strings.Contains(errOut, `no cluster "lab"`) {
		t.Fatalf("unknown cluster: %d %s", code, errOut)
	}

	// validate: the same VMID in two clusters is fine per cluster, a
	// duplicate inside one is not.
	code, out, errOut = runCLI(t, "validate", repo, "--config", cfgFile)
	if code != 0 || !strings.Contains(out, "== cluster home") || !strings.Contains(out, "== cluster office") {
		t.Fatalf("validate clusters: %d\n%s\n%s", code, out, errOut)
	}
	dup := strings.Replace(cliVM, "name: app-01", "name: app-02", 1)
	os.WriteFile(filepath.Join(repo, "clusters", "home", "app-02.yaml"), []byte(dup), 0o644)
	code, _, errOut = runCLI(t, "validate", repo, "--config", cfgFile)
	if code != 1 || !strings.Contains(errOut, "cluster home:") || strings.Contains(errOut, "cluster office:") {
		t.Fatalf("duplicate VMID in home: %d\n%s", code, errOut)
	}
}
