package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/config"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// clusterCheck is one run's look at a cluster that answered.
type clusterCheck struct {
	r       *report
	client  *pve.Client
	o       Options
	desired *engine.Desired // nil when the manifests could not be read
	refs    engine.References
	online  map[string]bool // node → online, for the nodes GET /nodes lists
}

func (c *clusterCheck) run(ctx context.Context) {
	if c.desired != nil {
		c.refs = engine.ReferencesOf(c.desired)
	}
	c.token(ctx)
	c.privileges(ctx)
	c.nodes(ctx)
	c.quorum(ctx)
	c.storages(ctx)
	c.bridges(ctx)
	c.sdn(ctx)
	c.haAndPools(ctx)
	if c.o.Exercise != nil {
		c.exercise(ctx)
	}
}

// token names the token and its privilege separation.
func (c *clusterCheck) token(ctx context.Context) {
	id := c.o.Config.Cluster.TokenID
	user, name, ok := strings.Cut(id, "!")
	if !ok {
		c.r.fail("cluster: token", id+" is not an API token ID", "set "+c.o.key("tokenId")+" to USER@REALM!TOKENNAME (pveum user token add)")
		return
	}
	var perms map[string]map[string]any
	if err := c.client.Get(ctx, "access/permissions", nil, &perms); err != nil {
		c.r.fail("cluster: token", "GET /access/permissions: "+err.Error(), fixForError(err, c.o))
		return
	}
	msg := fmt.Sprintf("token %s of user %s; privileges on %d ACL paths", name, user, len(perms))
	// A token reads its privsep flag in its user's entry, which needs
	// Sys.Audit or User.Modify on /access/groups (User.pm read_user).
	var u struct {
		Tokens map[string]struct {
			Privsep pve.Int `json:"privsep"`
			Expire  pve.Int `json:"expire"`
		} `json:"tokens"`
	}
	if err := c.client.Get(ctx, "access/users/"+pve.PathEscape(user), nil, &u); err != nil {
		c.r.ok("cluster: token", msg+"; its privilege separation is not readable without Sys.Audit on /access/groups "+
			fmt.Sprintf("(`pveum user token list %s` on a node shows it): what counts is what GET /access/permissions reports", user))
		return
	}
	tok, found := u.Tokens[name]
	switch {
	case !found:
		c.r.ok("cluster: token", msg+"; its user's entry does not list it")
	case tok.Expire != 0 && time.Unix(int64(tok.Expire), 0).Before(c.o.Now().Add(7*24*time.Hour)):
		c.r.warn("cluster: token", fmt.Sprintf("%s; it expires %s", msg, time.Unix(int64(tok.Expire), 0).UTC().Format(time.RFC3339)),
			fmt.Sprintf("extend it before then: pveum user token modify %s %s --expire 0", user, name))
	case tok.Privsep != 0:
		c.r.ok("cluster: token", msg+"; privilege separation on: it holds only the ACLs granted to the token itself")
	case user == "root@pam":
		c.r.warn("cluster: token", msg+"; privilege separation off on a root@pam token: it can do anything root can",
			"create a dedicated user and a privilege-separated token with the roles in docs/configuration.md (API token)")
	default:
		c.r.ok("cluster: token", msg+"; privilege separation off: it holds all of "+user+"'s privileges")
	}
}

