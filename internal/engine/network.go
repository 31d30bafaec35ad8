package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// networkReconciler manages host network interfaces (bridges, bonds, VLAN
// interfaces) on their nodes. Changes are staged in interfaces.new and
// applied with PUT /nodes/{node}/network; an interface is owned when its
// comments carry the ownership mark. proxmops never applies or reverts
// changes someone else staged: a node with foreign staged changes is left
// alone until a person applies or reverts them.
type networkReconciler struct{}

func (networkReconciler) scope(pc *planContext, sc *scope) {
	any := false
	for _, s := range specsOf[*NetworkSpec](pc.d, KindNetwork) {
		if s.Sync != vocab.SyncDisabled {
			any = true
			sc.kinds.networks[nodeFor(pc, s.Node)] = true
		}
	}
	if any || pc.e.opts.Prune {
		// Owned interfaces no longer declared can be on any node.
		for _, n := range pc.snap.Nodes {
			sc.kinds.networks[n] = true
		}
	}
}

// netParam is one interface key as the API names it, with the manifest
// path of its field (Change.Path).
type netParam struct {
	key, path, want string
	// same compares the read-back value with want ("" when absent).
	same func(have, want string) bool
}

func sameSet(have, want string) bool {
	return pvefields.NormalList(have) == pvefields.NormalList(want)
}

// networkParams lists the keys a NetworkSpec manages, with their values.
func networkParams(s *NetworkSpec) []netParam {
	var ps []netParam
	add := func(k, v string, same func(string, string) bool) {
		ps = append(ps, netParam{key: k, path: pvefields.KeyPath(KindNetwork, k), want: v, same: same})
	}
	// set adds a key the spec sets: one left empty is not managed.
	set := func(k, v string, same func(string, string) bool) {
		if v != "" {
			add(k, v, same)
		}
	}
	// num is a number the spec sets, "" when it is not positive.
	num := func(n int) string {
		if n > 0 {
			return strconv.Itoa(n)
		}
		return ""
	}
	sameFold := func(a, b string) bool { return strings.EqualFold(a, b) }
	ports := strings.Join(s.Ports, " ")
	switch s.Type {
	case "bridge":
		add("bridge_ports", ports, sameSet)
		add("bridge_vlan_aware", pvefields.FormatBool(s.VLANAware), pvefields.SameBool)
		if s.VLANAware && s.VLANIDs != "" {
			add("bridge_vids", strings.Join(strings.FieldsFunc(s.VLANIDs, func(r rune) bool { return r == ' ' || r == ',' || r == ';' }), " "), sameSet)
		}
	case "bond":
		add("slaves", ports, sameSet)
		set("bond_mode", s.BondMode, nil)
		set("bond_xmit_hash_policy", s.HashPolicy, nil)
		set("bond-primary", s.BondPrimary, nil)
	case "vlan":
		if !strings.Contains(s.Iface, ".") {
			set("vlan-id", num(s.VLANID), nil)
			set("vlan-raw-device", s.VLANRawDevice, nil)
		}
	}
	set("cidr", s.CIDR, nil)
	set("gateway", s.Gateway, nil)
	set("cidr6", s.CIDR6, sameFold)
	set("gateway6", s.Gateway6, sameFold)
	set("mtu", num(s.MTU), nil)
	add("autostart", pvefields.FormatBool(s.Autostart), pvefields.SameBool)
	return ps
}

// netParamsFor renders the parameters of a create or a staged update: the
// whole desired interface (Proxmox recomputes an interface's address
// method from each request, so a kept address is sent again).
func netParamsFor(s *NetworkSpec, existing pve.ConfigValues) *pve.Params {
	p := pve.NewParams().Set("type", s.Type)
	for _, np := range networkParams(s) {
		if np.key == "bridge_ports" || np.key == "slaves" {
			if np.want == "" {
				continue
			}
		}
		p.Set(np.key, np.want)
	}
	for _, k := range []string{"cidr", "gateway", "cidr6", "gateway6"} {
		if _, set := p.Get(k); !set && existing != nil && existing[k] != "" {
			p.Set(k, existing[k])
		}
	}
	p.Set("comments", markOwned(s.Comments))
	return p
}

