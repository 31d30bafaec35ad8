package provision

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/proxmops/proxmops/internal/manifest"
)

func testKeys(t *testing.T) (*Keys, ssh.PublicKey) {
	t.Helper()
	k := NewKeys(&MemStore{}, "")
	s, err := k.Signer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return k, s.PublicKey()
}

func debianHandler(fail string) func(string, []byte) (string, int) {
	return func(cmd string, _ []byte) (string, int) {
		switch {
		case strings.Contains(cmd, "cat /etc/os-release"):
			return "PRETTY_NAME=\"Debian GNU/Linux 12\"\nID=debian\n", 0
		case fail != "" && strings.Contains(cmd, fail):
			return "line 1\nsomething broke\n", 3
		}
		return "ok: " + cmd + "\n", 0
	}
}

func sampleInputs() *Inputs {
	return &Inputs{
		Packages: []string{"apache2", "curl"},
		Files:    []File{{Path: "/var/www/html/index.html", Mode: 0o640, Owner: "www-data:www-data", Data: []byte("<h1>hi</h1>\n")}},
		Copies: []Copy{{Source: "cookbook", Path: "/opt/cookbook", Owner: "root", Tree: []manifest.TreeFile{
			{Path: "recipes/default.rb", Mode: 0o644, Data: []byte("package 'apache2'\n")},
			{Path: "run.sh", Mode: 0o755, Data: []byte("#!/bin/sh\n")}}}},
		Commands: []string{"systemctl enable --now apache2", "echo 'done'"},
	}
}

