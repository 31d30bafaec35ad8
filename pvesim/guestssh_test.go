package pvesim

import (
	"bytes"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/pkg/sftp"
	"golang.org/x/crypto/ssh"

	"github.com/proxmops/proxmops/internal/sshtest"
	"github.com/proxmops/proxmops/pvesim/guestssh"
)

// guestKey is a fresh client key pair and its authorized_keys line.
func guestKey(t *testing.T) (ssh.Signer, string) {
	t.Helper()
	signer, _ := sshtest.NewKey(t)
	return signer, strings.TrimSpace(string(ssh.MarshalAuthorizedKey(signer.PublicKey()))) + " test@pvesim"
}

// freePort is a port free on ip (a loopback address).
func freePort(t *testing.T, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// guestSSHSim is a simulator with guest SSH on a free port of ip, trees
// under a test folder; it returns that SSH address.
func guestSSHSim(t *testing.T, ip string) (*Server, *client, string, string) {
	t.Helper()
	port := freePort(t, ip)
	dir := t.TempDir()
	srv, c := lxcSim(t, Options{GuestSSHPort: port, GuestRoot: dir, StatusInterval: -1})
	return srv, c, net.JoinHostPort(ip, strconv.Itoa(port)), dir
}

// rootGuest is container vmid, created and started at ip on a simulator
// with guest SSH with a fresh key for root; cl is root logged in with that
// key until the test ends, hostKey the host key the guest showed.
type rootGuest struct {
	srv       *Server
	c         *client
	addr, dir string // the guest's SSH address; the folder of guest trees
	key       ssh.Signer
	authLine  string
	cl        *ssh.Client
	hostKey   ssh.PublicKey
}

func newRootGuest(t *testing.T, ip, vmid string) *rootGuest {
	t.Helper()
	g := &rootGuest{}
	g.srv, g.c, g.addr, g.dir = guestSSHSim(t, ip)
	g.key, g.authLine = guestKey(t)
	createCT(t, g.c, vmid, "net0", "name=eth0,bridge=vmbr0,ip="+ip+"/8", "ssh-public-keys", g.authLine, "start", "1")
	g.cl, g.hostKey = mustDial(t, g.addr, "root", g.key)
	t.Cleanup(func() { g.cl.Close() })
	return g
}

// mustDial logs in to a guest's SSH server, failing the test when it
// cannot; it returns the client and the host key the server showed.
func mustDial(t *testing.T, addr, user string, key ssh.Signer) (*ssh.Client, ssh.PublicKey) {
	t.Helper()
	cl, hostKey, err := dialGuest(addr, user, key)
	if err != nil {
		t.Fatal(err)
	}
	return cl, hostKey
}

// dialGuest logs in with key and returns the client and the host key seen.
func dialGuest(addr, user string, key ssh.Signer) (*ssh.Client, ssh.PublicKey, error) {
	var hostKey ssh.PublicKey
	cfg := &ssh.ClientConfig{User: user, Auth: []ssh.AuthMethod{ssh.PublicKeys(key)},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error { hostKey = k; return nil }}
	cl, err := ssh.Dial("tcp", addr, cfg)
	return cl, hostKey, err
}

// runGuest runs a command and returns its stdout, stderr and exit status.
func runGuest(t *testing.T, cl *ssh.Client, cmd string) (string, string, int) {
	t.Helper()
	sess, err := cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	var out, errb bytes.Buffer
	sess.Stdout, sess.Stderr = &out, &errb
	err = sess.Run(cmd)
	code := 0
	var ee *ssh.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitStatus()
	case err != nil:
		t.Fatalf("run %q: %v", cmd, err)
	}
	return out.String(), errb.String(), code
}

func mustRun(t *testing.T, cl *ssh.Client, cmd string) string {
	t.Helper()
	out, errs, code := runGuest(t, cl, cmd)
	if code != 0 {
		t.Fatalf("%q: exit %d, stderr %q", cmd, code, errs)
	}
	return out
}

