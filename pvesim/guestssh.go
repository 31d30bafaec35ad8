package pvesim

// Guest SSH servers (Options.GuestSSHPort, `proxmops sim --guest-ssh-port`):
// every running guest whose NIC has a static loopback IPv4 address gets an
// SSH server on <IP>:<port> while it runs. The set of servers follows the
// cluster state: guestSSHSync compares it with the running guests after
// every write request, at the end of every task and on a short tick (for
// changes made through the Go API), so a guest's server is up when its
// start task has ended and gone when its stop task has.

import (
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/guestssh"
)

// guestSSHTick is how often changes made outside the API (MutateGuest,
// SetGuestRunning, the HA manager) reach the guest SSH servers.
const guestSSHTick = 200 * time.Millisecond

func newGuestSSH(opts Options) *guestssh.Manager {
	if opts.GuestSSHPort <= 0 {
		return nil
	}
	return guestssh.New(opts.GuestSSHPort, opts.GuestRoot)
}

// startGuestSSH makes DIR and learns the trees in it; called by Start.
func (s *Server) startGuestSSH() error {
	m := s.gssh
	if m == nil {
		return nil
	}
	if err := m.Open(); err != nil {
		return err
	}
	s.mu.Lock()
	m.SetStarted()
	s.guestSSHSync()
	s.mu.Unlock()
	m.Every(guestSSHTick, func() {
		s.mu.Lock()
		s.guestSSHSync()
		s.mu.Unlock()
	})
	return nil
}

// closeGuestSSH ends every guest SSH server and waits for their sessions;
// called by Close.
func (s *Server) closeGuestSSH() {
	m := s.gssh
	if m == nil {
		return
	}
	s.mu.Lock()
	wait := m.Stop()
	s.mu.Unlock()
	if wait {
		m.Wait()
	}
}

// guestSSHSync starts the servers of running guests with a loopback
// address, ends those of guests that stopped, restarted or changed address,
// and removes the trees of deleted guests. The caller holds s.mu.
func (s *Server) guestSSHSync() {
	m := s.gssh
	if m == nil || !m.Running() {
		return
	}
	want := map[int]guestssh.Profile{}
	noServer := map[int]error{}
	for id, g := range s.state.Guests {
		p, err := guestSSHProfile(g)
		if err != nil {
			noServer[id] = err
			continue
		}
		want[id] = p
	}
	m.Sync(want, noServer, func(vmid int) bool { return s.state.Guests[vmid] != nil })
}

// guestSSHProfile is what the guest's SSH server is made from, or why it
// has none.
func guestSSHProfile(g *Guest) (guestssh.Profile, error) {
	if !g.Running {
		return guestssh.Profile{}, fmt.Errorf("guest %d is not running", g.VMID)
	}
	ip, err := guestLoopbackIP(g)
	if err != nil {
		return guestssh.Profile{}, err
	}
	p := guestssh.Profile{VMID: g.VMID, Type: g.Type, IP: ip, Distro: guestDistro(g), StartedAt: g.StartedAt,
		Hostname: g.Name(), RootKeys: g.RootSSHKeys}
	if g.Type == "qemu" {
		if p.Hostname == "" {
			p.Hostname = "VM" + strconv.Itoa(g.VMID) // Cloudinit.pm get_hostname_fqdn
		}
		p.CIUser = g.Conf["ciuser"]
		if keys, err := decodeSSHKeys(g.Conf["sshkeys"]); err == nil {
			for _, k := range strings.Split(keys, "\n") {
				if k = strings.TrimSpace(k); k != "" {
					p.CIKeys = append(p.CIKeys, k)
				}
			}
		}
	} else if p.Hostname == "" {
		p.Hostname = "CT" + strconv.Itoa(g.VMID)
	}
	return p, nil
}

// guestDistro is the distribution of a guest: a container's ostype (from
// its template), Debian for VMs (cloud images carry no ostype Proxmox knows).
func guestDistro(g *Guest) string {
	if g.Type == "lxc" && guestssh.KnownDistro(g.Conf["ostype"]) {
		return g.Conf["ostype"]
	}
	return "debian"
}

// guestLoopbackIP is the static IPv4 address of the guest's first NIC that
// has one (a container's netN ip=, a VM's ipconfigN ip= for an existing
// netN), which must be in 127.0.0.0/8: the simulator serves nothing on
// another address.
func guestLoopbackIP(g *Guest) (string, error) {
	for i := 0; i < lxcMaxNetworks; i++ {
		n := strconv.Itoa(i)
		var v string
		if g.Type == "lxc" {
			v = g.Conf["net"+n]
		} else if _, ok := g.Conf["net"+n]; ok {
			v = g.Conf["ipconfig"+n]
		}
		cidr := propValue(v, "ip")
		if cidr == "" || cidr == "dhcp" || cidr == "manual" {
			continue
		}
		pfx, err := netip.ParsePrefix(cidr)
		if err != nil {
			continue
		}
		addr := pfx.Addr()
		if !addr.Is4() || !netip.MustParsePrefix("127.0.0.0/8").Contains(addr) {
			return "", fmt.Errorf("guest %d: net%s's address %s is not in 127.0.0.0/8; the simulator serves SSH on loopback addresses only", g.VMID, n, addr)
		}
		return addr.String(), nil
	}
	return "", fmt.Errorf("guest %d has no NIC with a static IPv4 address", g.VMID)
}

// propValue is one key's value in a property string ("" when absent).
func propValue(prop, key string) string {
	for _, kv := range strings.Split(prop, ",") {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v
		}
	}
	return ""
}

// GuestTree is the folder holding guest vmid's files (its root file
// system as its SSH commands see it), whether or not it exists yet; ""
// when guest SSH is off or the server has not started.
func (s *Server) GuestTree(vmid int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gssh == nil || !s.gssh.Started() {
		return ""
	}
	return s.gssh.TreeDir(vmid)
}

// GuestRootDir is the folder holding every guest's tree (DIR of
// --guest-root); "" when guest SSH is off or the server has not started.
func (s *Server) GuestRootDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gssh == nil || !s.gssh.Started() {
		return ""
	}
	return s.gssh.Dir()
}

// GuestSSHAddr is the address ("127.0.0.5:2222") of the running SSH
// server of guest vmid, or why it has none.
func (s *Server) GuestSSHAddr(vmid int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.gssh
	if m == nil || !m.Started() {
		return "", errors.New("guest SSH is off (Options.GuestSSHPort) or the simulator is not started")
	}
	s.guestSSHSync()
	if addr := m.Addr(vmid); addr != "" {
		return addr, nil
	}
	if s.state.Guests[vmid] == nil {
		return "", fmt.Errorf("guest %d does not exist", vmid)
	}
	if err := m.Err(vmid); err != nil {
		return "", err
	}
	return "", fmt.Errorf("guest %d has no SSH server", vmid)
}
