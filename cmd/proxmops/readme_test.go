package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/vocab"
)

// readmeBlock returns the command lines of the first ```sh block of the
// README section headed heading, comments and blank lines dropped.
func readmeBlock(t *testing.T, heading, contains string) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(doc), "\n## "+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no section %q", heading)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	for _, part := range strings.Split(section, "```sh\n")[1:] {
		body, _, _ := strings.Cut(part, "```")
		if !strings.Contains(body, contains) {
			continue
		}
		var lines []string
		for _, line := range strings.Split(body, "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				lines = append(lines, line)
			}
		}
		return lines
	}
	t.Fatalf("README.md's section %q has no ```sh block with %q", heading, contains)
	return nil
}

var (
	fieldChange     = regexp.MustCompile(`(?m)^\s+[+~-] [\w.\[\]]+: .*$`)
	fieldChangeTags = regexp.MustCompile(`(?m)^\s+[+~-] tags: .*$`)
)

// readmeRunner runs README command lines as a user types them: proxmops
// commands through the CLI, git in the checkout; words are substituted.
type readmeRunner struct {
	t        *testing.T
	checkout string
	words    map[string]string
}

func (r readmeRunner) run(line string) string {
	r.t.Helper()
	var out strings.Builder
	for _, cmd := range strings.Split(line, "&&") {
		args := strings.Fields(cmd)
		for i, a := range args {
			if w, ok := r.words[strings.Trim(a, `"`)]; ok {
				args[i] = w
			}
		}
		switch args[0] {
		case "proxmops":
			code, stdout, stderr := runCLI(r.t, args[1:]...)
			if code != 0 {
				r.t.Fatalf("README: %s: exit %d\n%s%s", line, code, stdout, stderr)
			}
			out.WriteString(stdout)
		case "git":
			c := exec.Command("git", args[1:]...)
			// `git commit` opens the editor: the user writes a message.
			c.Dir, c.Env = r.checkout, append(os.Environ(), "GIT_EDITOR=sh -c 'echo Onboard the cluster > \"$1\"' --")
			if b, err := c.CombinedOutput(); err != nil {
				r.t.Fatalf("README: %s: %v\n%s", line, err, b)
			}
		default:
			r.t.Fatalf("README: %s: a command this test does not know", line)
		}
	}
	return out.String()
}

// TestREADMEOnboardingAndCIAsWritten follows the README's "Onboarding an
// existing cluster" block line by line, in a Git checkout, with the
// daemon running (its configuration outside the checkout): the
// hand-made guest is exported, committed, planned as an adoption only and
// adopted by the daemon; then the CI lines of "Running it against a real
// cluster" pass on the result.
func TestREADMEOnboardingAndCIAsWritten(t *testing.T) {
	sim, _ := cliEnv(t)
	addApp01(t, sim, "boot", "order=scsi0;net0")
	checkout := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "you@example.com"}, {"config", "user.name", "You"},
		{"commit", "-q", "--allow-empty", "-m", "start"}} {
		if b, err := exec.Command("git", append([]string{"-C", checkout}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, b)
		}
	}
	etc := t.TempDir()
	conf := filepath.Join(etc, "proxmops.yaml")
	if err := os.WriteFile(conf, []byte("cluster:\n  endpoint: "+sim.APIURL()+"\n  tokenId: root@pam!cli\n  fingerprint: \""+sim.Fingerprint()+
		"\"\nsource:\n  repoURL: "+checkout+"\n  path: proxmox\n  revision: main\nserver:\n  databasePath: "+filepath.Join(etc, "proxmops.db")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PROXMOPS_CONFIG", conf)
	t.Setenv("PROXMOPS_SERVER_DATABASEPATH", "")
	os.Unsetenv("PROXMOPS_SERVER_DATABASEPATH")
	onboarding := readmeBlock(t, "Onboarding an existing cluster", "proxmops export")
	ci := readmeBlock(t, "Running it against a real cluster", "proxmops validate")
	t.Chdir(checkout)

	base, c, tok, _ := serveAndSetUp(t, "serve", "--addr", "127.0.0.1:0", "--log-format", "text")
	t.Setenv("PROXMOPS_CLI_TOKEN", tok.Token)

	r := readmeRunner{t: t, checkout: checkout, words: map[string]string{"URL": base, "proxmops.yaml": conf, "$PR_BRANCH": "main"}}
	for _, line := range onboarding {
		out := r.run(line)
		if strings.HasPrefix(line, "proxmops plan") {
			if !strings.Contains(out, "~ VirtualMachine/app-01 (pve1, vmid 120): adopt") || !strings.Contains(out, "Plan: 0 to create, 1 to update, 0 to reboot, 0 to delete.") ||
				fieldChange.ReplaceAllString(out, "") != fieldChangeTags.ReplaceAllString(out, "") {
				t.Fatalf("README says the plan shows only the adoption with the ownership tag; it shows:\n%s", out)
			}
		}
	}
	if g, _ := sim.Guest(120); !strings.Contains(g.Config["tags"], engine.OwnerTag) {
		t.Fatalf("the README's onboarding did not adopt the guest: %v", g.Config)
	}
	waitStatus(t, c, "app-01", vocab.StatusSynced)
	for _, line := range ci {
		r.run(line)
	}
	assertNoState(t, checkout)
}