func TestGuestSSHContainerRunsCommandsInItsOwnTree(t *testing.T) {
	const ip = "127.77.0.10"
	srv, c, addr, dir := guestSSHSim(t, ip)
	key, authLine := guestKey(t)
	createCT(t, c, "300", "hostname", "web-01", "net0", "name=eth0,bridge=vmbr0,ip="+ip+"/8",
		"ssh-public-keys", authLine+"\n")
	if _, err := srv.GuestSSHAddr(300); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("stopped guest: GuestSSHAddr error = %v", err)
	}
	if _, _, err := dialGuest(addr, "root", key); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("stopped guest: dial error = %v, want connection refused", err)
	}
	mustTaskOK(t, c, "POST", "/nodes/pve1/lxc/300/status/start", nil)
	if got, err := srv.GuestSSHAddr(300); err != nil || got != addr {
		t.Fatalf("GuestSSHAddr = %q, %v; want %s", got, err, addr)
	}
	if srv.GuestTree(300) != filepath.Join(dir, "300") {
		t.Fatalf("GuestTree = %s", srv.GuestTree(300))
	}
	cl, hostKey := mustDial(t, addr, "root", key)
	defer cl.Close()

	out, errs, code := runGuest(t, cl, "echo hello; echo oops >&2; exit 3")
	if out != "hello\n" || errs != "oops\n" || code != 3 {
		t.Errorf("exec: stdout %q stderr %q status %d; want hello, oops, 3", out, errs, code)
	}
	if got := mustRun(t, cl, ". /etc/os-release; echo $ID; hostname; id -u; pwd; echo $HOME"); got != "debian\nweb-01\n0\n/root\n/root\n" {
		t.Errorf("guest identity = %q", got)
	}
	keys, err := os.ReadFile(filepath.Join(dir, "300/root/.ssh/authorized_keys"))
	if err != nil || string(keys) != "# --- BEGIN PVE ---\n"+authLine+"\n# --- END PVE ---\n" {
		t.Errorf("authorized_keys = %q, %v; want the key in pve-container's PVE section", keys, err)
	}

	// Writes land in the guest's tree, never on the host.
	name := "pvesim-guestssh-" + strconv.FormatInt(int64(os.Getpid()), 10)
	mustRun(t, cl, "echo from-guest > /"+name+" && mkdir -p /opt/app && echo cfg > /opt/app/conf")
	if b, err := os.ReadFile(filepath.Join(dir, "300", name)); err != nil || string(b) != "from-guest\n" {
		t.Errorf("guest file in tree: %q, %v", b, err)
	}
	if _, err := os.Stat("/" + name); !os.IsNotExist(err) {
		t.Errorf("the guest's write reached the host's /%s: %v", name, err)
	}
	if _, _, code := runGuest(t, cl, "test -e "+dir); code == 0 {
		t.Errorf("the host's folder %s is visible in the guest", dir)
	}
	if got := mustRun(t, cl, "ls /proc | grep -c '^[0-9]'"); got != "3\n" && got != "2\n" {
		t.Errorf("processes seen by the guest: %q, want its own few", got)
	}
	if _, errs, code := runGuest(t, cl, "touch /usr/bin/"+name); code == 0 || !strings.Contains(errs, "Read-only file system") {
		t.Errorf("write to /usr: status %d stderr %q; want a read-only failure", code, errs)
	}
	if _, err := os.Stat("/usr/bin/" + name); !os.IsNotExist(err) {
		t.Errorf("the guest wrote the host's /usr/bin/%s", name)
	}

	if got := mustRun(t, cl, "mkdir -p /var/www && touch /var/www/index.html && chown www-data:www-data /var/www/index.html && stat -c %U:%G /var/www/index.html"); got != "www-data:www-data\n" {
		t.Errorf("owner of a file given to www-data: %q", got)
	}

	// The same host key on every connection while the guest exists.
	cl2, hostKey2 := mustDial(t, addr, "root", key)
	cl2.Close()
	if !bytes.Equal(hostKey.Marshal(), hostKey2.Marshal()) {
		t.Error("host key changed between two connections")
	}
}

