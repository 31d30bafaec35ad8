package guestssh

// The guest sandbox: every command a guest's SSH server runs (and its SFTP
// server) is a re-exec of the running binary (os.Executable) with
// sandboxEnv set. Its init below then, in new mount, PID, UTS, IPC and
// network namespaces (and a user namespace when not root), bind-mounts
// the host's /usr, /lib*, /bin, /sbin and /etc/alternatives read-only
// into the guest tree, gives the guest its own /usr/local, a few /dev
// nodes and /proc, pivots into the tree and execs /bin/sh (or serves
// SFTP). Nothing is mounted in the host's namespace, so the host view of
// a tree is plain files that os.RemoveAll can remove.

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	"github.com/pkg/sftp"
	"golang.org/x/sys/unix"
)

// sandboxEnv carries the sandbox's spec (JSON) to the re-executed binary.
const sandboxEnv = "PVESIM_GUEST_SANDBOX"

// sandboxSpec is what one sandboxed process runs.
type sandboxSpec struct {
	Root     string   `json:"root"` // the guest tree, a host path
	Hostname string   `json:"hostname"`
	Mode     string   `json:"mode"` // "exec" or "sftp"
	Argv     []string `json:"argv"` // exec: the command line (argv[0] is the program)
	Env      []string `json:"env"`
	Dir      string   `json:"dir"` // working directory inside the guest
}

// hostReadOnly are the host paths a guest sees read-only; the ones that
// are symlinks on the host (merged /usr) are symlinks in the tree too.
var hostReadOnly = []string{"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc/alternatives"}

// sandboxDevices are bound from the host's /dev.
var sandboxDevices = []string{"null", "zero", "full", "random", "urandom", "tty"}

func init() {
	if v, ok := os.LookupEnv(sandboxEnv); ok {
		os.Unsetenv(sandboxEnv)
		err := runSandbox(v)
		fmt.Fprintf(os.Stderr, "pvesim guest sandbox: %v\n", err)
		os.Exit(255)
	}
}

// sandboxCommand builds the process for spec; the caller wires its
// standard streams and starts it.
func sandboxCommand(spec sandboxSpec) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("guest sandbox: %w", err)
	}
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Args = []string{"pvesim-guest-sandbox"}
	cmd.Env = []string{sandboxEnv + "=" + string(b)}
	attr := &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWUTS |
			syscall.CLONE_NEWIPC | syscall.CLONE_NEWNET,
		Pdeathsig: syscall.SIGKILL,
	}
	if uid := os.Getuid(); uid != 0 {
		// Not root: a user namespace where the caller is root, owning
		// the new mount namespace.
		attr.Cloneflags |= syscall.CLONE_NEWUSER
		attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: uid, Size: 1}}
		attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}}
		attr.GidMappingsEnableSetgroups = false
	}
	cmd.SysProcAttr = attr
	return cmd, nil
}

// runSandbox is the sandbox's init; it returns only on failure.
func runSandbox(specJSON string) error {
	var spec sandboxSpec
	if err := json.Unmarshal([]byte(specJSON), &spec); err != nil {
		return err
	}
	if err := enterGuestTree(spec); err != nil {
		return err
	}
	dir := spec.Dir
	if dir == "" {
		dir = "/"
	}
	if err := os.Chdir(dir); err != nil {
		_ = os.Chdir("/")
	}
	switch spec.Mode {
	case "sftp":
		srv, err := sftp.NewServer(stdio{}, sftp.WithServerWorkingDirectory(dir))
		if err != nil {
			return err
		}
		if err := srv.Serve(); err != nil && !errors.Is(err, io.EOF) {
			return err
		}
		os.Exit(0)
	case "exec":
		if len(spec.Argv) == 0 {
			return errors.New("no command")
		}
		return syscall.Exec(spec.Argv[0], spec.Argv, spec.Env)
	}
	return fmt.Errorf("unknown mode %q", spec.Mode)
}

// enterGuestTree makes spec.Root this process's root directory with the
// host's system directories read-only inside it.
func enterGuestTree(spec sandboxSpec) error {
	root := spec.Root
	// Nothing done below may reach the host's mount namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", root, err)
	}
	// The guest's own /usr/local, hidden once the host's /usr is bound
	// over the tree's usr: keep a handle on it first.
	local, err := unix.Open(filepath.Join(root, "usr/local"), unix.O_PATH|unix.O_DIRECTORY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return fmt.Errorf("guest /usr/local: %w", err)
	}
	for _, p := range hostReadOnly {
		fi, err := os.Lstat("/" + p)
		if err != nil || !fi.IsDir() {
			continue // absent, or a symlink the tree copies
		}
		if err := bindReadOnly("/"+p, filepath.Join(root, p)); err != nil {
			return err
		}
	}
	if err := unix.Mount(fmt.Sprintf("/proc/self/fd/%d", local), filepath.Join(root, "usr/local"), "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind the guest's /usr/local (the host needs a /usr/local): %w", err)
	}
	unix.Close(local)
	for _, d := range sandboxDevices {
		target := filepath.Join(root, "dev", d)
		if _, err := os.Stat("/dev/" + d); err != nil {
			continue
		}
		if _, err := os.Lstat(target); err != nil {
			continue // the tree has no mount point for it
		}
		if err := unix.Mount("/dev/"+d, target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind /dev/%s: %w", d, err)
		}
	}
	if err := os.Chdir(root); err != nil {
		return err
	}
	// pivot_root(".", ".") stacks the old root under the new one; the
	// detach then drops it, so no path leads back to the host's tree.
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot_root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach the host's root: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	// /proc of the new PID namespace; optional for a command.
	_ = unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "")
	if spec.Hostname != "" {
		_ = unix.Sethostname([]byte(spec.Hostname))
	}
	return nil
}

// bindReadOnly binds src onto target read-only. The remount keeps the
// source's nosuid/nodev/noexec/atime flags, which a user namespace may
// not drop.
func bindReadOnly(src, target string) error {
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	if err := unix.Mount(src, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	var st unix.Statfs_t
	keep := uintptr(0)
	if unix.Statfs(src, &st) == nil {
		keep = uintptr(st.Flags) & (unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME)
	}
	if err := unix.Mount("", target, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY|keep, ""); err != nil {
		return fmt.Errorf("make %s read-only: %w", src, err)
	}
	return nil
}

// stdio is the SFTP server's channel: the sandbox's standard streams.
type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return os.Stdout.Close() }
