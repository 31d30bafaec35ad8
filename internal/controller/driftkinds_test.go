package controller

import (
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
)

// driftClusterWide declares one object of every cluster-wide kind beside
// the drift runs' guests: each is a collection the daemon lists once a
// pass, whatever the number of guests.
var driftClusterWide = map[string]string{
	"cluster/alias.yaml": `apiVersion: proxmops.dev/v1
kind: FirewallAlias
metadata:
  name: bench-lan
spec:
  cidr: 192.168.1.0/24
  comment: bench LAN
`,
	"cluster/ipset.yaml": `apiVersion: proxmops.dev/v1
kind: FirewallIPSet
metadata:
  name: bench-admins
spec:
  comment: bench admins
  entries:
    - cidr: 192.168.1.10
    - { cidr: 192.168.1.11, comment: laptop }
    - { cidr: 10.0.0.0/8, nomatch: true }
`,
	"cluster/group.yaml": `apiVersion: proxmops.dev/v1
kind: FirewallGroup
metadata:
  name: bench-web
spec:
  comment: bench web servers
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "80,443" }
    - { type: in, action: ACCEPT, macro: SSH, source: +bench-admins, log: info }
`,
	// Off, so the guard against cutting proxmops' own cord has nothing to
	// refuse: reading it costs the same either way.
	"cluster/firewall.yaml": `apiVersion: proxmops.dev/v1
kind: ClusterFirewall
metadata:
  name: cluster
spec:
  enabled: false
  policyIn: DROP
  rules:
    - { type: in, action: ACCEPT, proto: tcp, dport: "8006,22", source: +bench-admins, comment: admins }
    - { type: group, action: bench-web }
`,
	"cluster/storage.yaml": `apiVersion: proxmops.dev/v1
kind: Storage
metadata:
  name: bench-dir
spec:
  type: dir
  path: /srv/bench
  content: [backup, iso]
`,
	"cluster/pool.yaml": `apiVersion: proxmops.dev/v1
kind: Pool
metadata:
  name: bench
spec:
  comment: bench pool
`,
	"cluster/harule.yaml": `apiVersion: proxmops.dev/v1
kind: HARule
metadata:
  name: bench-prefers-pve1
spec:
  type: node-affinity
  guests: [g-0000]
  nodes: [{ node: pve1, priority: 2 }, { node: pve2 }]
`,
	"cluster/backup.yaml": `apiVersion: proxmops.dev/v1
kind: BackupJob
metadata:
  name: bench-nightly
spec:
  schedule: "02:30"
  mode: snapshot
  selector:
    tags: [bench]
  comment: bench backups
`,
}

// driftCollectionKinds are the cluster-wide lists (kindOf) the declared
// objects of driftClusterWide make the daemon read each pass: the cluster
// firewall is two of them, its options and its rules.
var driftCollectionKinds = []string{"aliases read", "ipsets read", "groups read", "cluster firewall options read",
	"cluster firewall rules read", "pools read", "backup jobs read", "ha rules read", "ha resources read", "storage read"}

// driftCollections is the number of those lists.
var driftCollections = len(driftCollectionKinds)

// driftFirewallEvery is the share of guests with a firewall of their own
// (spec.firewall, options and rules): one in four, the ones a home lab or
// a small business exposes (web, mail, VPN); the rest sit behind the
// cluster's firewall and the router.
const driftFirewallEvery = 4

// driftGuestFirewall is the spec.firewall (and the NIC it filters) of
// the guests that have one.
const driftGuestFirewall = `  net: [{ bridge: vmbr0, firewall: true }]
  firewall:
    enabled: true
    policyIn: DROP
    policyOut: ACCEPT
    rules:
      - { type: group, action: bench-web }
      - { type: in, action: ACCEPT, macro: Ping, source: bench-lan }
`

// requestKinds sorts the daemon's requests by what they are for, so the
// share of the cluster-wide collections shows beside the guests'.
type requestKinds struct {
	mu sync.Mutex
	n  map[string]int64
}

// collectionPaths names the cluster-wide collections' requests by path,
// in the order they are tried: a path ending in "*" is a prefix, any other
// is matched whole.
var collectionPaths = []struct{ path, kind string }{
	{"/cluster/firewall/aliases*", "aliases"},
	{"/cluster/firewall/groups", "groups"},
	{"/cluster/firewall/groups/*", "group rules"},
	{"/cluster/firewall/options", "cluster firewall options"},
	{"/cluster/firewall/rules*", "cluster firewall rules"},
	{"/cluster/firewall/ipset", "ipsets"},
	{"/cluster/firewall/ipset/*", "ipset entries"},
	{"/cluster/ha/rules*", "ha rules"},
	{"/cluster/ha/resources*", "ha resources"},
	{"/pools*", "pools"},
	{"/cluster/backup*", "backup jobs"},
}

// kindOf names a request's kind from its method and API path.
func kindOf(method, path string) string {
	p := strings.TrimPrefix(path, "/api2/json")
	seg := strings.Split(strings.Trim(p, "/"), "/")
	verb := "read"
	if method != http.MethodGet {
		verb = "write"
	}
	switch {
	case p == "/cluster/resources":
		return "resources"
	case len(seg) >= 3 && seg[0] == "nodes" && seg[2] == "tasks":
		return "tasks"
	case len(seg) >= 5 && seg[0] == "nodes" && (seg[2] == "qemu" || seg[2] == "lxc") && seg[4] == "firewall":
		return "guest firewall " + verb
	case len(seg) >= 4 && seg[0] == "nodes" && (seg[2] == "qemu" || seg[2] == "lxc"):
		return "guest " + verb
	}
	for _, c := range collectionPaths {
		if prefix, ok := strings.CutSuffix(c.path, "*"); p == c.path || ok && strings.HasPrefix(p, prefix) {
			return c.kind + " " + verb
		}
	}
	if strings.Contains(p, "storage") {
		return "storage " + verb
	}
	return "other " + verb + " " + p
}

func (k *requestKinds) add(r *http.Request) {
	kind := kindOf(r.Method, r.URL.Path)
	k.mu.Lock()
	if k.n == nil {
		k.n = map[string]int64{}
	}
	k.n[kind]++
	k.mu.Unlock()
}

func (k *requestKinds) snapshot() map[string]int64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return maps.Clone(k.n)
}

// since is the requests of each kind made after before was taken.
func (k *requestKinds) since(before map[string]int64) map[string]int64 {
	d := map[string]int64{}
	for kind, n := range k.snapshot() {
		if n -= before[kind]; n > 0 {
			d[kind] = n
		}
	}
	return d
}

// collectionReads is the interval's GETs of the cluster-wide lists, of
// IP sets' entries and of security groups' rules.
func collectionReads(byKind map[string]int64) int64 {
	var n int64
	for _, kind := range append([]string{"ipset entries read", "group rules read"}, driftCollectionKinds...) {
		n += byKind[kind]
	}
	return n
}

// kindMedians is the median per interval of each kind of request.
func kindMedians(intervals []map[string]int64) map[string]int64 {
	kinds := map[string]bool{}
	for _, m := range intervals {
		for k := range m {
			kinds[k] = true
		}
	}
	out := map[string]int64{}
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		xs := make([]int64, len(intervals))
		for i, m := range intervals {
			xs[i] = m[k]
		}
		out[k] = median(xs)
	}
	return out
}