func TestGuestSSHRefusesUnknownKeysAndUsers(t *testing.T) {
	const ip = "127.77.0.11"
	_, c, addr, _ := guestSSHSim(t, ip)
	key, authLine := guestKey(t)
	other, _ := guestKey(t)
	createCT(t, c, "301", "net0", "name=eth0,bridge=vmbr0,ip="+ip+"/8", "ssh-public-keys", authLine, "start", "1")
	for _, tc := range []struct {
		name, user string
		key        ssh.Signer
	}{{"a key not injected", "root", other}, {"a user the guest lacks", "admin", key}} {
		if cl, _, err := dialGuest(addr, tc.user, tc.key); err == nil {
			cl.Close()
			t.Errorf("%s: login accepted", tc.name)
		} else if !strings.Contains(err.Error(), "unable to authenticate") {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	cl, _ := mustDial(t, addr, "root", key)
	cl.Close()
}

func TestGuestSSHSFTPIsRootedAtTheGuestTree(t *testing.T) {
	const ip = "127.77.0.12"
	g := newRootGuest(t, ip, "302")
	sc, err := sftp.NewClient(g.cl)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	if err := sc.MkdirAll("/etc/app"); err != nil {
		t.Fatal(err)
	}
	f, err := sc.Create("/etc/app/motd")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("hello from sftp\n")); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := sc.Chmod("/etc/app/motd", 0o640); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(g.dir, "302/etc/app/motd"))
	if err != nil || fi.Mode().Perm() != 0o640 {
		t.Fatalf("file in the tree: %v, %v", fi, err)
	}
	if b, _ := os.ReadFile(filepath.Join(g.dir, "302/etc/app/motd")); string(b) != "hello from sftp\n" {
		t.Errorf("content = %q", b)
	}
	if _, err := os.Stat("/etc/app/motd"); !os.IsNotExist(err) {
		t.Error("the SFTP write reached the host's /etc/app/motd")
	}
	if wd, err := sc.Getwd(); err != nil || wd != "/root" {
		t.Errorf("sftp working directory = %q, %v; want /root", wd, err)
	}
	if _, err := sc.Create("/usr/pvesim-sftp-test"); err == nil {
		t.Error("an SFTP write to /usr succeeded")
	}
	// What the host has read-only is readable.
	if _, err := sc.Stat("/bin/sh"); err != nil {
		t.Errorf("stat /bin/sh over SFTP: %v", err)
	}
	// The guest sees what SFTP wrote.
	if got := mustRun(t, g.cl, "cat /etc/app/motd"); got != "hello from sftp\n" {
		t.Errorf("cat = %q", got)
	}
}

func TestGuestSSHPackageStandIns(t *testing.T) {
	const ip = "127.77.0.13"
	g := newRootGuest(t, ip, "303")
	if got := mustRun(t, g.cl, "command -v apt-get"); got != "/usr/local/sbin/apt-get\n" {
		t.Errorf("apt-get is %q", got)
	}
	mustRun(t, g.cl, "apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y -o Dpkg::Options::=--force-confdef apache2 curl=8.0")
	mustRun(t, g.cl, "apt-get -q -y install curl")
	b, err := os.ReadFile(filepath.Join(g.dir, "303", guestssh.InstalledPackagesPath))
	if err != nil || string(b) != "apache2\ncurl\n" {
		t.Errorf("installed-packages = %q, %v", b, err)
	}
	if _, _, code := runGuest(t, g.cl, "dpkg-query -W apache2"); code != 0 {
		t.Errorf("dpkg-query for an installed package: status %d", code)
	}
	if _, _, code := runGuest(t, g.cl, "dpkg-query -W nginx"); code != 1 {
		t.Errorf("dpkg-query for a package not installed: status %d", code)
	}
	if _, errs, code := runGuest(t, g.cl, "apt-get install -y missing-thing apache2"); code != 100 || !strings.Contains(errs, "Unable to locate package missing-thing") {
		t.Errorf("unknown package: status %d stderr %q", code, errs)
	}
	mustRun(t, g.cl, "sudo apt-get remove -y curl")
	if b, _ := os.ReadFile(filepath.Join(g.dir, "303", guestssh.InstalledPackagesPath)); string(b) != "apache2\n" {
		t.Errorf("after remove: %q", b)
	}
}

