// Package simtest serves the Proxmox VE simulator (pvesim) to the tests
// of several packages: on a free loopback port, closed when the test ends.
package simtest

import (
	"net"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// Start serves a simulator of o until the test ends.
func Start(t testing.TB, o pvesim.Options) *pvesim.Server {
	t.Helper()
	return Serve(t, pvesim.New(o))
}

// Serve serves sim, set up by the caller, until the test ends.
func Serve(t testing.TB, sim *pvesim.Server) *pvesim.Server {
	t.Helper()
	if err := sim.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sim.Close() })
	return sim
}

// GuestSSHPort is a port free on ip now, for Options.GuestSSHPort: the
// simulator's guest SSH servers listen on it at the guests' addresses.
func GuestSSHPort(t testing.TB, ip string) int {
	t.Helper()
	ln, err := net.Listen("tcp", ip+":0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// AddGuests puts guests on sim, as if made before the test.
func AddGuests(t testing.TB, sim *pvesim.Server, guests ...pvesim.GuestSpec) {
	t.Helper()
	for _, g := range guests {
		if err := sim.AddGuest(g); err != nil {
			t.Fatal(err)
		}
	}
}
