package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
	"github.com/spf13/pflag"
)

const cliVM = `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: app-01
  node: pve1
spec:
  vmid: 120
  cores: 2
  memory: 2048
  image:
    source: local:import/debian.qcow2
  disks:
    - storage: local-lvm
      size: 20G
  net:
    - bridge: vmbr0
  cloudInit:
    user: debian
    ip: dhcp
  state: running
`

// cliEnv starts a simulator and a repository directory, and points the
// configuration's environment at them.
func cliEnv(t *testing.T) (*pvesim.Server, string) { t.Helper(); return cliEnvWith(t, nil) }

// addApp01 makes VM 120, app-01, by hand on pve1: one core, 2 GiB, a 20G
// disk and one NIC, with kv (key, value, ...) set over that.
func addApp01(t *testing.T, sim *pvesim.Server, kv ...string) {
	t.Helper()
	conf := map[string]string{"name": "app-01", "cores": "1", "memory": "2048",
		"scsi0": "local-lvm:vm-120-disk-0,size=20G", "net0": "virtio=BC:24:11:00:01:20,bridge=vmbr0"}
	for i := 0; i+1 < len(kv); i += 2 {
		conf[kv[i]] = kv[i+1]
	}
	if err := sim.AddGuest(pvesim.GuestSpec{VMID: 120, Node: "pve1", Config: conf}); err != nil {
		t.Fatal(err)
	}
}

// cliArgs are the flags that point a command at sim and the repository.
func cliArgs(sim *pvesim.Server, repo string) []string {
	return []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint()}
}

// cliEnvWith is cliEnv with the simulator's token holding only privs on /
// (nil: all).
func cliEnvWith(t *testing.T, privs []string) (*pvesim.Server, string) {
	t.Helper()
	return cliEnvNodes(t, privs, 2)
}

// cliEnvNodes is cliEnvWith with that many nodes.
func cliEnvNodes(t *testing.T, privs []string, nodes int) (*pvesim.Server, string) {
	t.Helper()
	sim := pvesim.New(pvesim.Options{Nodes: nodes, TokenID: "root@pam!cli", TokenSecret: "cli-secret", TaskSpeed: 0.01, TokenPrivileges: privs})
	if err := sim.StartTLS("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	if err := sim.AddVolume(pvesim.VolumeSpec{Node: "pve1", VolID: "local:import/debian.qcow2", Size: 2 << 30}); err != nil {
		t.Fatal(err)
	}
	repo := t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "app-01.yaml"), []byte(cliVM), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROXMOPS_CONFIG", "")
	t.Setenv("PROXMOPS_CLUSTER_TOKENSECRET", "cli-secret")
	t.Setenv("PROXMOPS_SOURCE_CACHEDIR", t.TempDir())
	// The test runs inside this repository's work tree, where the CLI
	// keeps no state.
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", filepath.Join(t.TempDir(), "proxmops.db"))
	t.Setenv("NO_COLOR", "1")
	return sim, repo
}

// runCLI runs the command line as main does, with every flag back at its
// default first (cobra keeps flag values between runs in one process), and
// returns the exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	for _, c := range rootCmd.Commands() {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			_ = f.Value.Set(f.DefValue)
			f.Changed = false
		})
	}
	var out bytes.Buffer
	rootCmd.SetOut(&out)
	defer rootCmd.SetOut(nil)
	// run reports errors on os.Stderr itself: capture it.
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	rootCmd.SetErr(w)
	errc := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		errc <- string(b)
	}()
	code := run(args)
	os.Stderr = saved
	rootCmd.SetErr(nil)
	w.Close()
	return code, out.String(), <-errc
}