func (r networkReconciler) plan(pc *planContext) []*Action {
	if pc.kinds.netKeys == nil {
		pc.kinds.netKeys = map[string]string{}
	}
	declared := map[string]bool{}
	for _, s := range specsOf[*NetworkSpec](pc.d, KindNetwork) {
		node := nodeFor(pc, s.Node)
		declared[node+"/"+s.Iface] = true
		pc.kinds.netKeys[node+"/"+s.Iface] = vocab.Key(KindNetwork, s.Name)
	}
	var out []*Action
	for _, s := range specsOf[*NetworkSpec](pc.d, KindNetwork) {
		out = append(out, r.planOne(pc, s))
	}
	return append(out, r.prune(pc, declared)...)
}

// planStaged finishes the action of an interface whose (staged) config
// matches the manifest. GET /nodes/{node}/network lists the staged
// config (interfaces.new), so an interface proxmops staged whose apply
// then failed reads as in sync though it does not run: proxmops applies
// its own staged changes, and never calls an interface that is not up in
// sync while someone else's changes wait.
func (networkReconciler) planStaged(pc *planContext, a *Action, node string, st *pve.NetworkState, have pve.ConfigValues) *Action {
	switch {
	case strings.TrimSpace(st.Changes) == "":
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
	case pc.e.stagedByUs(node, st):
		a.Action, a.Status = vocab.ActionUpdate, vocab.StatusOutOfSync
		a.Reason = fmt.Sprintf("staged by proxmops on %s but not applied (the reload failed): applying it", node)
		a.Changes = []vocab.Change{{Field: "applied", From: "0", To: "1"}}
		a.claim = claim{nodes: []string{node}}
		a.run = func(ctx context.Context, x *execCtx) error { return x.applyNetwork(ctx, node) }
	case have["active"] != "1":
		a.refuse(stagedElsewhere(node, st))
	default:
		a.Status, a.Reason = vocab.StatusSynced, "in sync"
	}
	return a
}

// stagedElsewhere says why a node's network cannot be changed this pass:
// someone staged changes proxmops must neither apply nor revert.
// stageRun ends the plan of an interface's creation or change: refused
// while someone else's change is staged on the node, else its run stages
// it (send: progress says so, failed names it in the error) and applies
// the node's network.
func stageRun(pc *planContext, a *Action, node string, st *pve.NetworkState, progress, failed string, send func(ctx context.Context, x *execCtx) error) *Action {
	if why := stagedElsewhere(node, st); why != "" && !pc.e.stagedByUs(node, st) {
		a.refuse(joinReasons([]string{a.Reason, why}))
		return a
	}
	a.claim = claim{nodes: []string{node}}
	a.run = func(ctx context.Context, x *execCtx) error {
		x.progress(progress, "", -1)
		if err := send(ctx, x); err != nil {
			x.rememberStaged(ctx, node)
			return fmt.Errorf("%s on %s: %w", failed, node, err)
		}
		return x.applyNetwork(ctx, node)
	}
	return a
}

func stagedElsewhere(node string, st *pve.NetworkState) string {
	if st == nil || strings.TrimSpace(st.Changes) == "" {
		return ""
	}
	return fmt.Sprintf("node %s has network changes staged but not applied (/etc/network/interfaces.new); proxmops neither applies nor reverts changes it did not make: apply or revert them in Proxmox (System > Network), then the next pass continues", node)
}