func TestGuestSSHPackageManagerFollowsOSType(t *testing.T) {
	for _, tc := range []struct {
		template, id, pm, install string
	}{
		{"local:vztmpl/alpine-3.22-default_20250617_amd64.tar.xz", "alpine", "apk", "apk add --no-cache redis"},
		{"local:vztmpl/fedora-42-default_20250428_amd64.tar.xz", "fedora", "dnf", "dnf install -y redis"},
		{"local:vztmpl/ubuntu-24.04-standard_24.04-2_amd64.tar.zst", "ubuntu", "apt-get", "apt-get install -y redis"},
	} {
		t.Run(tc.id, func(t *testing.T) {
			ip := map[string]string{"alpine": "127.77.1.1", "fedora": "127.77.1.2", "ubuntu": "127.77.1.3"}[tc.id]
			srv, c, addr, dir := guestSSHSim(t, ip)
			mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: tc.template, Size: 100 << 20})
			key, authLine := guestKey(t)
			createCT(t, c, "310", "ostemplate", tc.template, "net0", "name=eth0,bridge=vmbr0,ip="+ip+"/8",
				"ssh-public-keys", authLine, "start", "1")
			cl, _ := mustDial(t, addr, "root", key)
			defer cl.Close()
			if got := mustRun(t, cl, ". /etc/os-release; echo $ID; command -v "+tc.pm); got != tc.id+"\n/usr/local/sbin/"+tc.pm+"\n" {
				t.Errorf("os-release and package manager: %q", got)
			}
			mustRun(t, cl, tc.install)
			if b, _ := os.ReadFile(filepath.Join(dir, "310", guestssh.InstalledPackagesPath)); string(b) != "redis\n" {
				t.Errorf("installed-packages = %q", b)
			}
		})
	}
}

func TestGuestSSHFollowsTheGuestLifecycle(t *testing.T) {
	const ip = "127.77.0.14"
	g := newRootGuest(t, ip, "304")
	mustRun(t, g.cl, "echo kept > /root/data")
	// A command still running when the guest stops is ended with it.
	sess, err := g.cl.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	sess.Stdout = &out
	stdin, _ := sess.StdinPipe()
	if err := sess.Start("echo started; cat"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(out.String(), "started") })

	mustTaskOK(t, g.c, "POST", "/nodes/pve1/lxc/304/status/stop", nil)
	if err := sess.Wait(); err == nil {
		t.Error("the command outlived the guest's stop")
	}
	stdin.Close()
	g.cl.Close()
	if _, _, err := dialGuest(g.addr, "root", g.key); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("stopped guest: dial error = %v, want connection refused", err)
	}
	// Started again: same tree, same host key.
	mustTaskOK(t, g.c, "POST", "/nodes/pve1/lxc/304/status/start", nil)
	cl, hostKey2 := mustDial(t, g.addr, "root", g.key)
	if got := mustRun(t, cl, "cat /root/data"); got != "kept\n" {
		t.Errorf("file after restart = %q", got)
	}
	cl.Close()
	if !bytes.Equal(g.hostKey.Marshal(), hostKey2.Marshal()) {
		t.Error("host key changed across a restart")
	}
	g.c.task("POST", "/nodes/pve1/lxc/304/status/stop", nil)
	mustTaskOK(t, g.c, "DELETE", "/nodes/pve1/lxc/304", nil)
	if _, err := os.Stat(filepath.Join(g.dir, "304")); !os.IsNotExist(err) {
		t.Fatalf("tree after delete: %v", err)
	}
	// A guest created again at the VMID is a new machine: a new host key.
	createCT(t, g.c, "304", "net0", "name=eth0,bridge=vmbr0,ip="+ip+"/8", "ssh-public-keys", g.authLine, "start", "1")
	cl, hostKey3 := mustDial(t, g.addr, "root", g.key)
	defer cl.Close()
	if bytes.Equal(g.hostKey.Marshal(), hostKey3.Marshal()) {
		t.Error("a recreated guest kept the old host key")
	}
	if _, _, code := runGuest(t, cl, "test -e /root/data"); code == 0 {
		t.Error("a recreated guest has the old guest's files")
	}
}