// Steps run in order over SSH: the package manager read from os-release,
// files written (through SFTP) with their owner, the tree copied, and the
// commands wrapped in /bin/sh -c.
func TestRunAppliesStepsInOrder(t *testing.T) {
	keys, pub := testKeys(t)
	g := newFakeGuest(t, pub, debianHandler(""))
	r := &Runner{Keys: keys, ConnectWait: time.Second}
	tgt := Target{ID: "Container/web", VMID: 200, Host: "127.0.0.1", Port: g.port()}
	o, err := r.Run(context.Background(), tgt, sampleInputs(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := g.ran()
	want := []string{"cat /etc/os-release", "apt-get install -y -q apache2 curl", "chown 'www-data:www-data' -- '/var/www/html/index.html'",
		"chown 'root' -- '/opt/cookbook' '/opt/cookbook/recipes' '/opt/cookbook/recipes/default.rb' '/opt/cookbook/run.sh'",
		"systemctl enable --now apache2", "echo 'done'"}
	if len(ran) != len(want) {
		t.Fatalf("ran %d commands, want %d:\n%s", len(ran), len(want), strings.Join(ran, "\n"))
	}
	for i, w := range want {
		if !strings.HasPrefix(ran[i], "/bin/sh -c '") || !strings.Contains(unquote(strings.TrimPrefix(ran[i], "/bin/sh -c ")), w) {
			t.Errorf("command %d = %s, want it to contain %s", i, ran[i], w)
		}
	}
	if !strings.Contains(o.Summary(), "2 package(s) (apt), 1 file(s), copy /opt/cookbook (2 files), 2 command(s)") ||
		!strings.Contains(o.Tail, "ok: /bin/sh -c 'echo") {
		t.Errorf("summary %q, tail %q", o.Summary(), o.Tail)
	}
	// The files are there, through a second connection's SFTP.
	c, err := r.dial(context.Background(), tgt, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.close()
	for p, content := range map[string]string{"/var/www/html/index.html": "<h1>hi</h1>\n", "/opt/cookbook/recipes/default.rb": "package 'apache2'\n", "/opt/cookbook/run.sh": "#!/bin/sh\n"} {
		f, err := c.sftpClient().Open(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		b, _ := io.ReadAll(f)
		f.Close()
		if string(b) != content {
			t.Errorf("%s = %q", p, b)
		}
	}
	if _, err := c.sftpClient().Stat("/var/www/html/.proxmops-index.html.tmp"); err == nil {
		t.Error("the temporary file is left behind")
	}
}

// Without an SFTP subsystem, files go through the shell: content on stdin,
// mode set before the file replaces the old one.
func TestRunWritesFilesThroughTheShellWithoutSFTP(t *testing.T) {
	keys, pub := testKeys(t)
	var got []byte
	g := newFakeGuest(t, pub, func(cmd string, stdin []byte) (string, int) {
		if strings.Contains(cmd, "cat >") {
			got = stdin
		}
		return "", 0
	})
	g.noSFTP = true
	r := &Runner{Keys: keys, ConnectWait: time.Second}
	in := &Inputs{Files: []File{{Path: "/etc/motd", Mode: 0o600, Data: []byte("it's me\n")}}}
	if _, err := r.Run(context.Background(), Target{ID: "Container/a", VMID: 1, Host: "127.0.0.1", Port: g.port()}, in, nil); err != nil {
		t.Fatal(err)
	}
	ran := g.ran()
	if len(ran) != 1 {
		t.Fatalf("commands: %q", ran)
	}
	if cmd := unquote(strings.TrimPrefix(ran[0], "/bin/sh -c ")); !strings.Contains(cmd, "mkdir -p -- '/etc'") || !strings.Contains(cmd, "chmod 600") ||
		!strings.Contains(cmd, "mv -f -- '/etc/.proxmops-motd.tmp' '/etc/motd'") {
		t.Fatalf("commands: %q", ran)
	}
	if string(got) != "it's me\n" {
		t.Fatalf("stdin %q", got)
	}
}

// A failing command stops the run: the error names the step, the exit
// status and the last lines of output; later commands do not run.
func TestRunStopsAtAFailingCommand(t *testing.T) {
	keys, pub := testKeys(t)
	g := newFakeGuest(t, pub, debianHandler("exit 3"))
	r := &Runner{Keys: keys, ConnectWait: time.Second}
	in := &Inputs{Commands: []string{"true", "echo broke; exit 3", "touch /never"}}
	_, err := r.Run(context.Background(), Target{ID: "Container/a", VMID: 1, Host: "127.0.0.1", Port: g.port()}, in, nil)
	var se *StepError
	if !errors.As(err, &se) || se.ExitStatus != 3 || !strings.Contains(se.Step, "command 2/3") || !strings.Contains(se.Tail, "something broke") {
		t.Fatalf("err = %v", err)
	}
	if !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), "something broke") {
		t.Fatalf("message: %v", err)
	}
	for _, c := range g.ran() {
		if strings.Contains(c, "touch /never") {
			t.Fatal("a command after the failing one ran")
		}
	}
}

// The host key is pinned on first contact; another key is refused with a
// message that says how to reset the pin; a reset, or a new VMID behind the
// name (a recreated guest), pins anew.
func TestHostKeyPinnedOnFirstUse(t *testing.T) {
	keys, pub := testKeys(t)
	g := newFakeGuest(t, pub, debianHandler(""))
	r := &Runner{Keys: keys, ConnectWait: time.Second}
	ctx := context.Background()
	tgt := Target{ID: "Container/web", VMID: 200, Host: "127.0.0.1", Port: g.port()}
	in := &Inputs{Commands: []string{"true"}}
	if _, err := r.Run(ctx, tgt, in, nil); err != nil {
		t.Fatal(err)
	}
	pin, ok, err := keys.HostKey(ctx, "Container/web")
	if err != nil || !ok || pin.VMID != 200 || pin.Fingerprint != ssh.FingerprintSHA256(g.hostKey.PublicKey()) {
		t.Fatalf("pin %+v %v %v", pin, ok, err)
	}
	if _, err := r.Run(ctx, tgt, in, nil); err != nil {
		t.Fatalf("same key refused: %v", err)
	}
	g.rekey()
	n := len(g.ran())
	_, err = r.Run(ctx, tgt, in, nil)
	var hk *HostKeyError
	if !errors.As(err, &hk) || !strings.Contains(err.Error(), "DELETE /api/v1/resources/Container/web/hostkey") || !strings.Contains(err.Error(), pin.Fingerprint) {
		t.Fatalf("err = %v", err)
	}
	if len(g.ran()) != n {
		t.Fatal("a command ran on a guest with a changed host key")
	}
	if err := keys.ResetHostKey(ctx, "Container/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Run(ctx, tgt, in, nil); err != nil {
		t.Fatalf("after a reset: %v", err)
	}
	g.rekey()
	tgt.VMID = 201
	if _, err := r.Run(ctx, tgt, in, nil); err != nil {
		t.Fatalf("a recreated guest (new VMID) must pin anew: %v", err)
	}
}

// A guest that refuses the key (cloud-init has not written it yet) is
// retried until the wait is over, then the error says so.
func TestRunGivesUpOnARefusedKeyAfterTheWait(t *testing.T) {
	keys, _ := testKeys(t)
	other, _ := testKeys(t)
	s, _ := other.Signer(context.Background())
	g := newFakeGuest(t, s.PublicKey(), debianHandler(""))
	r := &Runner{Keys: keys, ConnectWait: 600 * time.Millisecond}
	_, err := r.Run(context.Background(), Target{ID: "Container/a", VMID: 1, Host: "127.0.0.1", Port: g.port(), User: "admin"}, &Inputs{Commands: []string{"true"}}, nil)
	var se *StepError
	if !errors.As(err, &se) || se.Step != "connect" || !strings.Contains(err.Error(), "unable to authenticate") || !strings.Contains(err.Error(), "as admin") {
		t.Fatalf("err = %v", err)
	}
	if len(g.ran()) != 0 {
		t.Fatal("ran a command without authenticating")
	}
}

// The generated key is made once and kept (encrypted) in the store; a key
// file, when configured, is used instead.
func TestClientKeyGeneratedOnceOrFromFile(t *testing.T) {
	ctx := context.Background()
	st := &MemStore{}
	a, err := NewKeys(st, "").PublicKey(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewKeys(st, "").PublicKey(ctx)
	if err != nil || a != b || !strings.HasPrefix(a, "ssh-ed25519 ") || !strings.HasSuffix(a, " proxmops") {
		t.Fatalf("a=%q b=%q err=%v", a, b, err)
	}
	pemBytes, err := generateKey()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "id_ed25519")
	if err := os.WriteFile(file, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := NewKeys(st, file).PublicKey(ctx)
	if err != nil || c == a {
		t.Fatalf("key file not used: %q %v", c, err)
	}
	if _, err := NewKeys(st, filepath.Join(t.TempDir(), "missing")).PublicKey(ctx); err == nil || !strings.Contains(err.Error(), "provision.sshKeyFile") {
		t.Fatalf("missing key file: %v", err)
	}
}

func TestPackageManagerFromOSRelease(t *testing.T) {
	for _, tc := range []struct{ release, want string }{
		{"ID=debian\n", "apt"},
		{"ID=ubuntu\nID_LIKE=debian\n", "apt"},
		{`ID="alpine"`, "apk"},
		{"ID=rocky\nID_LIKE=\"rhel centos fedora\"\n", "dnf"},
		{"ID=weird\nID_LIKE=\"something debian\"\n", "apt"},
		{"ID=arch\n", ""},
	} {
		pm, _, err := packageManagerFor(tc.release)
		if pm.name != tc.want || (tc.want == "") != (err != nil) {
			t.Errorf("%q: got %q, %v; want %q", tc.release, pm.name, err, tc.want)
		}
	}
}