func (r networkReconciler) planOne(pc *planContext, s *NetworkSpec) *Action {
	node := nodeFor(pc, s.Node)
	a := baseAction(s.Meta, node, 0)
	if syncDisabled(a) {
		return a
	}
	if err := pc.snap.kinds.netErr[node]; err != nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("could not read the network of %s: %v", node, err)
		return a
	}
	st := pc.snap.kinds.networks[node]
	if st == nil {
		a.Status, a.Reason = vocab.StatusUnknown, fmt.Sprintf("the network of %s was not read (is the node online?)", node)
		return a
	}
	// Interfaces this one stands on (its ports, a VLAN's parent), when
	// declared on the same node: the manifest resolves them there.
	a.DependsOn = append(a.DependsOn, s.needs(KindNetwork)...)
	have := st.Interface(s.Iface)
	if have != nil {
		owned, comment := ParseOwned(have["comments"])
		a.Owned = owned
		a.Observed = map[string]any{"interface": map[string]string(have), "node": node}
		if !owned {
			return a.conflict(fmt.Sprintf("interface %s exists on %s but proxmops does not own it (no %q in its comments): left untouched", s.Iface, node, OwnerMark))
		}
		if have["type"] != s.Type {
			a.refuse(fmt.Sprintf("interface %s on %s is a %s, the manifest declares a %s: the type of an interface cannot change; delete it (prune) and create it again", s.Iface, node, have["type"], s.Type))
			return a
		}
		var changes []vocab.Change
		for _, np := range networkParams(s) {
			same := np.same
			if same == nil {
				same = func(a, b string) bool { return a == b }
			}
			if !same(have[np.key], np.want) {
				changes = append(changes, vocab.Change{Field: np.key, Path: np.path, From: have[np.key], To: np.want})
			}
		}
		if comment != s.Comments {
			changes = append(changes, vocab.Change{Field: "comments", From: comment, To: s.Comments})
		}
		if len(changes) == 0 {
			return r.planStaged(pc, a, node, st, have)
		}
		a.Action, a.Status, a.Changes = vocab.ActionUpdate, vocab.StatusOutOfSync, changes
		a.Reason = fieldNames(changes, ", ") + " differ from the manifest"
		iface := s.Iface
		return stageRun(pc, a, node, st, "staging the change of "+iface, "staging the change of "+iface, func(ctx context.Context, x *execCtx) error {
			return x.e.client.NetworkSet(ctx, node, iface, netParamsFor(s, have), nil)
		})
	}
	a.Action, a.Status = vocab.ActionCreate, vocab.StatusOutOfSync
	a.Reason = fmt.Sprintf("interface %s does not exist on %s", s.Iface, node)
	a.Changes = []vocab.Change{{Field: "iface", To: s.Iface}, {Field: "type", To: s.Type}}
	for _, np := range networkParams(s) {
		if np.want != "" && !(np.key == "bridge_vlan_aware" && np.want == "0") {
			a.Changes = append(a.Changes, vocab.Change{Field: np.key, Path: np.path, To: np.want})
		}
	}
	if s.Comments != "" {
		a.Changes = append(a.Changes, vocab.Change{Field: "comments", To: s.Comments})
	}
	iface := s.Iface
	return stageRun(pc, a, node, st, "staging "+iface, "staging interface "+iface, func(ctx context.Context, x *execCtx) error {
		return x.e.client.NetworkCreate(ctx, node, netParamsFor(s, nil).Set("iface", iface))
	})
}

// applyNetwork applies a node's staged network configuration (a task).
func (x *execCtx) applyNetwork(ctx context.Context, node string) error {
	err := x.task(ctx, "applying the network configuration of "+node, func() (string, error) {
		return x.e.client.NetworkApply(ctx, node)
	})
	if err == nil {
		x.e.staged.mu.Lock()
		delete(x.e.staged.own, node)
		x.e.staged.mu.Unlock()
	} else {
		x.rememberStaged(ctx, node)
	}
	return err
}

// rememberStaged records what is staged on a node after proxmops' staging
// or apply failed (or its answer was lost). The action ran only because
// nothing else was staged there, so what is staged now is proxmops' own:
// the next pass applies it instead of calling it in sync (the staged
// listing already shows it) or someone else's.
func (x *execCtx) rememberStaged(ctx context.Context, node string) {
	if st, err := x.e.client.NetworkConfig(ctx, node); err == nil && strings.TrimSpace(st.Changes) != "" {
		x.e.staged.mu.Lock()
		x.e.staged.own[node] = diffBody(st.Changes)
		x.e.staged.mu.Unlock()
	}
}