func TestGuestSSHServesOnlyLoopbackAddresses(t *testing.T) {
	srv, c, _, _ := guestSSHSim(t, "127.0.0.1")
	createCT(t, c, "305", "net0", "name=eth0,bridge=vmbr0,ip=192.0.2.5/24", "start", "1")
	createCT(t, c, "306", "net0", "name=eth0,bridge=vmbr0,ip=dhcp", "start", "1")
	for vmid, want := range map[int]string{305: "not in 127.0.0.0/8", 306: "no NIC with a static IPv4 address"} {
		if _, err := srv.GuestSSHAddr(vmid); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("guest %d: GuestSSHAddr error = %v, want %q", vmid, err, want)
		}
	}
}

func TestGuestSSHVMTakesCloudInitUserAndKeys(t *testing.T) {
	const ip = "127.77.0.15"
	srv, c, sshAddr, dir := guestSSHSim(t, ip)
	key, authLine := guestKey(t)
	createVM(t, c, "400", "ciuser", "admin", "sshkeys", pveEscape(authLine+"\n"), "ipconfig0", "ip="+ip+"/8,gw=127.0.0.1")
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/400/status/start", nil)
	addr, err := srv.GuestSSHAddr(400)
	if err != nil || addr != sshAddr {
		t.Fatalf("GuestSSHAddr = %q, %v", addr, err)
	}
	cl, _ := mustDial(t, addr, "admin", key)
	if got := mustRun(t, cl, "echo $HOME; hostname; id -nG admin; sudo apt-get install -y nginx >/dev/null; echo ok"); got != "/home/admin\nvm400\nadmin sudo\nok\n" {
		t.Errorf("as admin: %q", got)
	}
	cl.Close()
	if b, _ := os.ReadFile(filepath.Join(dir, "400", guestssh.InstalledPackagesPath)); string(b) != "nginx\n" {
		t.Errorf("installed-packages = %q", b)
	}
	// cloud-init's disable_root: root's key only says to log in as the user.
	cl, _ = mustDial(t, addr, "root", key)
	out, _, code := runGuest(t, cl, "id")
	cl.Close()
	if code != 142 || !strings.Contains(out, `Please login as the user "admin" rather than the user "root".`) {
		t.Errorf("root login: status %d output %q; want cloud-init's refusal", code, out)
	}
}

func TestGuestSSHVMWithRootCIUser(t *testing.T) {
	const ip = "127.77.0.16"
	srv, c, _, _ := guestSSHSim(t, ip)
	key, authLine := guestKey(t)
	createVM(t, c, "401", "ciuser", "root", "sshkeys", pveEscape(authLine), "ipconfig0", "ip="+ip+"/8", "start", "1")
	addr, err := srv.GuestSSHAddr(401)
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := mustDial(t, addr, "root", key)
	defer cl.Close()
	if got := mustRun(t, cl, "id -u"); got != "0\n" {
		t.Errorf("id -u = %q", got)
	}
}

// pveEscape URL-encodes as Proxmox's clients do for sshkeys (spaces as %20).
func pveEscape(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }

// lockedBuffer is a buffer written by the SSH session and read by the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestGuestSSHFollowsRebootsAndTheGoAPI(t *testing.T) {
	const ip = "127.77.0.17"
	g := newRootGuest(t, ip, "307")
	// A reboot ends the connections of the run before it.
	mustTaskOK(t, g.c, "POST", "/nodes/pve1/lxc/307/status/reboot", nil)
	if _, err := g.cl.NewSession(); err == nil {
		t.Error("a connection outlived the guest's reboot")
	}
	g.cl.Close()
	cl, _, err := dialGuest(g.addr, "root", g.key)
	if err != nil {
		t.Fatalf("after the reboot: %v", err)
	}
	cl.Close()
	// A stop made through the Go API ends the server too.
	if err := g.srv.SetGuestRunning(307, false); err != nil {
		t.Fatal(err)
	}
	if _, err := g.srv.GuestSSHAddr(307); err == nil || !strings.Contains(err.Error(), "not running") {
		t.Fatalf("GuestSSHAddr after SetGuestRunning(false): %v", err)
	}
	if _, _, err := dialGuest(g.addr, "root", g.key); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("dial after SetGuestRunning(false): %v, want connection refused", err)
	}
}
