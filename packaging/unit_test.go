package packaging_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/config"
)

func needSystemdAnalyze(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (apt-get install systemd); CI installs it")
	}
}

// unitForVerify is the unit with ExecStart pointing at a binary that exists
// here (verify checks that it does), in a directory of its own.
func unitForVerify(t *testing.T, unitFile, binPath string) string {
	t.Helper()
	data, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^ExecStart=\S+`)
	if !re.Match(data) {
		t.Fatalf("%s has no ExecStart", unitFile)
	}
	out := filepath.Join(t.TempDir(), "proxmops.service")
	mustWrite(t, out, re.ReplaceAllString(string(data), "ExecStart="+binPath))
	return out
}

func TestUnitPassesSystemdVerify(t *testing.T) {
	needSystemdAnalyze(t)
	unit := unitForVerify(t, "proxmops.service", hostBinary(t))
	out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) != 0 {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

var exposureRE = regexp.MustCompile(`Overall exposure level for proxmops\.service: (\d+\.\d+) (\w+)`)

func TestUnitIsRatedSafe(t *testing.T) {
	needSystemdAnalyze(t)
	out, err := exec.Command("systemd-analyze", "security", "--offline=yes", "proxmops.service").CombinedOutput()
	if err != nil {
		t.Fatalf("systemd-analyze security: %v\n%s", err, out)
	}
	m := exposureRE.FindStringSubmatch(string(out))
	if m == nil {
		t.Fatalf("no overall exposure level in:\n%s", out)
	}
	level, _ := strconv.ParseFloat(m[1], 64)
	if level > 2.0 || m[2] != "OK" {
		t.Fatalf("exposure %s %s, want 2.0 or lower (OK):\n%s", m[1], m[2], out)
	}
	t.Logf("exposure level %s %s", m[1], m[2])
}

// The unit's promises that the installer and docs rely on, one by one, so
// that a lower score from some other setting cannot hide their loss.
func TestUnitKeepsItsHardening(t *testing.T) {
	data, err := os.ReadFile("proxmops.service")
	if err != nil {
		t.Fatal(err)
	}
	unit := string(data)
	for _, line := range []string{
		"ExecStart=/usr/local/bin/proxmops serve",
		"User=proxmops",
		"StateDirectory=proxmops",
		"ProtectSystem=strict",
		"NoNewPrivileges=yes",
		"CapabilityBoundingSet=\n",
		"SystemCallFilter=@system-service",
		"RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX",
		"KillSignal=SIGTERM",
	} {
		if !strings.Contains(unit, line) {
			t.Errorf("proxmops.service lacks %q", strings.TrimSpace(line))
		}
	}
}

// The unit sets no configuration key in its environment: a key there would
// silently win over the YAML the operator edits, and the CLI (which reads
// the YAML, not the unit) would use another state. The shipped YAML, read
// as the service's file, puts the state and the Git cache in the
// directories the unit makes writable; PostgreSQL from proxmops.env (as
// docs/ha.md does it) replaces the SQLite default without a conflict.
func TestUnitLeavesTheConfigurationToTheYAML(t *testing.T) {
	unit, err := os.ReadFile("proxmops.service")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^Environment=.*PROXMOPS_.*$`).FindAllString(string(unit), -1); len(m) > 0 {
		t.Errorf("proxmops.service sets %q: put it in proxmops.yaml", m)
	}
	for _, line := range []string{"StateDirectory=proxmops\n", "CacheDirectory=proxmops\n"} {
		if !strings.Contains(string(unit), line) {
			t.Errorf("proxmops.service lacks %q", strings.TrimSpace(line))
		}
	}
	yaml, err := os.ReadFile("proxmops.yaml")
	if err != nil {
		t.Fatal(err)
	}
	etc := filepath.Join(t.TempDir(), "proxmops.yaml")
	mustWrite(t, etc, string(yaml))
	saved := config.ServiceConfigFile
	config.ServiceConfigFile = etc
	defer func() { config.ServiceConfigFile = saved }()
	c, warnings, err := config.Load(config.LoadOptions{Env: []string{}})
	if err != nil || len(warnings) > 0 {
		t.Fatalf("%v %v", err, warnings)
	}
	if c.Server.DatabasePath != "/var/lib/proxmops/proxmops.db" || c.Source.CacheDir != "/var/cache/proxmops/git" {
		t.Errorf("the service's file gives database %q and cache %q", c.Server.DatabasePath, c.Source.CacheDir)
	}
	c, _, err = config.Load(config.LoadOptions{Env: []string{"PROXMOPS_SERVER_DATABASE=postgres://proxmops@db.example.net/proxmops", "PROXMOPS_ENCRYPTION_KEY=x"}})
	if err != nil || c.Server.Database == "" || c.Server.DatabasePath != "" {
		t.Errorf("PostgreSQL from proxmops.env: %v, database %q, databasePath %q", err, c.Server.Database, c.Server.DatabasePath)
	}
}

// The packages install the binary as /usr/bin/proxmops: their unit (made by
// extras.sh) must start that one, and verify as well.
func TestPackageUnitStartsThePackagedBinary(t *testing.T) {
	extras := extrasDir(t, hostBinary(t))
	data, err := os.ReadFile(filepath.Join(extras, "proxmops.service.pkg"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "\nExecStart=/usr/bin/proxmops serve\n") {
		t.Fatalf("package unit:\n%s", data)
	}
	needSystemdAnalyze(t)
	unit := unitForVerify(t, filepath.Join(extras, "proxmops.service.pkg"), hostBinary(t))
	if out, err := exec.Command("systemd-analyze", "verify", unit).CombinedOutput(); err != nil || len(out) != 0 {
		t.Fatalf("systemd-analyze verify (package unit): %v\n%s", err, out)
	}
}
