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
	"log"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// guestSSHTick is how often changes made outside the API (MutateGuest,
// SetGuestRunning, the HA manager) reach the guest SSH servers.
const guestSSHTick = 200 * time.Millisecond

// guestSSH runs the guests' SSH servers.
type guestSSH struct {
	port    int
	dir     string // DIR: guest G's tree is DIR/G
	tempDir bool   // DIR was made for this run and is removed at Close
	started bool
	closed  bool
	servers map[int]*guestSSHServer
	trees   map[int]bool         // trees that exist under DIR
	failed  map[int]guestProfile // listen failures, not retried until the profile changes
	errs    map[int]error        // why a running guest has no server
	wg      sync.WaitGroup       // accept loops, connections, sessions
	stop    chan struct{}
}

func newGuestSSH(opts Options) *guestSSH {
	if opts.GuestSSHPort <= 0 {
		return nil
	}
	return &guestSSH{port: opts.GuestSSHPort, dir: opts.GuestRoot, servers: map[int]*guestSSHServer{},
		trees: map[int]bool{}, failed: map[int]guestProfile{}, errs: map[int]error{}, stop: make(chan struct{})}
}

// startGuestSSH makes DIR and learns the trees in it; called by Start.
func (s *Server) startGuestSSH() error {
	m := s.gssh
	if m == nil {
		return nil
	}
	if m.dir == "" {
		d, err := os.MkdirTemp("", "pvesim-guests-")
		if err != nil {
			return fmt.Errorf("guest root: %w", err)
		}
		m.dir, m.tempDir = d, true
	}
	abs, err := filepath.Abs(m.dir)
	if err != nil {
		return err
	}
	m.dir = abs
	if err := os.MkdirAll(m.dir, 0o755); err != nil {
		return fmt.Errorf("guest root: %w", err)
	}
	ents, err := os.ReadDir(m.dir)
	if err != nil {
		return fmt.Errorf("guest root: %w", err)
	}
	for _, e := range ents {
		id, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		if _, err := os.Lstat(filepath.Join(m.dir, e.Name(), treeMarker)); err == nil {
			m.trees[id] = true
		}
	}
	s.mu.Lock()
	m.started = true
	s.guestSSHSync()
	s.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(guestSSHTick)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				s.mu.Lock()
				s.guestSSHSync()
				s.mu.Unlock()
			}
		}
	}()
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
	if m.closed || !m.started {
		m.closed = true
		s.mu.Unlock()
		return
	}
	m.closed = true
	close(m.stop)
	for id, srv := range m.servers {
		srv.close()
		delete(m.servers, id)
	}
	s.mu.Unlock()
	m.wg.Wait()
	if m.tempDir {
		_ = os.RemoveAll(m.dir)
	}
}

// guestSSHSync starts the servers of running guests with a loopback
// address, ends those of guests that stopped, restarted or changed address,
// and removes the trees of deleted guests. The caller holds s.mu.
func (s *Server) guestSSHSync() {
	m := s.gssh
	if m == nil || !m.started || m.closed {
		return
	}
	want := map[int]guestProfile{}
	clear(m.errs)
	for id, g := range s.state.Guests {
		p, err := guestSSHProfile(g)
		if err != nil {
			m.errs[id] = err
			continue
		}
		want[id] = p
	}
	for id, srv := range m.servers {
		if p, ok := want[id]; !ok || !p.sameRun(srv.profile) {
			srv.close()
			delete(m.servers, id)
		}
	}
	for id, f := range m.failed {
		if p, ok := want[id]; !ok || !p.sameRun(f) {
			delete(m.failed, id)
		}
	}
	for id := range m.trees {
		if s.state.Guests[id] == nil {
			// Deleting a guest removes its root file system.
			if err := os.RemoveAll(m.treeDir(id)); err != nil {
				log.Printf("pvesim: guest %d: remove its tree: %v", id, err)
				continue
			}
			delete(m.trees, id)
		}
	}
	for id, p := range want {
		if m.servers[id] != nil {
			continue
		}
		if _, failed := m.failed[id]; failed {
			m.errs[id] = errors.New("its SSH server could not start (see the simulator's log)")
			continue
		}
		srv, err := m.startServer(p)
		if err != nil {
			log.Printf("pvesim: guest %d: SSH server on %s: %v", id, net.JoinHostPort(p.ip, strconv.Itoa(m.port)), err)
			m.failed[id] = p
			m.errs[id] = err
			continue
		}
		m.servers[id] = srv
	}
}

