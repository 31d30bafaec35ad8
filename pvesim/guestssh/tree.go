package guestssh

// The guest tree: the files of one guest, DIR/<vmid>/, as its root file
// system. It is made when the guest's SSH server first starts and removed
// with the guest. Files that the guest may have changed are read and
// written through os.Root, so a symlink inside the tree never leads the
// simulator to a host file.

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"
)

// treeMarker names a folder as a guest tree the simulator made (only such
// folders are ever removed).
const treeMarker = ".pvesim-guest"

// hostKeyPath is the guest's SSH host key inside its tree.
const hostKeyPath = "etc/ssh/ssh_host_ed25519_key"

// InstalledPackagesPath is where the package-manager stand-ins record installs.
const InstalledPackagesPath = "var/lib/pvesim/installed-packages"

// Profile is what a guest's tree and SSH server are made from.
type Profile struct {
	VMID     int
	Type     string // "qemu" or "lxc"
	Hostname string
	Distro   string // os-release ID: debian, ubuntu, alpine, fedora, centos, ...
	IP       string
	// StartedAt tells runs apart: a reboot gives the guest a new server.
	StartedAt time.Time
	// RootKeys: the container's ssh-public-keys, written once into the new
	// tree as pve-container's post_create_hook writes them into the rootfs.
	RootKeys string
	// CIUser and CIKeys: a VM's cloud-init user and sshkeys, applied at
	// every start as cloud-init does at boot.
	CIUser string
	CIKeys []string
}

// osRelease is /etc/os-release for each distribution a guest can be.
var osRelease = map[string]string{
	"debian":    "PRETTY_NAME=\"Debian GNU/Linux 13 (trixie)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"13\"\nVERSION_CODENAME=trixie\nID=debian\n",
	"ubuntu":    "PRETTY_NAME=\"Ubuntu 24.04 LTS\"\nNAME=\"Ubuntu\"\nVERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\nID=ubuntu\nID_LIKE=debian\n",
	"devuan":    "PRETTY_NAME=\"Devuan GNU/Linux 5 (daedalus)\"\nNAME=\"Devuan GNU/Linux\"\nVERSION_ID=\"5\"\nID=devuan\nID_LIKE=debian\n",
	"alpine":    "NAME=\"Alpine Linux\"\nID=alpine\nVERSION_ID=3.22.0\nPRETTY_NAME=\"Alpine Linux v3.22\"\n",
	"fedora":    "NAME=\"Fedora Linux\"\nVERSION_ID=42\nID=fedora\nPRETTY_NAME=\"Fedora Linux 42 (Container Image)\"\n",
	"centos":    "NAME=\"CentOS Stream\"\nVERSION_ID=\"9\"\nID=\"centos\"\nID_LIKE=\"rhel fedora\"\nPRETTY_NAME=\"CentOS Stream 9\"\n",
	"archlinux": "NAME=\"Arch Linux\"\nPRETTY_NAME=\"Arch Linux\"\nID=arch\n",
	"opensuse":  "NAME=\"openSUSE Leap\"\nVERSION_ID=\"15.6\"\nID=\"opensuse-leap\"\nID_LIKE=\"suse opensuse\"\nPRETTY_NAME=\"openSUSE Leap 15.6\"\n",
}

// packageManager is the stand-in a distribution gets ("" for none).
func packageManager(distro string) string {
	switch distro {
	case "debian", "ubuntu", "devuan":
		return "apt"
	case "alpine":
		return "apk"
	case "fedora", "centos":
		return "dnf"
	}
	return ""
}

// KnownDistro says whether a guest tree can be the distribution with
// os-release ID id.
func KnownDistro(id string) bool {
	_, ok := osRelease[id]
	return ok
}

