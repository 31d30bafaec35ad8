package packaging_test

import (
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// runInstaller runs install.sh with the release at baseURL into prefix.
func runInstaller(t *testing.T, baseURL, prefix string, args ...string) (string, error) {
	t.Helper()
	argv := append([]string{filepath.Join(repoRoot(t), "packaging", "install.sh"), "--prefix", prefix}, args...)
	cmd := exec.Command("sh", argv...)
	cmd.Env = append(os.Environ(), "PROXMOPS_BASE_URL="+baseURL, "PROXMOPS_VERSION=")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func needDownloader(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"curl", "wget"} {
		if _, err := exec.LookPath(tool); err == nil {
			return
		}
	}
	t.Skip("install.sh needs curl or wget; neither is installed")
}

func installedVersion(t *testing.T, bin string) string {
	t.Helper()
	out, err := exec.Command(bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	return string(out)
}

func TestInstallerInstallsVerifiesUpgradesAndUninstalls(t *testing.T) {
	needDownloader(t)
	dir, archive := release(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	prefix := t.TempDir()

	out, err := runInstaller(t, srv.URL, prefix, "--no-start")
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if !strings.Contains(out, "checksum verified") {
		t.Errorf("install output does not report the checksum check:\n%s", out)
	}
	bin := filepath.Join(prefix, "usr/local/bin/proxmops")
	if v := installedVersion(t, bin); !strings.Contains(v, "proxmops "+testVersion) {
		t.Fatalf("installed binary says %q, want version %s", v, testVersion)
	}
	for _, f := range []string{
		"etc/systemd/system/proxmops.service",
		"etc/proxmops/proxmops.yaml",
		"usr/share/bash-completion/completions/proxmops",
		"usr/local/share/zsh/site-functions/_proxmops",
		"usr/share/fish/vendor_completions.d/proxmops.fish",
		"usr/local/share/man/man1/proxmops.1",
		"usr/local/share/man/man1/proxmops-serve.1",
	} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("not installed: %s", f)
		}
	}
	if st, err := os.Stat(filepath.Join(prefix, "var/lib/proxmops")); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v %v", st, err)
	}
	unit, _ := os.ReadFile(filepath.Join(prefix, "etc/systemd/system/proxmops.service"))
	if !strings.Contains(string(unit), "ExecStart=/usr/local/bin/proxmops serve") {
		t.Errorf("installed unit does not start the installed binary:\n%s", unit)
	}

	// State and a configuration changed by hand, as a running service has them.
	conf := filepath.Join(prefix, "etc/proxmops/proxmops.yaml")
	db := filepath.Join(prefix, "var/lib/proxmops/proxmops.db")
	mustWrite(t, conf, "server:\n  addr: \":9090\"\n")
	mustWrite(t, db, "database")

	// Re-running upgrades in place and keeps the configuration.
	if out, err := runInstaller(t, srv.URL, prefix, "--no-start"); err != nil {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	if got, _ := os.ReadFile(conf); string(got) != "server:\n  addr: \":9090\"\n" {
		t.Errorf("re-install replaced the configuration: %q", got)
	}
	installedVersion(t, bin)

	// A tampered archive is refused and leaves the installed binary alone.
	before := fileSHA256(t, bin)
	tampered := filepath.Join(dir, archive)
	data, err := os.ReadFile(tampered)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xff
	mustWrite(t, tampered, string(data))
	out, err = runInstaller(t, srv.URL, prefix, "--no-start")
	if err == nil || !strings.Contains(out, "checksum mismatch") {
		t.Fatalf("tampered archive: err %v, output:\n%s", err, out)
	}
	if fileSHA256(t, bin) != before {
		t.Fatal("a refused install changed the installed binary")
	}
	fresh := t.TempDir()
	if out, err := runInstaller(t, srv.URL, fresh, "--no-start"); err == nil {
		t.Fatalf("tampered archive installed into a fresh prefix:\n%s", out)
	}
	if files := listFiles(t, fresh); len(files) != 0 {
		t.Fatalf("a refused install left files: %v", files)
	}

	// Uninstall removes the program and keeps state and configuration.
	if out, err := runInstaller(t, srv.URL, prefix, "--uninstall"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	left := listFiles(t, prefix)
	want := []string{"etc/proxmops/proxmops.yaml", "var/lib/proxmops/proxmops.db"}
	if strings.Join(left, " ") != strings.Join(want, " ") {
		t.Fatalf("after uninstall: %v, want only %v", left, want)
	}
}

func TestInstallerRefusesAReleaseWithoutItsChecksum(t *testing.T) {
	needDownloader(t)
	dir, _ := release(t)
	mustWrite(t, filepath.Join(dir, "checksums.txt"), strings.Repeat("0", 64)+"  proxmops_plan9_mips.tar.gz\n")
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	prefix := t.TempDir()
	out, err := runInstaller(t, srv.URL, prefix, "--no-start")
	if err == nil || !strings.Contains(out, "checksums.txt has no entry") {
		t.Fatalf("err %v, output:\n%s", err, out)
	}
	if files := listFiles(t, prefix); len(files) != 0 {
		t.Fatalf("installed without a checksum: %v", files)
	}
}

// On macOS /usr is read-only but /usr/local: the installer puts the binary,
// man pages and completions under /usr/local, installs no service, and a
// completion directory it cannot make is skipped with a note, not the end of
// the install. The layout is made here: uname answers Darwin, /usr/share is a
// file (nothing can be made under it, even as root), and so is fish's share.
func TestInstallerOnAMacOSLayoutInstallsUnderUsrLocalAndSkipsWhatItCannotWrite(t *testing.T) {
	needDownloader(t)
	dir, archive := release(t)
	darwin := strings.Replace(archive, "linux", "darwin", 1)
	data, err := os.ReadFile(filepath.Join(dir, archive))
	if err != nil {
		t.Fatal(err)
	}
	mustWrite(t, filepath.Join(dir, darwin), string(data))
	sums, _ := os.ReadFile(filepath.Join(dir, "checksums.txt"))
	mustWrite(t, filepath.Join(dir, "checksums.txt"), strings.ReplaceAll(string(sums), archive, darwin))
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()

	fake := t.TempDir()
	uname := "#!/bin/sh\ncase \"$1\" in -s) echo Darwin ;; *) exec " + lookPath(t, "uname") + " \"$@\" ;; esac\n"
	if err := os.WriteFile(filepath.Join(fake, "uname"), []byte(uname), 0o755); err != nil {
		t.Fatal(err)
	}
	prefix := t.TempDir()
	for _, blocked := range []string{"usr/share", "usr/local/share/fish"} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(prefix, blocked)), 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(prefix, blocked), "not a directory")
	}
	cmd := exec.Command("sh", filepath.Join(repoRoot(t), "packaging", "install.sh"), "--prefix", prefix)
	cmd.Env = append(os.Environ(), "PATH="+fake+string(os.PathListSeparator)+os.Getenv("PATH"),
		"PROXMOPS_BASE_URL="+srv.URL, "PROXMOPS_VERSION=")
	outb, err := cmd.CombinedOutput()
	out := string(outb)
	if err != nil {
		t.Fatalf("install on the macOS layout: %v\n%s", err, out)
	}
	if !strings.Contains(out, darwin) {
		t.Errorf("did not fetch the darwin archive:\n%s", out)
	}
	installedVersion(t, filepath.Join(prefix, "usr/local/bin/proxmops"))
	for _, f := range []string{
		"usr/local/share/bash-completion/completions/proxmops",
		"usr/local/share/zsh/site-functions/_proxmops",
		"usr/local/share/man/man1/proxmops.1",
	} {
		if _, err := os.Stat(filepath.Join(prefix, f)); err != nil {
			t.Errorf("not installed: %s", f)
		}
	}
	if !strings.Contains(out, "skipped "+filepath.Join(prefix, "usr/local/share/fish/vendor_completions.d/proxmops.fish")) {
		t.Errorf("the fish completion's unwritable directory is not named as skipped:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(prefix, "etc/systemd/system/proxmops.service")); err == nil {
		t.Error("a systemd unit was installed on macOS")
	}
	if !strings.Contains(out, "no systemd service on darwin") {
		t.Errorf("the install does not say how to run the daemon on macOS:\n%s", out)
	}
}

func lookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed", name)
	}
	return p
}

func TestInstallScriptsAreShellcheckClean(t *testing.T) {
	if _, err := exec.LookPath("shellcheck"); err != nil {
		t.Skip("shellcheck is not installed (apt-get install shellcheck); CI installs it")
	}
	scripts, _ := filepath.Glob("*.sh")
	nfpm, _ := filepath.Glob("nfpm/*.sh")
	scripts = append(scripts, nfpm...)
	if len(scripts) < 4 {
		t.Fatalf("found only %v", scripts)
	}
	out, err := exec.Command("shellcheck", append([]string{"--shell=sh", "--severity=style"}, scripts...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck: %v\n%s", err, out)
	}
	// The CI entry point, a bash script, that installs what these tests use.
	out, err = exec.Command("shellcheck", "--shell=bash", "--severity=style", filepath.Join(repoRoot(t), ".ci", "run")).CombinedOutput()
	if err != nil {
		t.Fatalf("shellcheck .ci/run: %v\n%s", err, out)
	}
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