func (m *guestSSH) treeDir(vmid int) string { return filepath.Join(m.dir, strconv.Itoa(vmid)) }

// startServer prepares the guest's tree and listens on its address.
func (m *guestSSH) startServer(p guestProfile) (*guestSSHServer, error) {
	dir := m.treeDir(p.vmid)
	if err := prepareTree(dir, p); err != nil {
		return nil, err
	}
	m.trees[p.vmid] = true
	signer, err := readHostKey(dir)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(p.ip, strconv.Itoa(m.port)))
	if err != nil {
		return nil, err
	}
	srv := newGuestSSHServer(m, p, dir, signer, ln)
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		srv.serve()
	}()
	return srv, nil
}

// sameRun says whether two profiles are the same run of a guest on the
// same address (a restart or a new address needs a new server).
func (p guestProfile) sameRun(q guestProfile) bool {
	return p.ip == q.ip && p.startedAt.Equal(q.startedAt)
}

// guestSSHProfile is what the guest's SSH server is made from, or why it
// has none.
func guestSSHProfile(g *Guest) (guestProfile, error) {
	if !g.Running {
		return guestProfile{}, fmt.Errorf("guest %d is not running", g.VMID)
	}
	ip, err := guestLoopbackIP(g)
	if err != nil {
		return guestProfile{}, err
	}
	p := guestProfile{vmid: g.VMID, typ: g.Type, ip: ip, distro: guestDistro(g), startedAt: g.StartedAt,
		hostname: g.Name(), rootKeys: g.RootSSHKeys}
	if g.Type == "qemu" {
		if p.hostname == "" {
			p.hostname = "VM" + strconv.Itoa(g.VMID) // Cloudinit.pm get_hostname_fqdn
		}
		p.ciUser = g.Conf["ciuser"]
		if keys, err := decodeSSHKeys(g.Conf["sshkeys"]); err == nil {
			for _, k := range strings.Split(keys, "\n") {
				if k = strings.TrimSpace(k); k != "" {
					p.ciKeys = append(p.ciKeys, k)
				}
			}
		}
	} else if p.hostname == "" {
		p.hostname = "CT" + strconv.Itoa(g.VMID)
	}
	return p, nil
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
	if s.gssh == nil || !s.gssh.started {
		return ""
	}
	return s.gssh.treeDir(vmid)
}

// GuestRootDir is the folder holding every guest's tree (DIR of
// --guest-root); "" when guest SSH is off or the server has not started.
func (s *Server) GuestRootDir() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gssh == nil || !s.gssh.started {
		return ""
	}
	return s.gssh.dir
}

// GuestSSHAddr is the address ("127.0.0.5:2222") of the running SSH
// server of guest vmid, or why it has none.
func (s *Server) GuestSSHAddr(vmid int) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.gssh
	if m == nil || !m.started {
		return "", errors.New("guest SSH is off (Options.GuestSSHPort) or the simulator is not started")
	}
	s.guestSSHSync()
	if srv := m.servers[vmid]; srv != nil {
		return srv.ln.Addr().String(), nil
	}
	if s.state.Guests[vmid] == nil {
		return "", fmt.Errorf("guest %d does not exist", vmid)
	}
	if err := m.errs[vmid]; err != nil {
		return "", err
	}
	return "", fmt.Errorf("guest %d has no SSH server", vmid)
}