// prepareTree makes or refreshes guest p's tree at dir. A new tree gets a
// host key and the container's keys; every start refreshes the hostname,
// the stand-ins and a VM's cloud-init user and keys.
func prepareTree(dir string, p Profile) error {
	fresh := false
	if _, err := os.Lstat(filepath.Join(dir, treeMarker)); errors.Is(err, fs.ErrNotExist) {
		fresh = true
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := layoutTree(root, p, fresh); err != nil {
		return fmt.Errorf("guest %d tree %s: %w", p.VMID, dir, err)
	}
	if fresh {
		// The marker last: a tree without it is remade from scratch.
		return root.WriteFile(treeMarker, fmt.Appendf(nil, "%d\n", p.VMID), 0o644)
	}
	return nil
}

func layoutTree(root *os.Root, p Profile, fresh bool) error {
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{"root", 0o700}, {"home", 0o755}, {"tmp", 0o777 | fs.ModeSticky}, {"etc/ssh", 0o755}, {"etc/alternatives", 0o755},
		{"var/lib/pvesim", 0o755}, {"var/tmp", 0o777 | fs.ModeSticky}, {"usr/local/bin", 0o755}, {"usr/local/sbin", 0o755},
		{"dev", 0o755}, {"proc", 0o555}, {"run", 0o755}} {
		if err := root.MkdirAll(d.path, d.mode.Perm()); err != nil {
			return err
		}
		if err := root.Chmod(d.path, d.mode); err != nil {
			return err
		}
	}
	for _, name := range hostReadOnly {
		if name == "usr" || name == "etc/alternatives" {
			continue
		}
		fi, err := os.Lstat("/" + name)
		if err != nil {
			continue
		}
		if _, err := root.Lstat(name); err == nil {
			continue
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			target, err := os.Readlink("/" + name)
			if err != nil {
				return err
			}
			if err := root.Symlink(target, name); err != nil {
				return err
			}
		} else if err := root.Mkdir(name, 0o755); err != nil {
			return err
		}
	}
	for _, d := range sandboxDevices {
		if err := ensureFile(root, "dev/"+d, nil, 0o666); err != nil {
			return err
		}
	}
	for name, target := range map[string]string{"dev/fd": "/proc/self/fd", "dev/stdin": "/proc/self/fd/0",
		"dev/stdout": "/proc/self/fd/1", "dev/stderr": "/proc/self/fd/2"} {
		if _, err := root.Lstat(name); err != nil {
			if err := root.Symlink(target, name); err != nil {
				return err
			}
		}
	}
	if err := root.WriteFile("etc/hostname", []byte(p.Hostname+"\n"), 0o644); err != nil {
		return err
	}
	if fresh {
		if err := newTreeFiles(root, p); err != nil {
			return err
		}
	}
	if err := writeStandIns(root, p.Distro); err != nil {
		return err
	}
	if p.Type == "qemu" {
		return applyCloudInitUser(root, p)
	}
	return nil
}

// basePasswd and baseGroup are the system accounts of a Debian base
// system (base-passwd), so files can be given to www-data and the like.
const (
	basePasswd = "root:x:0:0:root:/root:/bin/sh\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\nbin:x:2:2:bin:/bin:/usr/sbin/nologin\n" +
		"sys:x:3:3:sys:/dev:/usr/sbin/nologin\nsync:x:4:65534:sync:/bin:/bin/sync\n" +
		"games:x:5:60:games:/usr/games:/usr/sbin/nologin\nman:x:6:12:man:/var/cache/man:/usr/sbin/nologin\n" +
		"lp:x:7:7:lp:/var/spool/lpd:/usr/sbin/nologin\nmail:x:8:8:mail:/var/mail:/usr/sbin/nologin\n" +
		"news:x:9:9:news:/var/spool/news:/usr/sbin/nologin\nuucp:x:10:10:uucp:/var/spool/uucp:/usr/sbin/nologin\n" +
		"proxy:x:13:13:proxy:/bin:/usr/sbin/nologin\nwww-data:x:33:33:www-data:/var/www:/usr/sbin/nologin\n" +
		"backup:x:34:34:backup:/var/backups:/usr/sbin/nologin\nlist:x:38:38:Mailing List Manager:/var/list:/usr/sbin/nologin\n" +
		"irc:x:39:39:ircd:/run/ircd:/usr/sbin/nologin\n_apt:x:42:65534::/nonexistent:/usr/sbin/nologin\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	baseGroup = "root:x:0:\ndaemon:x:1:\nbin:x:2:\nsys:x:3:\nadm:x:4:\ntty:x:5:\ndisk:x:6:\nlp:x:7:\n" +
		"mail:x:8:\nnews:x:9:\nuucp:x:10:\nman:x:12:\nproxy:x:13:\nkmem:x:15:\ndialout:x:20:\n" +
		"cdrom:x:24:\nsudo:x:27:\naudio:x:29:\nwww-data:x:33:\nbackup:x:34:\noperator:x:37:\n" +
		"list:x:38:\nirc:x:39:\nsrc:x:40:\nshadow:x:42:\nutmp:x:43:\nvideo:x:44:\nplugdev:x:46:\n" +
		"staff:x:50:\ngames:x:60:\nusers:x:100:\nnogroup:x:65534:\n"
)