// privileges reports each privilege the manifests need (all proxmops may
// need, on /, when the manifests could not be read) and the token lacks.
func (c *clusterCheck) privileges(ctx context.Context) {
	var needs []engine.PrivilegeNeed
	if c.desired != nil {
		needs = engine.PrivilegeNeeds(c.desired)
	} else {
		for _, p := range config.RequiredPrivileges {
			needs = append(needs, engine.PrivilegeNeed{Path: "/", Privilege: p.Name, Why: p.Why})
		}
	}
	missing, err := MissingPrivileges(ctx, c.client, needs)
	switch {
	case err != nil:
		c.r.fail("cluster: privileges", "the token's privileges could not be read (GET /access/permissions): "+err.Error(), fixForError(err, c.o))
	case len(missing) > 0:
		var list, privs []string
		paths := map[string]bool{}
		for _, n := range missing {
			list = append(list, fmt.Sprintf("%s on %s (%s)", n.Privilege, n.Path, n.Why))
			if !contains(privs, n.Privilege) {
				privs = append(privs, n.Privilege)
			}
			paths[n.Path] = true
		}
		var grants []string
		for _, p := range slices.Sorted(maps.Keys(paths)) {
			grants = append(grants, fmt.Sprintf("pveum acl modify %s --tokens '%s' --roles ProxmopsExtra", p, c.o.Config.Cluster.TokenID))
		}
		c.r.fail("cluster: privileges", fmt.Sprintf("the token lacks %d privileges: %s", len(missing), strings.Join(list, "; ")),
			fmt.Sprintf("grant them: pveum role add ProxmopsExtra --privs %q; %s (see docs/configuration.md, API token)", strings.Join(privs, ","), strings.Join(grants, "; ")))
	case c.desired != nil:
		c.r.ok("cluster: privileges", fmt.Sprintf("the token has the %d privileges the manifests need, each on its path", len(needs)))
	default:
		c.r.ok("cluster: privileges", fmt.Sprintf("the token has all %d privileges proxmops needs", len(config.RequiredPrivileges)))
	}
}

// MissingPrivileges lists the needs the token lacks, reading each ACL
// path's privileges once (GET /access/permissions?path=, as plan does).
func MissingPrivileges(ctx context.Context, client *pve.Client, needs []engine.PrivilegeNeed) ([]engine.PrivilegeNeed, error) {
	granted := map[string]map[string]bool{}
	var missing []engine.PrivilegeNeed
	for _, n := range needs {
		have, ok := granted[n.Path]
		if !ok {
			var perms map[string]map[string]any
			if err := client.Get(ctx, "access/permissions", pve.NewParams().Set("path", n.Path), &perms); err != nil {
				return nil, err
			}
			have = map[string]bool{}
			for priv := range perms[n.Path] {
				have[priv] = true
			}
			granted[n.Path] = have
		}
		if !have[n.Privilege] {
			missing = append(missing, n)
		}
	}
	return missing, nil
}

// nodes reports each node: online, its version and its clock; and the
// nodes the manifests name that the cluster does not have.
func (c *clusterCheck) nodes(ctx context.Context) {
	list, err := c.client.Nodes(ctx)
	if err != nil {
		c.r.fail("cluster: nodes", "GET /nodes: "+err.Error(), fixForError(err, c.o))
		return
	}
	c.online = map[string]bool{}
	sort.Slice(list, func(i, j int) bool { return list[i].Node < list[j].Node })
	for _, n := range list {
		c.online[n.Node] = n.Status == "online"
		c.node(ctx, n)
	}
	for _, n := range slices.Sorted(maps.Keys(c.refs.Nodes)) {
		if _, ok := c.online[n]; !ok {
			c.r.fail("node "+n, "the cluster has no node "+n+", which "+c.refs.Nodes[n]+" names",
				"correct metadata.node in the manifest (nodes: "+strings.Join(slices.Sorted(maps.Keys(c.online)), ", ")+")")
		}
	}
}

func (c *clusterCheck) node(ctx context.Context, n pve.Node) {
	name := "node " + n.Node
	usedBy, used := c.refs.Nodes[n.Node]
	if n.Status != "online" {
		msg := "the node is " + n.Status
		if used {
			c.r.fail(name, msg+", and "+usedBy+" names it", "bring the node back (or move the manifests' resources to another node) before syncing")
		} else {
			c.r.warn(name, msg+"; no manifest names it", "bring it back, or remove it from the cluster if it is gone for good")
		}
		return
	}
	var parts []string
	level, fix := "", ""
	var ver pve.Version
	if err := c.client.Get(ctx, "nodes/"+n.Node+"/version", nil, &ver); err != nil {
		level, fix = "FAIL", fixForError(err, c.o)
		parts = append(parts, "GET /nodes/"+n.Node+"/version: "+err.Error())
	} else {
		parts = append(parts, "online, Proxmox VE "+ver.Version)
		if l, f := versionLevel(ver.Version); l != "" {
			level, fix = l, f
		}
	}
	if level != "FAIL" {
		skew, err := c.clockSkew(ctx, n.Node)
		switch {
		case err != nil:
			level, fix = "WARN", fixForError(err, c.o)
			if isStatus(err, 403) {
				fix = "grant Sys.Audit on /nodes/" + n.Node + " to read the node's clock"
			}
			parts = append(parts, "clock not readable: "+err.Error())
		case skew > MaxClockSkew || skew < -MaxClockSkew:
			level, fix = "WARN", "synchronise the clocks (chrony or systemd-timesyncd) on the node and on this host"
			parts = append(parts, fmt.Sprintf("its clock is %s off this host's", roundSkew(skew)))
		default:
			parts = append(parts, fmt.Sprintf("clock within %s of this host's", MaxClockSkew))
		}
	}
	msg := strings.Join(parts, "; ")
	switch level {
	case "":
		c.r.ok(name, msg)
	case "WARN":
		c.r.warn(name, msg, fix)
	default:
		c.r.fail(name, msg, fix)
	}
}

