package main

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/pvesim"
)

// checkReport is the JSON of `proxmops check --output json`, decoded
// strictly so a renamed field fails the test (docs/api.md, GET /api/v1/check).
type checkReport struct {
	OK     bool `json:"ok"`
	Checks []struct {
		Name    string `json:"name"`
		OK      bool   `json:"ok"`
		Level   string `json:"level"`
		Message string `json:"message"`
		Fix     string `json:"fix"`
	} `json:"checks"`
}

// runCheck runs `proxmops check --output json` with args and decodes it.
func runCheck(t *testing.T, args ...string) (int, checkReport, string) {
	t.Helper()
	code, out, errOut := runCLI(t, append([]string{"check", "--output", "json"}, args...)...)
	var rep checkReport
	dec := json.NewDecoder(strings.NewReader(out))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rep); err != nil {
		t.Fatalf("check --output json (exit %d) is not the report: %v\n%s%s", code, err, out, errOut)
	}
	return code, rep, out
}

// line returns the report's line named name, failing the test without.
func (r checkReport) line(t *testing.T, name string) (level, msg, fix string) {
	t.Helper()
	for _, c := range r.Checks {
		if c.Name == name {
			if c.OK != (c.Level != "FAIL") || (c.Level != "OK") != (c.Fix != "") {
				t.Errorf("line %q: ok %v, level %s, fix %q disagree", name, c.OK, c.Level, c.Fix)
			}
			return c.Level, c.Message, c.Fix
		}
	}
	t.Fatalf("no line %q in %+v", name, r.Checks)
	return "", "", ""
}

// assertReadOnly fails when the simulator saw anything but GET requests.
func assertReadOnly(t *testing.T, sim *pvesim.Server) {
	t.Helper()
	for _, rc := range sim.Requests() {
		if rc.Method != "GET" {
			t.Errorf("check sent %d %s %s: it must never write", rc.Count, rc.Method, rc.Path)
		}
	}
}

// requiredPrivileges are the privileges docs/configuration.md has a
// privilege-separated token hold.
func requiredPrivileges() []string {
	var out []string
	for _, p := range config.RequiredPrivileges {
		out = append(out, p.Name)
	}
	return out
}

