package guestssh

// One guest's SSH server: public-key logins as sshd checks them (the
// user's line in the guest's /etc/passwd, the keys in its
// ~/.ssh/authorized_keys, a command="..." option forcing the command),
// "exec", "shell" (without a terminal) and the "sftp" subsystem, each run
// in the guest sandbox (sandbox_linux.go).

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/ssh"
)

// guestPath is the PATH of guest commands: the stand-ins in /usr/local first.
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

type guestSSHServer struct {
	m       *Manager
	profile Profile
	dir     string
	ln      net.Listener
	config  *ssh.ServerConfig

	mu     sync.Mutex
	closed bool
	conns  map[net.Conn]bool
	procs  map[*os.Process]bool
}

func newGuestSSHServer(m *Manager, p Profile, dir string, hostKey ssh.Signer, ln net.Listener) *guestSSHServer {
	g := &guestSSHServer{m: m, profile: p, dir: dir, ln: ln, conns: map[net.Conn]bool{}, procs: map[*os.Process]bool{}}
	g.config = &ssh.ServerConfig{
		PublicKeyCallback: g.checkKey,
		ServerVersion:     "SSH-2.0-pvesim",
	}
	g.config.AddHostKey(hostKey)
	return g
}

// close ends the listener, every connection and every running command,
// as the guest's shutdown does.
func (g *guestSSHServer) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	g.ln.Close()
	for c := range g.conns {
		c.Close()
	}
	for p := range g.procs {
		_ = p.Kill()
	}
}

func (g *guestSSHServer) serve() {
	for {
		c, err := g.ln.Accept()
		if err != nil {
			return
		}
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			c.Close()
			return
		}
		g.conns[c] = true
		g.mu.Unlock()
		g.m.wg.Add(1)
		go func() {
			defer g.m.wg.Done()
			g.handle(c)
			g.mu.Lock()
			delete(g.conns, c)
			g.mu.Unlock()
			c.Close()
		}()
	}
}

// checkKey accepts a key listed in the user's authorized_keys in the
// guest's tree, read at each login as sshd reads it.
func (g *guestSSHServer) checkKey(meta ssh.ConnMetadata, key ssh.PublicKey) (*ssh.Permissions, error) {
	root, err := os.OpenRoot(g.dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	home, ok := passwdHome(root, meta.User())
	if !ok {
		return nil, fmt.Errorf("invalid user %s", meta.User())
	}
	b, err := root.ReadFile(strings.TrimPrefix(home, "/") + "/.ssh/authorized_keys")
	if err != nil {
		return nil, fmt.Errorf("no authorized keys for %s", meta.User())
	}
	want := key.Marshal()
	for len(b) > 0 {
		pk, _, opts, rest, err := ssh.ParseAuthorizedKey(b)
		if err != nil {
			break
		}
		b = rest
		if !bytes.Equal(pk.Marshal(), want) {
			continue
		}
		perm := &ssh.Permissions{Extensions: map[string]string{"user": meta.User(), "home": home}}
		for _, o := range opts {
			if v, ok := strings.CutPrefix(o, "command="); ok {
				perm.Extensions["command"] = unquoteOption(v)
			}
		}
		return perm, nil
	}
	return nil, fmt.Errorf("key not authorized for %s", meta.User())
}

// unquoteOption undoes the quoting of an authorized_keys option value.
func unquoteOption(v string) string {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	return strings.ReplaceAll(v, `\"`, `"`)
}

// passwdHome is the user's home directory from the guest's /etc/passwd.
func passwdHome(root *os.Root, user string) (string, bool) {
	f, err := root.Open("etc/passwd")
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) >= 7 && fields[0] == user && user != "" {
			return fields[5], true
		}
	}
	return "", false
}

func (g *guestSSHServer) handle(c net.Conn) {
	sc, chans, reqs, err := ssh.NewServerConn(c, g.config)
	if err != nil {
		return
	}
	defer sc.Close()
	go ssh.DiscardRequests(reqs)
	for nc := range chans {
		if nc.ChannelType() != "session" {
			_ = nc.Reject(ssh.UnknownChannelType, "only session channels are served")
			continue
		}
		ch, creqs, err := nc.Accept()
		if err != nil {
			continue
		}
		g.m.wg.Add(1)
		go func() {
			defer g.m.wg.Done()
			g.session(sc, ch, creqs)
		}()
	}
}

// session serves one session channel: env requests, then one exec, shell
// or subsystem request, and signals for what it runs.
func (g *guestSSHServer) session(sc *ssh.ServerConn, ch ssh.Channel, reqs <-chan *ssh.Request) {
	defer ch.Close()
	var env []string
	var running *runningProc
	for req := range reqs {
		switch req.Type {
		case "env":
			var kv struct{ Name, Value string }
			// sshd accepts only the names of AcceptEnv (Debian: LANG LC_*).
			ok := ssh.Unmarshal(req.Payload, &kv) == nil && (kv.Name == "LANG" || strings.HasPrefix(kv.Name, "LC_"))
			if ok {
				env = append(env, kv.Name+"="+kv.Value)
			}
			_ = req.Reply(ok, nil)
		case "exec", "shell", "subsystem":
			if running != nil {
				_ = req.Reply(false, nil)
				continue
			}
			spec, err := g.sessionSpec(sc, req, env)
			if err != nil {
				_ = req.Reply(false, nil)
				continue
			}
			running = &runningProc{}
			_ = req.Reply(true, nil)
			g.m.wg.Add(1)
			go func() {
				defer g.m.wg.Done()
				g.run(ch, spec, running)
			}()
		case "signal":
			var sig struct{ Name string }
			if running != nil && ssh.Unmarshal(req.Payload, &sig) == nil {
				if s, ok := sshSignals[sig.Name]; ok {
					running.signal(s)
				}
			}
			_ = req.Reply(false, nil)
		default:
			// pty-req among others: no terminals here.
			_ = req.Reply(false, nil)
		}
	}
}

