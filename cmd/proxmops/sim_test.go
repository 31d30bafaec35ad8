package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/proxmops/proxmops/internal/simtest"
)

func TestSimRejectsBadFlags(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"empty token id", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", ""}},
		{"bad faults", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--faults", "error-rate=2"}},
		{"unknown fault", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--faults", "explode=1"}},
		{"negative status interval", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--status-interval", "-1s"}},
		{"guest SSH port out of range", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--guest-ssh-port", "70000"}},
		{"unknown privilege", []string{"sim", "--listen", "127.0.0.1:0", "--token-id", "root@pam!t", "--token-secret", "s", "--token-privileges", "VM.Audit,VM.Fly"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			rootCmd.SetOut(&out)
			defer rootCmd.SetOut(nil)
			if code := run(tt.args); code != 1 {
				t.Fatalf("exit code %d, want 1", code)
			}
		})
	}
}

// TestSimGuestSSHRunsCommandsInTheGuest starts `proxmops sim
// --guest-ssh-port`, creates and starts a container with a key over the
// API and runs a command in it over SSH; its files sit beside the state.
func TestSimGuestSSHRunsCommandsInTheGuest(t *testing.T) {
	const ip = "127.78.0.10"
	port := simtest.GuestSSHPort(t, ip)
	state := filepath.Join(t.TempDir(), "cluster.json")
	out, _ := background(t, "sim", "--listen", "127.0.0.1:0", "--http", "--task-speed", "0", "--token-secret", "s",
		"--guest-ssh-port", strconv.Itoa(port), "--state", state)
	base := waitFor(t, out, regexp.MustCompile(`pvesim listening on (\S+)`))[1]
	line := waitFor(t, out, regexp.MustCompile(`pvesim guest SSH on port (\d+) .* guest files under (\S+)`))
	if line[1] != strconv.Itoa(port) || line[2] != state+".guests" {
		t.Fatalf("guest SSH line %q", line[0])
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	signer, _ := ssh.NewSignerFromKey(priv)
	post := func(path string, form url.Values) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Authorization", "PVEAPIToken=root@pam!sim=s")
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, body)
		}
	}
	post("/nodes/pve1/aplinfo", url.Values{"storage": {"local"}, "template": {"debian-12-standard_12.7-1_amd64.tar.zst"}})
	post("/nodes/pve1/lxc", url.Values{"vmid": {"200"}, "ostemplate": {"local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"},
		"rootfs": {"local-lvm:4"}, "net0": {"name=eth0,bridge=vmbr0,ip=" + ip + "/8"}, "start": {"1"},
		"ssh-public-keys": {string(ssh.MarshalAuthorizedKey(signer.PublicKey()))}})
	cl, err := ssh.Dial("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), &ssh.ClientConfig{User: "root",
		Auth: []ssh.AuthMethod{ssh.PublicKeys(signer)}, HostKeyCallback: ssh.InsecureIgnoreHostKey()})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	sess, err := cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	if err := sess.Run("echo made-in-guest > /root/proof"); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(state+".guests", "200", "root", "proof")); err != nil || string(b) != "made-in-guest\n" {
		t.Fatalf("guest file: %q, %v", b, err)
	}
}