// clockSkew is how far the node's clock (GET /nodes/{node}/time) is ahead
// of the local one, measured from the middle of the request; the answer's
// one-second resolution and the round trip are allowed for.
func (c *clusterCheck) clockSkew(ctx context.Context, node string) (time.Duration, error) {
	var t struct {
		Time pve.Int `json:"time"`
	}
	before := c.o.Now()
	if err := c.client.Get(ctx, "nodes/"+node+"/time", nil, &t); err != nil {
		return 0, err
	}
	after := c.o.Now()
	mid := before.Add(after.Sub(before) / 2)
	skew := time.Unix(int64(t.Time), 0).Sub(mid)
	slack := after.Sub(before)/2 + time.Second
	switch {
	case skew > slack:
		return skew - slack, nil
	case skew < -slack:
		return skew + slack, nil
	}
	return 0, nil
}

func roundSkew(d time.Duration) time.Duration { return d.Round(time.Second) }

// quorum reports whether the cluster is quorate.
func (c *clusterCheck) quorum(ctx context.Context) {
	var status []struct {
		Type    string  `json:"type"`
		Name    string  `json:"name"`
		Quorate pve.Int `json:"quorate"`
		Nodes   pve.Int `json:"nodes"`
	}
	if err := c.client.Get(ctx, "cluster/status", nil, &status); err != nil {
		c.r.warn("cluster: quorum", "GET /cluster/status: "+err.Error(), "grant Sys.Audit on / to let proxmops see the quorum")
		return
	}
	for _, s := range status {
		if s.Type != "cluster" {
			continue
		}
		if s.Quorate == 0 {
			c.r.fail("cluster: quorum", "cluster "+s.Name+" is not quorate: Proxmox refuses every change", "bring enough nodes back (pvecm status)")
			return
		}
		c.r.ok("cluster: quorum", fmt.Sprintf("cluster %s is quorate (%d nodes)", s.Name, s.Nodes))
		return
	}
	c.r.ok("cluster: quorum", "a single node, not a cluster: no quorum to lose")
}

// haAndPools reports whether HA and pools can be read.
func (c *clusterCheck) haAndPools(ctx context.Context) {
	var ha []map[string]any
	if err := c.client.Get(ctx, "cluster/ha/status/current", nil, &ha); err != nil {
		c.r.warn("cluster: ha", "GET /cluster/ha/status/current: "+err.Error(), "grant Sys.Audit on / so proxmops sees which guests HA manages")
	} else {
		c.r.ok("cluster: ha", fmt.Sprintf("the HA manager's status is readable (%d entries)", len(ha)))
	}
	var pools []map[string]any
	if err := c.client.Get(ctx, "pools", nil, &pools); err != nil {
		c.r.warn("cluster: pools", "GET /pools: "+err.Error(), "check the token: every user may list the pools it can see")
	} else {
		c.r.ok("cluster: pools", fmt.Sprintf("%d pools visible to the token", len(pools)))
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// isStatus reports whether err is an API answer with that HTTP status.
func isStatus(err error, status int) bool {
	var ae *pve.APIError
	return errors.As(err, &ae) && ae.StatusCode == status
}
