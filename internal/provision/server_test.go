package provision

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/pkg/sftp"
	"github.com/proxmops/proxmops/internal/sshtest"
	"golang.org/x/crypto/ssh"
)

// fakeGuest is a throwaway SSH server on loopback: it accepts one client
// key, answers exec requests with a Go handler (nothing runs on the host)
// and, unless noSFTP, serves SFTP from memory.
type fakeGuest struct {
	t        *testing.T
	ln       net.Listener
	hostKey  ssh.Signer
	accept   ssh.PublicKey
	noSFTP   bool
	handler  func(cmd string, stdin []byte) (string, int)
	mu       sync.Mutex
	commands []string
	sftpFS   sftp.Handlers
	users    []string
}

func newFakeGuest(t *testing.T, client ssh.PublicKey, handler func(cmd string, stdin []byte) (string, int)) *fakeGuest {
	t.Helper()
	hk, _ := sshtest.NewKey(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	g := &fakeGuest{t: t, ln: ln, hostKey: hk, accept: client, handler: handler, sftpFS: sftp.InMemHandler()}
	t.Cleanup(func() { ln.Close() })
	go g.serve()
	return g
}

func (g *fakeGuest) port() int { return g.ln.Addr().(*net.TCPAddr).Port }

// rekey gives the guest a new host key (a guest rebuilt behind the same
// address).
func (g *fakeGuest) rekey() {
	hk, _ := sshtest.NewKey(g.t)
	g.mu.Lock()
	g.hostKey = hk
	g.mu.Unlock()
}

func (g *fakeGuest) ran() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.commands...)
}

func (g *fakeGuest) serve() {
	for {
		nc, err := g.ln.Accept()
		if err != nil {
			return
		}
		go g.handle(nc)
	}
}

func (g *fakeGuest) handle(nc net.Conn) {
	g.mu.Lock()
	cfg := &ssh.ServerConfig{PublicKeyCallback: func(md ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
		g.mu.Lock()
		g.users = append(g.users, md.User())
		g.mu.Unlock()
		if string(key.Marshal()) == string(g.accept.Marshal()) {
			return nil, nil
		}
		return nil, errUnauthorized
	}}
	cfg.AddHostKey(g.hostKey)
	g.mu.Unlock()
	sshtest.ServeSessions(nc, cfg, g.session)
}

type unauthorized struct{}

func (unauthorized) Error() string { return "unauthorized" }

var errUnauthorized error = unauthorized{}

func (g *fakeGuest) session(ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	for req := range reqs {
		switch req.Type {
		case "exec":
			cmd := string(req.Payload[4:])
			req.Reply(true, nil)
			var stdin []byte
			if strings.Contains(cmd, "cat >") {
				stdin, _ = io.ReadAll(ch)
			}
			g.mu.Lock()
			g.commands = append(g.commands, cmd)
			g.mu.Unlock()
			out, status := g.handler(cmd, stdin)
			io.WriteString(ch, out)
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], uint32(status))
			ch.SendRequest("exit-status", false, b[:])
			return
		case "subsystem":
			if g.noSFTP || string(req.Payload[4:]) != "sftp" {
				req.Reply(false, nil)
				continue
			}
			req.Reply(true, nil)
			srv := sftp.NewRequestServer(ch, g.sftpFS)
			srv.Serve()
			srv.Close()
			return
		default:
			req.Reply(false, nil)
		}
	}
}

// unquote undoes quote for one word.
func unquote(s string) string {
	s = strings.TrimPrefix(strings.TrimSuffix(s, "'"), "'")
	return strings.ReplaceAll(s, `'\''`, "'")
}