// runningProc is a session's process, once started.
type runningProc struct {
	mu sync.Mutex
	p  *os.Process
}

func (r *runningProc) set(p *os.Process) {
	r.mu.Lock()
	r.p = p
	r.mu.Unlock()
}

func (r *runningProc) signal(s os.Signal) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.p != nil {
		_ = r.p.Signal(s)
	}
}

var sshSignals = map[string]syscall.Signal{"HUP": syscall.SIGHUP, "INT": syscall.SIGINT, "KILL": syscall.SIGKILL,
	"QUIT": syscall.SIGQUIT, "TERM": syscall.SIGTERM, "USR1": syscall.SIGUSR1, "USR2": syscall.SIGUSR2}

// sessionSpec is the sandboxed process a request asks for.
func (g *guestSSHServer) sessionSpec(sc *ssh.ServerConn, req *ssh.Request, env []string) (sandboxSpec, error) {
	ext := sc.Permissions.Extensions
	user, home := ext["user"], ext["home"]
	spec := sandboxSpec{Root: g.dir, Hostname: g.profile.Hostname, Mode: "exec", Dir: home}
	var command string
	switch req.Type {
	case "exec":
		var p struct{ Command string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			return spec, err
		}
		command = p.Command
	case "subsystem":
		var p struct{ Name string }
		if err := ssh.Unmarshal(req.Payload, &p); err != nil {
			return spec, err
		}
		if p.Name != "sftp" {
			return spec, fmt.Errorf("subsystem %q is not served", p.Name)
		}
		spec.Mode = "sftp"
	}
	local, _ := g.ln.Addr().(*net.TCPAddr)
	remote, _ := sc.RemoteAddr().(*net.TCPAddr)
	spec.Env = append([]string{"PATH=" + guestPath, "HOME=" + home, "USER=" + user, "LOGNAME=" + user,
		"SHELL=/bin/sh"}, env...)
	if local != nil && remote != nil {
		spec.Env = append(spec.Env, fmt.Sprintf("SSH_CONNECTION=%s %d %s %d", remote.IP, remote.Port, local.IP, local.Port),
			fmt.Sprintf("SSH_CLIENT=%s %d %d", remote.IP, remote.Port, local.Port))
	}
	if forced, ok := ext["command"]; ok {
		// authorized_keys command="...": it runs instead of what was asked.
		if command != "" {
			spec.Env = append(spec.Env, "SSH_ORIGINAL_COMMAND="+command)
		}
		command, spec.Mode = forced, "exec"
	}
	if spec.Mode == "exec" {
		spec.Argv = []string{"/bin/sh"}
		if req.Type != "shell" || command != "" {
			spec.Argv = append(spec.Argv, "-c", command)
		}
	}
	return spec, nil
}

// run runs the sandboxed process with the channel as its standard streams
// and reports its exit status (or signal) as sshd does.
func (g *guestSSHServer) run(ch ssh.Channel, spec sandboxSpec, running *runningProc) {
	status := func(code uint32) {
		_, _ = ch.SendRequest("exit-status", false, ssh.Marshal(struct{ Status uint32 }{code}))
		_ = ch.CloseWrite()
		_ = ch.Close()
	}
	cmd, err := sandboxCommand(spec)
	if err != nil {
		fmt.Fprintf(ch.Stderr(), "pvesim: %v\n", err)
		status(255)
		return
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		status(255)
		return
	}
	cmd.Stdout = ch
	cmd.Stderr = ch.Stderr()
	// Output still held by a process of the sandbox after it ended is cut.
	cmd.WaitDelay = 2 * time.Second
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return
	}
	if err := cmd.Start(); err != nil {
		g.mu.Unlock()
		fmt.Fprintf(ch.Stderr(), "pvesim: %v\n", err)
		status(255)
		return
	}
	g.procs[cmd.Process] = true
	g.mu.Unlock()
	running.set(cmd.Process)
	go func() {
		_, _ = io.Copy(stdin, ch)
		stdin.Close()
	}()
	err = cmd.Wait()
	g.mu.Lock()
	delete(g.procs, cmd.Process)
	g.mu.Unlock()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			name := strings.TrimPrefix(signalName(ws.Signal()), "SIG")
			_, _ = ch.SendRequest("exit-signal", false, ssh.Marshal(struct {
				Signal     string
				CoreDumped bool
				Error      string
				Lang       string
			}{name, ws.CoreDump(), "", ""}))
			_ = ch.Close()
			return
		}
		status(uint32(ee.ExitCode()))
		return
	}
	if err != nil && cmd.ProcessState == nil {
		status(255)
		return
	}
	status(uint32(cmd.ProcessState.ExitCode()))
}

// signalName is the SSH name of a signal ("KILL").
func signalName(s syscall.Signal) string {
	for name, sig := range sshSignals {
		if sig == s {
			return name
		}
	}
	return fmt.Sprintf("%d", int(s))
}