func TestPlanAndApplyAgainstTheSimulator(t *testing.T) {
	sim, repo := cliEnv(t)
	common := cliArgs(sim, repo)

	code, out, errOut := runCLI(t, append([]string{"plan", "--output", "json", "--detailed-exitcode"}, common...)...)
	if code != 2 {
		t.Fatalf("plan exit %d, want 2 (changes): %s %s", code, out, errOut)
	}
	var doc struct {
		Revision string         `json:"revision"`
		Summary  map[string]any `json:"summary"`
		Actions  []struct {
			Kind, Name, Action, Reason string
			Changes                    []struct{ Field, From, To string }
			NeedsReboot                bool `json:"needsReboot"`
		} `json:"actions"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("plan --output json is not one JSON document: %v\n%s", err, out)
	}
	if doc.Summary["create"] != float64(1) || len(doc.Actions) != 1 || doc.Actions[0].Action != "create" || doc.Actions[0].Reason == "" || len(doc.Actions[0].Changes) == 0 {
		t.Fatalf("plan document %+v", doc)
	}
	for _, k := range []string{"create", "update", "reboot", "delete", "conflict", "failed", "unknown", "needsReboot", "statuses"} {
		if _, ok := doc.Summary[k]; !ok {
			t.Errorf("summary lacks %q", k)
		}
	}

	code, out, errOut = runCLI(t, append([]string{"plan", "--output", "text", "--detailed-exitcode"}, common...)...)
	if code != 2 || !strings.Contains(out, "+ VirtualMachine/app-01 (pve1, vmid 120): create") || !strings.Contains(out, "Plan: 1 to create") {
		t.Fatalf("text plan exit %d:\n%s%s", code, out, errOut)
	}

	code, out, errOut = runCLI(t, append([]string{"apply", "--output", "text"}, common...)...)
	if code != 0 || !strings.Contains(out, "VirtualMachine/app-01: create done") || !strings.Contains(out, "1 applied, 0 failed") {
		t.Fatalf("apply exit %d:\n%s%s", code, out, errOut)
	}
	if g, ok := sim.Guest(120); !ok || !g.Running || !strings.Contains(g.Config["scsi0"], "size=20G") {
		t.Fatalf("VM after apply: %+v", g)
	}

	code, out, errOut = runCLI(t, append([]string{"plan", "--output", "text", "--detailed-exitcode"}, common...)...)
	if code != 0 || !strings.Contains(out, "No changes") {
		t.Fatalf("second plan exit %d:\n%s%s", code, out, errOut)
	}

	// A failing task makes apply exit 1 with the task's error.
	if err := sim.MutateGuest(120, func(c map[string]string) { c["cores"] = "6" }); err != nil {
		t.Fatal(err)
	}
	sim.SetFaults(pvesim.Faults{TaskFailRate: 1})
	if err := sim.SetGuestRunning(120, false); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = runCLI(t, append([]string{"apply", "--output", "json"}, common...)...)
	if code != 1 || !strings.Contains(errOut, "failed") {
		t.Fatalf("failing apply exit %d:\n%s%s", code, out, errOut)
	}
	var res struct {
		Failed  int `json:"failed"`
		Results []struct {
			Error string `json:"error"`
		} `json:"results"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil || res.Failed != 1 || !strings.Contains(res.Results[0].Error, "task") {
		t.Fatalf("apply JSON %v %+v\n%s", err, res, out)
	}
}

func TestPlanErrors(t *testing.T) {
	sim, repo := cliEnv(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"wrong token", []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!wrong", "--insecure-skip-verify"}, "authentication failed"},
		{"certificate not trusted", []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli"}, "fingerprint is " + sim.Fingerprint()},
		{"fingerprint mismatch", []string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", strings.Repeat("AA:", 31) + "AA"}, "fingerprint mismatch"},
		{"no repository", []string{"--repo", filepath.Join(repo, "missing"), "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli"}, "repository"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, append([]string{"plan", "--output", "text", "--detailed-exitcode"}, tt.args...)...)
			if code != 1 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want 1 with %q:\n%s%s", code, tt.want, out, errOut)
			}
		})
	}
}