// newTreeFiles are written once, when the guest's root file system is made.
func newTreeFiles(root *os.Root, p Profile) error {
	rel, ok := osRelease[p.Distro]
	if !ok {
		rel = osRelease["debian"]
	}
	files := []struct {
		path string
		data string
		mode fs.FileMode
	}{
		{"etc/os-release", rel, 0o644},
		{"etc/passwd", basePasswd, 0o644},
		{"etc/group", baseGroup, 0o644},
		{"etc/hosts", "127.0.0.1\tlocalhost\n" + p.IP + "\t" + p.Hostname + "\n", 0o644},
		{"etc/resolv.conf", "", 0o644},
		{InstalledPackagesPath, "", 0o644},
	}
	for _, f := range files {
		if err := root.WriteFile(f.path, []byte(f.data), f.mode); err != nil {
			return err
		}
	}
	if err := writeHostKey(root, p); err != nil {
		return err
	}
	if p.Type == "lxc" && strings.TrimSpace(p.RootKeys) != "" {
		return setAuthorizedKeysPVE(root, "root", p.RootKeys)
	}
	return nil
}

// writeHostKey makes the guest's ed25519 host key, as pve-container's
// rewrite_ssh_host_keys does at create (Setup.pm) and a cloud image's
// first boot does.
func writeHostKey(root *os.Root, p Profile) error {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return err
	}
	block, err := ssh.MarshalPrivateKey(priv, fmt.Sprintf("root@%s", p.Hostname))
	if err != nil {
		return err
	}
	if err := root.WriteFile(hostKeyPath, pem.EncodeToMemory(block), 0o600); err != nil {
		return err
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		return err
	}
	pub := bytes.TrimSpace(ssh.MarshalAuthorizedKey(signer.PublicKey()))
	return root.WriteFile(hostKeyPath+".pub", append(pub, []byte(" root@"+p.Hostname+"\n")...), 0o644)
}

// readHostKey loads the guest's host key from its tree.
func readHostKey(dir string) (ssh.Signer, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	b, err := root.ReadFile(hostKeyPath)
	if err != nil {
		return nil, err
	}
	return ssh.ParsePrivateKey(b)
}

// setAuthorizedKeysPVE writes keys into the user's authorized_keys between
// "# --- BEGIN PVE ---" and "# --- END PVE ---", as pve-container's
// set_user_authorized_ssh_keys and ct_modify_file do (Setup/Base.pm):
// .ssh made 0700 when missing, the file written 0700.
func setAuthorizedKeysPVE(root *os.Root, user, keys string) error {
	home := "root"
	if user != "root" {
		home = "home/" + user
	}
	if err := root.MkdirAll(home+"/.ssh", 0o700); err != nil {
		return err
	}
	if !strings.HasSuffix(keys, "\n") {
		keys += "\n"
	}
	return root.WriteFile(home+"/.ssh/authorized_keys", []byte("# --- BEGIN PVE ---\n"+keys+"# --- END PVE ---\n"), 0o700)
}

