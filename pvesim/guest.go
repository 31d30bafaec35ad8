package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Guest is a QEMU virtual machine or an LXC container. Conf holds the
// config file's values as Proxmox stores them (strings); the read-back
// typing comes from the parameter definitions.
type Guest struct {
	VMID          int                  `json:"vmid"`
	Node          string               `json:"node"`
	Type          string               `json:"type"` // "qemu" or "lxc"
	Conf          map[string]string    `json:"conf"`
	Pending       map[string]string    `json:"pending,omitempty"`
	PendingDelete map[string]bool      `json:"pendingDelete,omitempty"` // value: force
	Snapshots     map[string]*Snapshot `json:"snapshots,omitempty"`
	Running       bool                 `json:"running"`
	StartedAt     time.Time            `json:"startedAt,omitempty"`
	// KVM is the command line the running VM was started with (QEMU
	// only; stale once the VM stops).
	KVM *KVMCommand `json:"kvm,omitempty"`
	// CloudinitPassword is the real cipassword (Conf keeps it too; reads mask it).
	MemUsed int64 `json:"memUsed,omitempty"`
	// Creating lists the volumes an unfinished create has allocated; an
	// interrupted create frees them (see LoadState).
	Creating []string `json:"creating,omitempty"`
	// RootSSHKeys are the ssh-public-keys a container was created with,
	// which pve-container writes into its rootfs (/root/.ssh/authorized_keys);
	// the guest SSH server's tree starts with them.
	RootSSHKeys string `json:"rootSSHKeys,omitempty"`
	// IgnoresShutdown makes the guest ignore ACPI shutdowns and lxc-stop's
	// request (a hung guest OS): only a stop, or forceStop at the
	// shutdown's timeout, ends it.
	IgnoresShutdown bool `json:"ignoresShutdown,omitempty"`
}

// Snapshot is a named copy of a guest's config.
type Snapshot struct {
	Name        string            `json:"name"`
	Description string            `json:"description,omitempty"`
	Parent      string            `json:"parent,omitempty"`
	SnapTime    int64             `json:"snaptime"`
	VMState     bool              `json:"vmstate,omitempty"`
	Conf        map[string]string `json:"conf"`
}

func (g *Guest) ensureMaps() {
	if g.Conf == nil {
		g.Conf = map[string]string{}
	}
	if g.Pending == nil {
		g.Pending = map[string]string{}
	}
	if g.PendingDelete == nil {
		g.PendingDelete = map[string]bool{}
	}
	if g.Snapshots == nil {
		g.Snapshots = map[string]*Snapshot{}
	}
}

// IsTemplate says whether the guest is a template.
func (g *Guest) IsTemplate() bool { return g.Conf["template"] == "1" }

// Name is the VM name or the container hostname.
func (g *Guest) Name() string {
	if g.Type == "lxc" {
		return g.Conf["hostname"]
	}
	return g.Conf["name"]
}

// configFile renders the guest as Proxmox's config file: the current
// section, the [PENDING] section, then the snapshots. Its SHA-1 is the digest.
func (g *Guest) configFile() string {
	var b strings.Builder
	writeSection := func(conf map[string]string) {
		if d, ok := conf["description"]; ok {
			for _, line := range strings.Split(d, "\n") {
				b.WriteString("#" + line + "\n")
			}
		}
		for _, k := range sortedKeys(conf) {
			if k == "description" {
				continue
			}
			fmt.Fprintf(&b, "%s: %s\n", k, conf[k])
		}
	}
	writeSection(g.Conf)
	if len(g.Pending) > 0 || len(g.PendingDelete) > 0 {
		b.WriteString("\n[PENDING]\n")
		writeSection(g.Pending)
		if len(g.PendingDelete) > 0 {
			var del []string
			for _, k := range sortedKeys(g.PendingDelete) {
				if g.PendingDelete[k] {
					k = "!" + k
				}
				del = append(del, k)
			}
			fmt.Fprintf(&b, "delete: %s\n", strings.Join(del, ","))
		}
	}
	for _, name := range sortedKeys(g.Snapshots) {
		fmt.Fprintf(&b, "\n[%s]\n", name)
		writeSection(g.Snapshots[name].Conf)
	}
	return b.String()
}

// Digest is the SHA-1 of the config file, as Proxmox computes it.
func (g *Guest) Digest() string {
	return sha1Hex(g.configFile())
}

// sha1Hex is Digest::SHA's sha1_hex: the digest Proxmox gives a config
// file's text.
func sha1Hex(text string) string {
	sum := sha1.Sum([]byte(text))
	return hex.EncodeToString(sum[:])
}

func copyConf(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// configGone is load_config's failure (PVE::AbstractConfig) for a guest
// whose config file is no longer on node: destroyed, or migrated away,
// since the request looked it up.
func (s *Server) configGone(g *Guest, node string) error {
	if s.state.Guests[g.VMID] != g || g.Node != node {
		return noConfigFile(node, g.Type, g.VMID)
	}
	return nil
}

// pathGuest is load_config for the path's {node} and {vmid}: the guest
// there, of type typ ("qemu" or "lxc").
func (s *Server) pathGuest(r *route.Request, typ string) (*Guest, error) {
	vmid, _ := r.Int("vmid")
	node := r.Str("node")
	g := s.state.Guests[vmid]
	if g == nil || g.Node != node || g.Type != typ {
		return nil, noConfigFile(node, typ, vmid)
	}
	return g, nil
}

// noConfigFile is load_config's failure for a guest of type typ that has
// no config file on node.
func noConfigFile(node, typ string, vmid int) error {
	dir := "qemu-server"
	if typ == "lxc" {
		dir = "lxc"
	}
	return route.Fail("Configuration file 'nodes/%s/%s/%d.conf' does not exist", node, dir, vmid)
}
