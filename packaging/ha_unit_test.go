package packaging_test

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/pgtest"
)

// docBlock returns the body of the first fenced block of the given
// language in docs/ha.md that follows the text after.
func docBlock(t *testing.T, after, lang string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(repoRoot(t), "docs", "ha.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), after)
	if !ok {
		t.Fatalf("docs/ha.md no longer says %q", after)
	}
	_, rest, ok = strings.Cut(rest, "```"+lang+"\n")
	if !ok {
		t.Fatalf("docs/ha.md has no ```%s block after %q", lang, after)
	}
	body, _, _ := strings.Cut(rest, "```")
	return body
}

// envFile reads KEY=VALUE lines as systemd's EnvironmentFile= does for
// the recipe's file (no quotes in it; a trailing "  # ..." is a comment).
func envFile(body string) map[string]string {
	env := map[string]string{}
	for _, line := range strings.Split(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.Index(line, " #"); i > 0 {
			line = strings.TrimSpace(line[:i])
		}
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}

// The systemd recipe of docs/ha.md: the packaged unit with the recipe's
// drop-in verifies, and the service as the unit runs it (the shipped
// proxmops.yaml, the recipe's proxmops.env with its database pointed at a
// test PostgreSQL and a key made as the recipe says) serves on PostgreSQL
// without a SQLite file in its state directory.
func TestHAUnitRecipeStartsTheServiceOnPostgreSQL(t *testing.T) {
	env := envFile(docBlock(t, "`/etc/proxmops/proxmops.env`", "sh"))
	for _, k := range []string{"PROXMOPS_SERVER_DATABASE", "PROXMOPS_ENCRYPTION_KEY", "PROXMOPS_HA_REPLICA", "PROXMOPS_HA_ADVERTISEURL"} {
		if _, ok := env[k]; !ok {
			t.Fatalf("docs/ha.md's proxmops.env lacks %s: %v", k, env)
		}
	}
	dropIn := docBlock(t, "proxmops.service.d/ha.conf", "ini")
	if _, err := exec.LookPath("systemd-analyze"); err == nil {
		units := t.TempDir()
		mustWrite(t, filepath.Join(units, "proxmops.service"), readFile(t, unitForVerify(t, "proxmops.service", hostBinary(t))))
		if err := os.Mkdir(filepath.Join(units, "proxmops.service.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(units, "proxmops.service.d", "ha.conf"), dropIn)
		cmd := exec.Command("systemd-analyze", "verify", "proxmops.service")
		cmd.Env, cmd.Dir = append(os.Environ(), "SYSTEMD_UNIT_PATH="+units+":"), units
		if out, err := cmd.CombinedOutput(); err != nil || len(out) != 0 {
			t.Fatalf("systemd-analyze verify (unit and the recipe's drop-in): %v\n%s", err, out)
		}
	} else {
		t.Log("systemd-analyze is not installed: the drop-in is not verified (CI installs it)")
	}

	key, err := exec.Command("sh", "-c", "head -c 32 /dev/urandom | base64").Output()
	if err != nil {
		t.Fatal(err)
	}
	env["PROXMOPS_SERVER_DATABASE"] = pgtest.Database(t)
	env["PROXMOPS_ENCRYPTION_KEY"] = strings.TrimSpace(string(key))
	env["PROXMOPS_HA_ADVERTISEURL"] = "http://127.0.0.1:1"

	dir := t.TempDir()
	state := filepath.Join(dir, "state") // StateDirectory=proxmops
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "proxmops.yaml")
	mustWrite(t, conf, readFile(t, "proxmops.yaml"))
	p := &imageProcess{bin: hostBinary(t), vol: state, done: make(chan error, 1), logs: &strings.Builder{}}
	p.env = []string{"PATH=/usr/bin:/bin", "PROXMOPS_CONFIG=" + conf, "PROXMOPS_SERVER_ADDR=" + freeLoopbackAddr(t)}
	// The unit's own Environment= lines come first; EnvironmentFile= adds to them.
	for _, line := range strings.Split(readFile(t, "proxmops.service"), "\n") {
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			p.env = append(p.env, strings.Fields(strings.ReplaceAll(v, `"`, ""))...)
		}
	}
	for k, v := range env {
		p.env = append(p.env, k+"="+v)
	}
	p.cmd = exec.Command(p.bin, "serve")
	p.cmd.Env, p.cmd.Dir = p.env, state
	p.cmd.Stdout, p.cmd.Stderr = io.Discard, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	p.waitHealthy(t)
	if entries, _ := os.ReadDir(state); len(entries) > 0 {
		t.Errorf("on PostgreSQL the service wrote %v into its state directory", entries)
	}
	p.stop(t)
	// Read once serve has ended: its stderr is copied until then.
	if strings.Contains(p.logs.String(), "both are set") {
		t.Errorf("the recipe's settings collide:\n%s", p.logs)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
