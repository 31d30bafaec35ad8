// Package testvm writes the small VirtualMachine manifest that the tests
// of several packages commit to their repositories: a blank 4G disk on
// local-lvm, one NIC on vmbr0 and 1024 MiB of memory.
package testvm

import (
	"fmt"
	"strings"
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