// stagedByUs reports whether a node's staged network changes are exactly
// the ones proxmops staged and failed to apply.
func (e *Engine) stagedByUs(node string, st *pve.NetworkState) bool {
	e.staged.mu.Lock()
	defer e.staged.mu.Unlock()
	own, ok := e.staged.own[node]
	return ok && st != nil && strings.TrimSpace(st.Changes) != "" && own == diffBody(st.Changes)
}

// diffBody is a unified diff without its "---"/"+++" header, whose file
// times say nothing about the change.
func diffBody(d string) string {
	for _, prefix := range []string{"--- ", "+++ "} {
		if strings.HasPrefix(d, prefix) {
			if _, rest, ok := strings.Cut(d, "\n"); ok {
				d = rest
			}
		}
	}
	return d
}

// prune plans the deletion of owned interfaces no manifest declares.
func (networkReconciler) prune(pc *planContext, declared map[string]bool) []*Action {
	var out []*Action
	nodes := slices.Sorted(maps.Keys(pc.snap.kinds.networks))
	for _, node := range nodes {
		st := pc.snap.kinds.networks[node]
		ifaces := append([]pve.ConfigValues(nil), st.Interfaces...)
		sort.Slice(ifaces, func(i, j int) bool { return ifaces[i]["iface"] < ifaces[j]["iface"] })
		for _, ifc := range ifaces {
			name := ifc["iface"]
			owned, _ := ParseOwned(ifc["comments"])
			if !owned || declared[node+"/"+name] {
				continue
			}
			a := orphan(KindNetwork, node+"-"+strings.ReplaceAll(name, ".", "-"), node, 0, map[string]any{"interface": map[string]string(ifc), "node": node})
			out = append(out, a)
			why := ownedWhy(fmt.Sprintf("interface %s is owned by proxmops", name))
			if !decidePrune(pc, a, why, stagedElsewhere(node, st), vocab.Change{Field: "iface", From: name}) {
				continue
			}
			iface := name
			a.claim = claim{nodes: []string{node}}
			a.run = func(ctx context.Context, x *execCtx) error {
				if err := x.e.client.NetworkDelete(ctx, node, iface); err != nil {
					return fmt.Errorf("staging the removal of %s on %s: %w", iface, node, err)
				}
				return x.applyNetwork(ctx, node)
			}
		}
	}
	return out
}

// NetworkSpec is a desired host network interface on one node.
type NetworkSpec struct {
	Meta
	Iface         string
	Type          string // bridge, bond, vlan
	Ports         []string
	VLANAware     bool
	VLANIDs       string
	CIDR, Gateway string
	CIDR6         string
	Gateway6      string
	MTU           int
	Autostart     bool
	Comments      string
	BondMode      string
	HashPolicy    string
	BondPrimary   string
	VLANID        int
	VLANRawDevice string
}

func networkFromManifest(n *manifest.Network, _ SecretReader) *NetworkSpec {
	sp := n.Spec
	return &NetworkSpec{Meta: metaOf(n), Iface: n.InterfaceName(), Type: sp.Type, Ports: sp.Ports,
		VLANAware: sp.VLANAware, VLANIDs: sp.VLANIDs, CIDR: sp.CIDR, Gateway: sp.Gateway, CIDR6: sp.CIDR6,
		Gateway6: sp.Gateway6, MTU: sp.MTU, Autostart: sp.Autostart == nil || *sp.Autostart,
		Comments: strings.TrimSpace(sp.Comments), BondMode: sp.BondMode, HashPolicy: sp.HashPolicy,
		BondPrimary: sp.BondPrimary, VLANID: sp.VLANID, VLANRawDevice: sp.VLANRawDevice}
}