// ensureFile creates path with data when it does not exist.
func ensureFile(root *os.Root, path string, data []byte, mode fs.FileMode) error {
	if _, err := root.Lstat(path); err == nil {
		return nil
	}
	return root.WriteFile(path, data, mode)
}

// defaultCloudUser is the default user of the cloud images of a
// distribution, which cloud-init's "users: [default]" creates when ciuser
// is not set.
func defaultCloudUser(distro string) string {
	switch distro {
	case "ubuntu", "fedora", "alpine":
		return distro
	case "centos":
		return "cloud-user"
	}
	return "debian"
}

// applyCloudInitUser is what cloud-init does at boot with the user-data of
// qemu-server's cloudinit_userdata (QemuServer/Cloudinit.pm): "user:
// CIUSER" names the default user (the image's own when ciuser is unset),
// created with passwordless sudo; "ssh_authorized_keys" go to that user.
// Unless the user is root, "disable_root" stays true, so root's
// authorized_keys get the same keys behind a command that refuses the
// login (cloud-init's cc_ssh, exit 142).
func applyCloudInitUser(root *os.Root, p Profile) error {
	user := p.CIUser
	if user == "" {
		user = defaultCloudUser(p.Distro)
	}
	if user != "root" {
		if err := addPasswdUser(root, user); err != nil {
			return err
		}
	}
	if len(p.CIKeys) == 0 {
		return nil
	}
	if err := mergeAuthorizedKeys(root, user, p.CIKeys, ""); err != nil {
		return err
	}
	if user == "root" {
		return nil
	}
	opts := fmt.Sprintf(`no-port-forwarding,no-agent-forwarding,no-X11-forwarding,command="echo 'Please login as the user \"%s\" rather than the user \"root\".';echo;exit 142"`, user)
	return mergeAuthorizedKeys(root, "root", p.CIKeys, opts)
}

// addPasswdUser adds a cloud-init default user (uid 1000, home
// /home/USER, in group sudo) when /etc/passwd lacks it.
func addPasswdUser(root *os.Root, user string) error {
	b, err := root.ReadFile("etc/passwd")
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, user+":") {
			return nil
		}
	}
	b = append(b, fmt.Sprintf("%s:x:1000:1000::/home/%s:/bin/sh\n", user, user)...)
	if err := root.WriteFile("etc/passwd", b, 0o644); err != nil {
		return err
	}
	g, err := root.ReadFile("etc/group")
	if err != nil {
		return err
	}
	groups := strings.Replace(string(g), "\nsudo:x:27:\n", "\nsudo:x:27:"+user+"\n", 1) + user + ":x:1000:\n"
	if err := root.WriteFile("etc/group", []byte(groups), 0o644); err != nil {
		return err
	}
	return root.MkdirAll("home/"+user+"/.ssh", 0o700)
}

// mergeAuthorizedKeys adds the keys the user's authorized_keys lacks, as
// cloud-init's ssh_util.update_authorized_keys does (existing lines stay).
func mergeAuthorizedKeys(root *os.Root, user string, keys []string, options string) error {
	home := "root"
	if user != "root" {
		home = "home/" + user
	}
	if err := root.MkdirAll(home+"/.ssh", 0o700); err != nil {
		return err
	}
	path := home + "/.ssh/authorized_keys"
	old, err := root.ReadFile(path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	have := map[string]bool{}
	for _, line := range strings.Split(string(old), "\n") {
		if pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(line)); err == nil {
			have[string(pk.Marshal())] = true
		}
	}
	out := old
	if len(out) > 0 && !bytes.HasSuffix(out, []byte("\n")) {
		out = append(out, '\n')
	}
	for _, k := range keys {
		pk, _, _, _, err := ssh.ParseAuthorizedKey([]byte(k))
		if err != nil || have[string(pk.Marshal())] {
			continue
		}
		have[string(pk.Marshal())] = true
		if options != "" {
			k = options + " " + k
		}
		out = append(out, k+"\n"...)
	}
	return root.WriteFile(path, out, 0o600)
}
