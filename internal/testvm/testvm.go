// Package testvm writes the small guest manifests that the tests of
// several packages commit to their repositories: a VirtualMachine with a
// blank 4G disk on local-lvm, one NIC on vmbr0 and 1024 MiB of memory, and
// a Container from the Debian 12 template with a 4G root disk on local-lvm.
package testvm

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// VM is one such manifest.
type VM struct {
	Name  string
	Node  string
	VMID  int
	Cores int
	// Tags and Annotations ("key=value") go into its metadata when set.
	Tags        []string
	Annotations []string
	// Running asks for the guest running, changes applied by a reboot.
	Running bool
}

// YAML is the manifest.
func (v VM) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: %s\n  node: %s\n", v.Name, v.Node)
	if len(v.Tags) > 0 {
		fmt.Fprintf(&b, "  tags: [%s]\n", strings.Join(v.Tags, ", "))
	}
	if len(v.Annotations) > 0 {
		b.WriteString("  annotations:\n")
		for _, a := range v.Annotations {
			k, val, _ := strings.Cut(a, "=")
			fmt.Fprintf(&b, "    %s: %s\n", k, val)
		}
	}
	fmt.Fprintf(&b, `spec:
  vmid: %d
  cores: %d
  memory: 1024
  disks:
    - storage: local-lvm
      size: 4G
  net:
    - bridge: vmbr0
`, v.VMID, v.Cores)
	if v.Running {
		b.WriteString("  applyMode: reboot\n  state: running\n")
	}
	return b.String()
}

// CTTemplate is the container template CT creates its containers from.
const CTTemplate = "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst"

// CT is such a Container manifest.
type CT struct {
	Name string
	Node string
	VMID int
	// Privileged declares a privileged container (unprivileged: false).
	Privileged bool
	// IP, when set, gives it a NIC on vmbr0 with this address in a /8.
	IP string
	// Spec is more of its spec, lines indented by two spaces.
	Spec string
}

// YAML is the manifest.
func (c CT) YAML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata:\n  name: %s\n  node: %s\nspec:\n  vmid: %d\n", c.Name, c.Node, c.VMID)
	if c.Privileged {
		b.WriteString("  unprivileged: false\n")
	}
	fmt.Fprintf(&b, "  template: %s\n  rootfs: {storage: local-lvm, size: 4G}\n", CTTemplate)
	if c.IP != "" {
		fmt.Fprintf(&b, "  net: [{bridge: vmbr0, ip: %s/8}]\n", c.IP)
	}
	b.WriteString(c.Spec)
	return b.String()
}

// Example is the file name of the repository's examples/ directory, for
// tests that run the repository's own examples.
func Example(t testing.TB, name string) string {
	t.Helper()
	_, self, _, _ := runtime.Caller(0)
	b, err := os.ReadFile(filepath.Join(filepath.Dir(self), "..", "..", "examples", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
