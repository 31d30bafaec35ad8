package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/store"
	"github.com/proxmops/proxmops/pvesim"
)

// twoClusterCLI starts two simulators and writes a configuration listing
// both, following clusters/home and clusters/office of one directory.
func twoClusterCLI(t *testing.T) (home, office *pvesim.Server, cfgFile, repo string) {
	t.Helper()
	start := func() *pvesim.Server {
		sim := simtest.Start(t, pvesim.Options{Nodes: 2, TokenID: "root@pam!cli", TokenSecret: "cli-secret", TaskSpeed: 0.01})
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
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", filepath.Join(t.TempDir(), "proxmops.db")) // not in this work tree
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

// adopt, rollback and export work on one cluster: with a clusters list
// they refuse to run without --cluster (naming the clusters), and with it
// they touch that cluster only, over HTTP against two simulators; the
// adoption's history is kept under the cluster's name, as the daemon
// keeps it.
func TestOneClusterCommandsNeedCluster(t *testing.T) {
	home, office, cfgFile, repo := twoClusterCLI(t)
	db := filepath.Join(t.TempDir(), "proxmops.db")
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", db)
	cfg := []string{"--config", cfgFile}
	for _, args := range [][]string{
		{"adopt", "VirtualMachine/app-01"},
		{"rollback", "VirtualMachine/app-01"},
		{"rollback", "VirtualMachine/app-01", "--list"},
		{"export", "--all", "--out", t.TempDir()},
	} {
		code, out, errOut := runCLI(t, append(args, cfg...)...)
		if code != 1 || !strings.Contains(errOut, "name one with --cluster (clusters: home, office)") {
			t.Fatalf("%v without --cluster: %d\n%s%s", args, code, out, errOut)
		}
		code, _, errOut = runCLI(t, append(append(args, "--cluster", "lab"), cfg...)...)
		if code != 1 || !strings.Contains(errOut, `no cluster "lab" (clusters: home, office)`) {
			t.Fatalf("%v --cluster lab: %d\n%s", args, code, errOut)
		}
	}

	// The same VMID unowned on both: adopt --cluster office tags office's only.
	for _, sim := range []*pvesim.Server{home, office} {
		addApp01(t, sim, "cores", "2", "tags", "old")
	}
	code, out, errOut := runCLI(t, append([]string{"adopt", "VirtualMachine/app-01", "--cluster", "office"}, cfg...)...)
	if code != 0 || !strings.Contains(out, "adopted VirtualMachine/app-01") {
		t.Fatalf("adopt --cluster office: %d\n%s%s", code, out, errOut)
	}
	if g, _ := office.Guest(120); g.Config["tags"] != engine.AdoptedTag+";"+engine.OwnerTag+";old" {
		t.Fatalf("office's guest not adopted: %v", g.Config["tags"])
	}
	if g, _ := home.Guest(120); g.Config["tags"] != "old" {
		t.Fatalf("adopt --cluster office tagged home's guest: %v", g.Config["tags"])
	}
	st, err := store.Open(context.Background(), store.Options{Path: db})
	if err != nil {
		t.Fatal(err)
	}
	h, err := st.History(context.Background(), "VirtualMachine", "office/app-01", 0)
	plain, _ := st.History(context.Background(), "VirtualMachine", "app-01", 0)
	st.Close()
	if err != nil || len(h) != 1 || h[0].Event != api.EventAdopted || len(plain) != 0 {
		t.Fatalf("history under office/app-01: %+v %v; under app-01: %+v", h, err, plain)
	}

	// export --cluster home reads home's guest (still unowned: annotated).
	dir := t.TempDir()
	code, out, errOut = runCLI(t, append([]string{"export", "--all", "--out", dir, "--cluster", "home"}, cfg...)...)
	if code != 0 || !strings.Contains(out, "1 manifest(s)") {
		t.Fatalf("export --cluster home: %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(filepath.Join(dir, "vms", "app-01.yaml"))
	if err != nil || !strings.Contains(string(b), "proxmops.dev/adopt") {
		t.Fatalf("home's export: %v\n%s", err, b)
	}

	// rollback --cluster office goes back to office's snapshot, home keeps its cores.
	writeBoth := func(homeCores, officeCores string) {
		for c, cores := range map[string]string{"home": homeCores, "office": officeCores} {
			y := strings.Replace(cliVM, "cores: 2", "cores: "+cores, 1)
			y = strings.Replace(y, "state: running\n", "state: running\n  applyMode: reboot\n  snapshots:\n    beforeChange: true\n", 1)
			if err := os.WriteFile(filepath.Join(repo, "clusters", c, "app-01.yaml"), []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	writeBoth("2", "4")
	code, out, errOut = runCLI(t, append([]string{"apply", "--cluster", "office"}, cfg...)...)
	if g, _ := office.Guest(120); code != 0 || g.Config["cores"] != "4" || len(g.Snapshots) != 1 {
		t.Fatalf("apply --cluster office: %d %v %v\n%s%s", code, g.Config["cores"], g.Snapshots, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01", "--cluster", "home"}, cfg...)...)
	if code != 1 || !strings.Contains(errOut, "has no "+engine.OwnerTag+" tag, so proxmops leaves it alone") {
		t.Fatalf("rollback --cluster home (unowned there): %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(t, append([]string{"rollback", "VirtualMachine/app-01", "--cluster", "office", "-o", "json"}, cfg...)...)
	var doc struct {
		Snapshot string
		Plan     struct{ Cluster string }
	}
	if code != 0 || json.Unmarshal([]byte(out), &doc) != nil || doc.Snapshot == "" || doc.Plan.Cluster != "office" {
		t.Fatalf("rollback --cluster office: %d\n%s%s", code, out, errOut)
	}
	if g, _ := office.Guest(120); g.Config["cores"] != "2" {
		t.Fatalf("office after rollback: cores %s", g.Config["cores"])
	}
	if g, _ := home.Guest(120); g.Config["cores"] != "2" || g.Config["tags"] != "old" {
		t.Fatalf("rollback --cluster office touched home: %v", g.Config)
	}
}

// The CLI keeps a cluster's records (host key pins) where the daemon keeps
// them, under the cluster's state prefix: a pin of office's guest must
// never answer for home's guest at the same address.
func TestSessionRecordsPerCluster(t *testing.T) {
	_, _, cfgFile, _ := twoClusterCLI(t)
	db := filepath.Join(t.TempDir(), "proxmops.db")
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", db)
	t.Setenv("PROXMOPS_CONFIG", cfgFile)
	ctx := context.Background()
	ss, err := openSessions(ctx, config.BindFlags(pflag.NewFlagSet("t", pflag.ContinueOnError)), "", io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		if err := s.db.PutState(ctx, "hostkeys/10.0.0.5", []byte(s.name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range ss {
		if v, ok, err := s.db.State(ctx, "hostkeys/10.0.0.5"); err != nil || !ok || string(v) != s.name {
			t.Fatalf("cluster %s reads %q %v %v", s.name, v, ok, err)
		}
	}
	st, err := ss[0].db.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok, _ := st.State(ctx, api.ClusterStatePrefix("office")+"hostkeys/10.0.0.5"); !ok || string(v) != "office" {
		t.Fatalf("office's record not under the daemon's prefix: %q %v", v, ok)
	}
	closeSessions(ss)
}
