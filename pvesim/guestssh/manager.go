// Package guestssh serves the simulator's guests over SSH: one server per
// running guest on its loopback address, each command run in a sandbox
// (new namespaces) rooted at the guest's tree of files. pvesim decides
// which guests want a server (their profiles); Manager starts and ends
// the servers to match.
package guestssh

import (
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// Manager runs the guests' SSH servers. Its methods, Wait excepted, are
// called with the caller's lock held.
type Manager struct {
	port    int
	dir     string // DIR: guest G's tree is DIR/G
	tempDir bool   // DIR was made for this run and is removed at Close
	started bool
	closed  bool
	servers map[int]*guestSSHServer
	trees   map[int]bool    // trees that exist under DIR
	failed  map[int]Profile // listen failures, not retried until the profile changes
	errs    map[int]error   // why a running guest has no server
	wg      sync.WaitGroup  // accept loops, connections, sessions
	stop    chan struct{}
}

// New is a manager serving on port, its trees under dir (a temporary
// folder when empty).
func New(port int, dir string) *Manager {
	return &Manager{port: port, dir: dir, servers: map[int]*guestSSHServer{},
		trees: map[int]bool{}, failed: map[int]Profile{}, errs: map[int]error{}, stop: make(chan struct{})}
}

// Open makes DIR and learns the trees in it.
func (m *Manager) Open() error {
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
	return nil
}

// SetStarted marks the manager started: Sync acts from now on.
func (m *Manager) SetStarted() { m.started = true }

// Started says whether Open and SetStarted have run.
func (m *Manager) Started() bool { return m.started }

// Running says whether the manager is started and not closed.
func (m *Manager) Running() bool { return m.started && !m.closed }

// Every calls f every tick until Stop, in a goroutine Wait waits for.
// f takes the caller's lock itself.
func (m *Manager) Every(tick time.Duration, f func()) {
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				f()
			}
		}
	}()
}

// Stop ends every server and marks the manager closed; it says whether
// Wait has goroutines to wait for.
func (m *Manager) Stop() bool {
	if m.closed || !m.started {
		m.closed = true
		return false
	}
	m.closed = true
	close(m.stop)
	for id, srv := range m.servers {
		srv.close()
		delete(m.servers, id)
	}
	return true
}

// Wait waits for the sessions Stop ended and removes a temporary DIR.
// It is called without the caller's lock.
func (m *Manager) Wait() {
	m.wg.Wait()
	if m.tempDir {
		_ = os.RemoveAll(m.dir)
	}
}

// Sync starts the servers of the wanted profiles, ends those whose guest
// stopped, restarted or changed address, and removes the trees of guests
// that no longer exist. noServer says why the other guests have none.
func (m *Manager) Sync(want map[int]Profile, noServer map[int]error, exists func(vmid int) bool) {
	clear(m.errs)
	for id, err := range noServer {
		m.errs[id] = err
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
		if !exists(id) {
			// Deleting a guest removes its root file system.
			if err := os.RemoveAll(m.TreeDir(id)); err != nil {
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
			log.Printf("pvesim: guest %d: SSH server on %s: %v", id, net.JoinHostPort(p.IP, strconv.Itoa(m.port)), err)
			m.failed[id] = p
			m.errs[id] = err
			continue
		}
		m.servers[id] = srv
	}
}

// Dir is DIR, the folder holding every guest's tree.
func (m *Manager) Dir() string { return m.dir }

// TreeDir is guest vmid's tree.
func (m *Manager) TreeDir(vmid int) string { return filepath.Join(m.dir, strconv.Itoa(vmid)) }

// Addr is the address of guest vmid's running server ("" when none).
func (m *Manager) Addr(vmid int) string {
	if srv := m.servers[vmid]; srv != nil {
		return srv.ln.Addr().String()
	}
	return ""
}

// Err is why guest vmid has no server, as the last Sync found.
func (m *Manager) Err(vmid int) error { return m.errs[vmid] }

// startServer prepares the guest's tree and listens on its address.
func (m *Manager) startServer(p Profile) (*guestSSHServer, error) {
	dir := m.TreeDir(p.VMID)
	if err := prepareTree(dir, p); err != nil {
		return nil, err
	}
	m.trees[p.VMID] = true
	signer, err := readHostKey(dir)
	if err != nil {
		return nil, fmt.Errorf("host key: %w", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(p.IP, strconv.Itoa(m.port)))
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
func (p Profile) sameRun(q Profile) bool {
	return p.IP == q.IP && p.StartedAt.Equal(q.StartedAt)
}
