package demo

import (
	"fmt"
	"net"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// guestNet is where the demo puts the guests that declare provisioning:
// the simulator serves their SSH on loopback addresses only.
const guestNet = "127.0.80."

var (
	ipLine        = regexp.MustCompile(`^(\s*(?:- )?ip: )"?(\d+)\.(\d+)\.(\d+)\.(\d+)/\d+"?(\s*(?:#.*)?)$`)
	gwLine        = regexp.MustCompile(`^(\s*(?:- )?gw: )"?[0-9.]+"?(\s*(?:#.*)?)$`)
	provisionLine = regexp.MustCompile(`^(\s*)provision:\s*$`)
	portLine      = regexp.MustCompile(`^(\s*)port: \d+\s*$`)
)

// provisionRewrite points the guests of a manifest file that declare
// provision at the demo's guest SSH servers: each static IPv4 address
// becomes 127.0.80.<its last number>/8 (gateway 127.0.0.1), and
// provision.port the simulator's guest SSH port. Other manifests are left
// as they are.
func provisionRewrite(data []byte, port int) []byte {
	docs := strings.Split(string(data), "\n---")
	for i, doc := range docs {
		if !strings.Contains(doc, "provision:") {
			continue
		}
		lines := strings.Split(doc, "\n")
		var out []string
		inProvision, indent := false, ""
		for _, l := range lines {
			if inProvision && portLine.MatchString(l) && len(portLine.FindStringSubmatch(l)[1]) > len(indent) {
				continue // replaced by the one written after provision:
			}
			if m := provisionLine.FindStringSubmatch(l); m != nil {
				inProvision, indent = true, m[1]
				out = append(out, l, fmt.Sprintf("%s  port: %d", indent, port))
				continue
			}
			if inProvision && strings.TrimSpace(l) != "" && !strings.HasPrefix(l, indent+" ") {
				inProvision = false
			}
			if m := ipLine.FindStringSubmatch(l); m != nil {
				l = m[1] + guestNet + m[5] + "/8" + m[6]
			} else if m := gwLine.FindStringSubmatch(l); m != nil {
				l = m[1] + "127.0.0.1" + m[2]
			}
			out = append(out, l)
		}
		docs[i] = strings.Join(out, "\n")
	}
	return []byte(strings.Join(docs, "\n---"))
}

// guestSSHPort is the simulator's guest SSH port: the one an earlier run
// of the demo in dir used while it is free, else a new free one, kept in
// dir so that the repository's manifests change only when it must.
func guestSSHPort(dir string) (int, error) {
	path := dir + "/guest-ssh-port"
	if b, err := os.ReadFile(path); err == nil {
		if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && portFree(p) {
			return p, nil
		}
	}
	ln, err := net.Listen("tcp", guestNet+"1:0")
	if err != nil {
		return 0, fmt.Errorf("a port for the guests' SSH servers on %s0/24: %w", guestNet, err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p, os.WriteFile(path, []byte(strconv.Itoa(p)+"\n"), 0o600)
}

func portFree(p int) bool {
	ln, err := net.Listen("tcp", net.JoinHostPort(guestNet+"1", strconv.Itoa(p)))
	if err != nil {
		return false
	}
	ln.Close()
	return true
}