func TestCheckPassesAgainstTheSimulatorAndOnlyReads(t *testing.T) {
	sim, repo := cliEnvWith(t, requiredPrivileges())
	sim.ResetRequests()
	code, rep, raw := runCheck(t, "--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint())
	if code != 0 || !rep.OK {
		t.Fatalf("check exit %d: %+v", code, rep)
	}
	assertReportShape(t, raw)
	for _, c := range rep.Checks {
		if c.Level != "OK" {
			t.Errorf("against a healthy simulator: %+v", c)
		}
	}
	if _, msg, _ := rep.line(t, "cluster: tls"); !strings.Contains(msg, "pinned") || !strings.Contains(msg, sim.Fingerprint()) {
		t.Errorf("tls line: %s", msg)
	}
	if _, msg, _ := rep.line(t, "cluster: token"); !strings.HasPrefix(msg, "token cli of user root@pam;") || !strings.Contains(msg, "privilege separation on") {
		t.Errorf("token line: %s", msg)
	}
	for _, name := range []string{"cluster: version", "cluster: token", "cluster: privileges", "node pve1", "node pve2", "cluster: quorum",
		"storage local-lvm on pve1", "storage local on pve1", "bridge vmbr0 on pve1", "cluster: ha", "cluster: pools", "source: repository"} {
		rep.line(t, name)
	}
	assertReadOnly(t, sim)
	if sim.RequestCountFor("GET", "/access/permissions") == 0 {
		t.Error("check did not read the token's privileges")
	}

	// The text form: one line per check and the count.
	code, out, _ := runCLI(t, "check", "--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint())
	if code != 0 || !strings.Contains(out, "OK    cluster: tls: certificate pinned") || !strings.Contains(out, " 0 WARN, 0 FAIL") {
		t.Errorf("text report exit %d:\n%s", code, out)
	}
}

// Each way a cluster can disagree yields its FAIL or WARN line with the fix.
func TestCheckNamesEachProblemWithItsFix(t *testing.T) {
	tests := []struct {
		name  string
		privs []string // the token's privileges on / (nil: all)
		setup func(t *testing.T, sim *pvesim.Server, repo string) []string
		line  string
		level string
		msg   string // in the message
		fix   string // in the fix
	}{
		{"a self-signed certificate without a pin", nil,
			func(t *testing.T, sim *pvesim.Server, _ string) []string { return nil },
			"cluster: tls", "FAIL", "is not trusted", "set fingerprint: \"%FP%\" under cluster: in the configuration file (or PROXMOPS_CLUSTER_FINGERPRINT=%FP%)"},
		{"a pin that does not match", nil,
			func(t *testing.T, sim *pvesim.Server, _ string) []string {
				return []string{"--fingerprint", strings.Repeat("AB:", 31) + "AB"}
			},
			"cluster: tls", "FAIL", "but cluster.fingerprint pins AB:AB", "%FP%"},
		{"a certificate trusted through caFile", nil,
			func(t *testing.T, sim *pvesim.Server, _ string) []string {
				return []string{"--ca-file", simCertPEM(t, sim)}
			},
			"cluster: tls", "OK", "certificate trusted by cluster.caFile; fingerprint %FP%", ""},
		{"verification turned off", nil,
			func(t *testing.T, sim *pvesim.Server, _ string) []string { return []string{"--insecure-skip-verify"} },
			"cluster: tls", "WARN", "not verified", "fingerprint: \"%FP%\""},
		{"a root@pam token without privilege separation", nil, pinned,
			"cluster: token", "WARN", "privilege separation off on a root@pam token", "privilege-separated token"},
		{"a token that cannot read its privilege separation", []string{"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.Config.CPU", "VM.Config.Memory",
			"VM.Config.Disk", "VM.Config.Network", "VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.HWType", "Datastore.AllocateSpace",
			"Datastore.Audit", "SDN.Use"},
			pinned, "cluster: token", "OK", "its privilege separation is not readable without Sys.Audit on /access/groups", ""},
		{"a token that cannot read the HA manager's status", []string{"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.Config.CPU", "VM.Config.Memory",
			"VM.Config.Disk", "VM.Config.Network", "VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.CDROM", "VM.Config.HWType", "Datastore.AllocateSpace",
			"Datastore.Audit", "SDN.Use"},
			pinned, "cluster: ha", "WARN", "GET /cluster/ha/status/current: ", "grant Sys.Audit on / so proxmops sees which guests HA manages"},
		{"a token missing a privilege the manifests need", []string{"VM.Allocate", "VM.Audit", "VM.PowerMgmt", "VM.Config.CPU", "VM.Config.Memory",
			"VM.Config.Disk", "VM.Config.Network", "VM.Config.Options", "VM.Config.Cloudinit", "VM.Config.HWType", "Datastore.AllocateSpace",
			"Datastore.Audit", "SDN.Use", "Sys.Audit"},
			pinned, "cluster: privileges", "FAIL", "VM.Config.CDROM on /vms/120 (VirtualMachine/app-01: create the VM (cloud-init drive))",
			"pveum acl modify /vms/120 --tokens 'root@pam!cli'"},
		{"a storage without the content type", nil,
			withStorage(pvesim.StorageSpec{ID: "local-lvm", Type: "lvmthin", Content: []string{"rootdir"}}),
			"storage local-lvm on pve1", "FAIL", "takes rootdir, not images (needed by VirtualMachine/app-01 (scsi0)", "pvesm set local-lvm --content rootdir,images"},
		{"a disabled storage", nil,
			withStorage(pvesim.StorageSpec{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, Disable: true}),
			"storage local-lvm on pve1", "FAIL", "storage local-lvm is disabled on pve1 (needed by VirtualMachine/app-01 (scsi0))", "pvesm set local-lvm --disable 0"},
		{"a storage not on the node", nil,
			withStorage(pvesim.StorageSpec{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, Nodes: []string{"pve2"}}),
			"storage local-lvm on pve1", "FAIL", "node pve1 has no storage local-lvm", "add pve1 to the storage's nodes"},
		{"a storage too small for the new disks", nil,
			withStorage(pvesim.StorageSpec{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, Total: 10 << 30}),
			"storage local-lvm on pve1", "FAIL", "20.0 GiB for the guests still to create: not enough room", "free space on local-lvm"},
		{"the node the manifests name is offline", nil,
			func(t *testing.T, sim *pvesim.Server, repo string) []string {
				sim.SetNodeOnline("pve1", false)
				return pinned(t, sim, repo)
			},
			"node pve1", "FAIL", "offline, and VirtualMachine/app-01 names it", "bring the node back"},
		{"another node is offline, the cluster quorate", nil,
			withFaults("offline=pve3"),
			"node pve3", "WARN", "offline; no manifest names it", "bring it back"},
		{"a two-node cluster with a node offline", nil,
			withFaults("offline=pve2"),
			"cluster: quorum", "FAIL", "cluster pvesim is not quorate: Proxmox refuses every change", "bring enough nodes back (pvecm status)"},
		{"a node whose clock is off", nil,
			func(t *testing.T, sim *pvesim.Server, repo string) []string {
				sim.SetNodeClockSkew("pve2", -90e9)
				return pinned(t, sim, repo)
			},
			"node pve2", "WARN", "its clock is -1m", "synchronise the clocks"},
		{"a bridge the node does not have", nil,
			withManifest("app-01.yaml", strings.Replace(cliVM, "bridge: vmbr0", "bridge: vmbr7", 1)),
			"bridge vmbr7 on pve1", "FAIL", "no bridge or VNet vmbr7", "Network or SdnVnet manifest"},
		{"a node the cluster does not have", nil,
			withManifest("app-01.yaml", strings.Replace(cliVM, "node: pve1", "node: pve9", 1)),
			"node pve9", "FAIL", "no node pve9, which VirtualMachine/app-01 names", "nodes: pve1, pve2"},
		{"an SDN zone no manifest declares and the cluster lacks", nil,
			withManifest("vnet.yaml", sdnVnet),
			"sdn zone lab", "FAIL", "no SDN zone lab (needed by SdnVnet/labnet)", "declare it in an SdnZone manifest"},
		{"an SDN zone the cluster has", nil,
			func(t *testing.T, sim *pvesim.Server, repo string) []string {
				writeManifest(t, repo, "vnet.yaml", sdnVnet)
				if err := simClient(t, sim).SDNCreate(t.Context(), "zones", pve.NewParams().Set("zone", "lab").Set("type", "simple")); err != nil {
					t.Fatal(err)
				}
				return pinned(t, sim, repo)
			},
			"sdn zone lab", "OK", "exists (SdnVnet/labnet lives in it)", ""},
		{"a guest on an SDN VNet the cluster has", nil,
			func(t *testing.T, sim *pvesim.Server, repo string) []string {
				c := simClient(t, sim)
				if err := c.SDNCreate(t.Context(), "zones", pve.NewParams().Set("zone", "lab").Set("type", "simple")); err != nil {
					t.Fatal(err)
				}
				if err := c.SDNCreate(t.Context(), "vnets", pve.NewParams().Set("vnet", "labnet").Set("zone", "lab")); err != nil {
					t.Fatal(err)
				}
				writeManifest(t, repo, "app-01.yaml", strings.Replace(cliVM, "bridge: vmbr0", "bridge: labnet", 1))
				return pinned(t, sim, repo)
			},
			"bridge labnet on pve1", "OK", "an SDN VNet (VirtualMachine/app-01 (net0))", ""},
		{"a repository that cannot be reached", nil,
			func(t *testing.T, sim *pvesim.Server, repo string) []string {
				return []string{"--fingerprint", sim.Fingerprint(), "--repo", "file://" + filepath.Join(repo, "missing.git")}
			},
			"source: repository", "FAIL", "missing.git", "check source.repoURL"},
		{"invalid manifests", nil,
			withManifest("bad.yaml", "kind: VirtualMachine\nmetadata: {name: x}\n"),
			"source: repository", "FAIL", "", "proxmops validate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := 2 // a node down costs two nodes their quorum, not three
			if strings.Contains(tt.name, "quorate") {
				nodes = 3
			}
			sim, repo := cliEnvNodes(t, tt.privs, nodes)
			args := append([]string{"--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli"}, tt.setup(t, sim, repo)...)
			sim.ResetRequests()
			code, rep, out := runCheck(t, args...)
			assertReportShape(t, out)
			level, msg, fix := rep.line(t, tt.line)
			fp := sim.Fingerprint()
			wantMsg, wantFix := strings.ReplaceAll(tt.msg, "%FP%", fp), strings.ReplaceAll(tt.fix, "%FP%", fp)
			if level != tt.level || !strings.Contains(msg, wantMsg) || !strings.Contains(fix, wantFix) {
				t.Errorf("%s: %s %q — %q\nwant %s with %q — %q", tt.line, level, msg, fix, tt.level, wantMsg, wantFix)
			}
			if wantCode := map[bool]int{true: 1, false: 0}[tt.level == "FAIL"]; code != wantCode || rep.OK != (code == 0) {
				t.Errorf("exit %d, ok %v; want exit %d\n%s", code, rep.OK, wantCode, out)
			}
			assertReadOnly(t, sim)
		})
	}
}

func pinned(_ *testing.T, sim *pvesim.Server, _ string) []string {
	return []string{"--fingerprint", sim.Fingerprint()}
}

// withStorage is the setup that sets storage spec (as pvesm set would)
// before a check with the certificate pinned.
func withStorage(spec pvesim.StorageSpec) func(*testing.T, *pvesim.Server, string) []string {
	return func(t *testing.T, sim *pvesim.Server, repo string) []string {
		if err := sim.SetStorage(spec); err != nil {
			t.Fatal(err)
		}
		return pinned(t, sim, repo)
	}
}

// withManifest is the setup that writes the manifest file name into the
// repository before a check with the certificate pinned.
func withManifest(name, text string) func(*testing.T, *pvesim.Server, string) []string {
	return func(t *testing.T, sim *pvesim.Server, repo string) []string {
		writeManifest(t, repo, name, text)
		return pinned(t, sim, repo)
	}
}

// withFaults is the setup that injects the simulator's faults spec before
// a check with the certificate pinned.
func withFaults(spec string) func(*testing.T, *pvesim.Server, string) []string {
	return func(t *testing.T, sim *pvesim.Server, repo string) []string {
		sim.SetFaults(mustFaults(t, spec))
		return pinned(t, sim, repo)
	}
}

func mustFaults(t *testing.T, spec string) pvesim.Faults {
	t.Helper()
	f, err := pvesim.ParseFaults(spec)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// simCertPEM writes the simulator's certificate, as its TLS handshake
// presents it, to a PEM file.
func simCertPEM(t *testing.T, sim *pvesim.Server) string {
	t.Helper()
	u, err := url.Parse(sim.APIURL())
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", u.Host, &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // reads the certificate only
	if err != nil {
		t.Fatal(err)
	}
	der := conn.ConnectionState().PeerCertificates[0].Raw
	conn.Close()
	path := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// sdnVnet declares a VNet in a zone no manifest declares.
const sdnVnet = `apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: labnet}
spec: {zone: lab}
`

func writeManifest(t *testing.T, repo, name, text string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// Proxmox VE versions outside 8.4 to 9.x are a WARN on the cluster's line
// and each node's, saying what to do.
func TestCheckWarnsOutsideTheSupportedVersions(t *testing.T) {
	for _, tt := range []struct{ version, level, fix string }{
		{"8.3.5", "WARN", "upgrade the cluster to Proxmox VE 8.4 or later"},
		{"8.4.1", "OK", ""},
		{"9.1.3", "OK", ""},
		{"10.0.1", "WARN", "run `proxmops check --exercise` on a test node"},
	} {
		t.Run(tt.version, func(t *testing.T) {
			sim := pvesim.New(pvesim.Options{Nodes: 2, TokenID: "root@pam!cli", TokenSecret: "cli-secret", TokenPrivileges: requiredPrivileges(), Version: tt.version})
			if err := sim.StartTLS("127.0.0.1:0"); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { sim.Close() })
			_, repo := cliEnv(t) // the environment and a repository
			_, rep, out := runCheck(t, "--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli", "--fingerprint", sim.Fingerprint())
			for _, name := range []string{"cluster: version", "node pve1", "node pve2"} {
				level, msg, fix := rep.line(t, name)
				if level != tt.level || !strings.Contains(msg, "Proxmox VE "+tt.version) || !strings.Contains(fix, tt.fix) {
					t.Errorf("%s: %s %s — %s\n%s", name, level, msg, fix, out)
				}
			}
			assertReadOnly(t, sim)
		})
	}
}

// The tls FAIL for a self-signed certificate names the cluster's CA file to
// trust, and the line that pins the certificate: put into the
// configuration file as it says, the line pins it.
func TestCheckPinLinePinsTheCertificate(t *testing.T) {
	sim, repo := cliEnvWith(t, requiredPrivileges())
	code, rep, _ := runCheck(t, "--repo", repo, "--endpoint", sim.APIURL(), "--token-id", "root@pam!cli")
	_, _, fix := rep.line(t, "cluster: tls")
	line := regexp.MustCompile(`fingerprint: "[0-9A-F:]+"`).FindString(fix)
	if code != 1 || line == "" || !strings.Contains(fix, "under cluster:") || !strings.Contains(fix, "copy /etc/pve/pve-root-ca.pem from a node and set cluster.caFile") {
		t.Fatalf("exit %d, fix %q", code, fix)
	}
	cfg := filepath.Join(t.TempDir(), "proxmops.yaml")
	writeManifest(t, filepath.Dir(cfg), "proxmops.yaml", "cluster:\n  endpoint: "+sim.APIURL()+"\n  tokenId: root@pam!cli\n  "+line+"\nsource:\n  repoURL: "+repo+"\n")
	code, rep, out := runCheck(t, "--config", cfg)
	if level, msg, _ := rep.line(t, "cluster: tls"); code != 0 || level != "OK" || !strings.Contains(msg, "certificate pinned") {
		t.Errorf("with %s: exit %d, %s %s\n%s", line, code, level, msg, out)
	}
}

// assertReportShape checks the JSON document against docs/api.md's
// "Check report": {ok, checks: [{name, ok, level, message, fix?}]}, fix
// present exactly when the level is not OK, ok false for FAIL only.
func assertReportShape(t *testing.T, raw string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(raw), &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc) != 2 || doc["ok"] == nil || doc["checks"] == nil {
		t.Fatalf("report keys: %v", doc)
	}
	if _, ok := doc["ok"].(bool); !ok {
		t.Errorf("ok is %T", doc["ok"])
	}
	for _, c := range doc["checks"].([]any) {
		line := c.(map[string]any)
		level, _ := line["level"].(string)
		_, hasFix := line["fix"]
		name, _ := line["name"].(string)
		msg, _ := line["message"].(string)
		ok, isBool := line["ok"].(bool)
		wantKeys := 4
		if hasFix {
			wantKeys = 5
		}
		if len(line) != wantKeys || name == "" || msg == "" || !isBool || ok != (level != "FAIL") || hasFix != (level != "OK") ||
			level != "OK" && level != "WARN" && level != "FAIL" {
			t.Errorf("report line: %v", line)
		}
	}
}

// With a clusters list, check reports every cluster's lines under its
// name, each reading its own directory of manifests; --cluster checks one,
// and a cluster's FAIL (here its node named in a manifest is offline)
// fails the whole run.
func TestCheckReportsEachClusterOfAList(t *testing.T) {
	home, repo := cliEnvWith(t, requiredPrivileges())
	office := pvesim.New(pvesim.Options{Nodes: 2, TokenID: "root@pam!cli", TokenSecret: "cli-secret", TokenPrivileges: requiredPrivileges()})
	if err := office.StartTLS("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { office.Close() })
	for _, dir := range []string{"home", "office"} {
		if err := os.MkdirAll(filepath.Join(repo, "clusters", dir), 0o755); err != nil {
			t.Fatal(err)
		}
		writeManifest(t, filepath.Join(repo, "clusters", dir), "app-01.yaml", cliVM)
	}
	if err := os.Remove(filepath.Join(repo, "app-01.yaml")); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "proxmops.yaml")
	entry := func(name string, sim *pvesim.Server) string {
		return "  - name: " + name + "\n    endpoint: " + sim.APIURL() + "\n    tokenId: root@pam!cli\n    tokenSecret: cli-secret\n    fingerprint: \"" + sim.Fingerprint() +
			"\"\n    path: clusters/" + name + "\n"
	}
	t.Setenv("PROXMOPS_CLUSTER_TOKENSECRET", "") // each entry has its own
	writeManifest(t, filepath.Dir(cfg), "proxmops.yaml", "clusters:\n"+entry("home", home)+entry("office", office)+"source:\n  repoURL: "+repo+"\n")
	office.SetNodeOnline("pve1", false)

	code, rep, out := runCheck(t, "--config", cfg)
	if code != 1 || rep.OK {
		t.Errorf("exit %d with office's node down:\n%s", code, out)
	}
	if level, _, _ := rep.line(t, "home: node pve1"); level != "OK" {
		t.Errorf("home's node: %s", level)
	}
	if level, msg, _ := rep.line(t, "office: node pve1"); level != "FAIL" || !strings.Contains(msg, "VirtualMachine/app-01 names it") {
		t.Errorf("office's node: %s %s", level, msg)
	}
	if _, msg, _ := rep.line(t, "office: source: repository"); !strings.Contains(msg, "1 VirtualMachine") {
		t.Errorf("office's manifests: %s", msg)
	}

	code, rep, out = runCheck(t, "--config", cfg, "--cluster", "home")
	if code != 0 || !rep.OK {
		t.Errorf("--cluster home: exit %d\n%s", code, out)
	}
	for _, c := range rep.Checks {
		if strings.HasPrefix(c.Name, "office") {
			t.Errorf("--cluster home reports %s", c.Name)
		}
	}
	assertReadOnly(t, home)
	assertReadOnly(t, office)
}
