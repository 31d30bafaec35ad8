package export

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// HA: an exported guest under HA gets spec.ha from its HA resource (GET
// /cluster/ha/resources, one request), with the keys Proxmox holds beyond
// its defaults; an HA rule is written when every guest it names is
// exported too (its manifest names them by their manifest names).

// exportGuestHA sets spec.ha on the exported guests that are HA
// resources. The HA stack enforces the requested state, so a guest whose
// power disagrees with it (a transition) is written with the power the
// HA stack brings it to.
func exportGuestHA(ctx context.Context, client *pve.Client, exported []Exported) error {
	var list []map[string]any
	if err := client.Get(ctx, "cluster/ha/resources", nil, &list); err != nil {
		return fmt.Errorf("listing the HA resources: %w", err)
	}
	res := map[string]map[string]any{}
	for _, r := range list {
		if sid, _ := r["sid"].(string); sid != "" {
			res[sid] = r
		}
	}
	for i := range exported {
		ex := &exported[i]
		var sid string
		var ha **manifest.GuestHA
		var state *manifest.PowerState
		switch r := ex.Resource.(type) {
		case *manifest.VirtualMachine:
			sid, ha, state = pve.HASID("qemu", r.Spec.VMID), &r.Spec.HA, &r.Spec.State
		case *manifest.Container:
			sid, ha, state = pve.HASID("lxc", r.Spec.VMID), &r.Spec.HA, &r.Spec.State
		default:
			continue
		}
		r := res[sid]
		if r == nil {
			continue
		}
		*ha = guestHAOf(r)
		running := *state == "" || *state == manifest.StateRunning
		switch st := (*ha).WantedState(); {
		case st == manifest.HAStarted && !running:
			*state = manifest.StateRunning
			ex.Notes = append(ex.Notes, "the guest is stopped but its HA state is started: the HA stack starts it, so spec.state is running")
		case (st == manifest.HAStopped || st == manifest.HADisabled) && running:
			*state = manifest.StateStopped
			ex.Notes = append(ex.Notes, "the guest runs but its HA state is "+st+": the HA stack stops it, so spec.state is stopped")
		}
	}
	return nil
}

// guestHAOf is spec.ha for a listed HA resource: only what differs from
// Proxmox's defaults.
func guestHAOf(r map[string]any) *manifest.GuestHA {
	s := func(k string) string {
		switch v := r[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatInt(int64(v), 10)
		}
		return ""
	}
	h := &manifest.GuestHA{Comment: s("comment")}
	if st := s("state"); st != "" && st != "started" && st != "enabled" {
		h.State = st
	}
	for _, f := range []struct {
		key string
		to  **int
	}{{"max_restart", &h.MaxRestart}, {"max_relocate", &h.MaxRelocate}} {
		if n, err := strconv.Atoi(s(f.key)); err == nil && n != 1 {
			*f.to = &n
		}
	}
	if s("failback") == "0" {
		h.Failback = boolP(false)
	}
	return h
}

// exportHARule is the manifest of one listed rule, or why none is
// written: guestNames maps the VMIDs of the guests this export writes to
// their names.
func exportHARule(it engine.CollectionItem, guestNames map[int]string) (*manifest.HARule, string) {
	v := it.Values
	s := manifest.HARuleSpec{Type: v["type"], Comment: it.Comment, Affinity: v["affinity"], Strict: pvefields.ParseBool(v["strict"])}
	for _, sid := range strings.Split(v["resources"], ",") {
		_, id, _ := strings.Cut(sid, ":")
		vmid, _ := strconv.Atoi(id)
		name, ok := guestNames[vmid]
		if !ok {
			return nil, fmt.Sprintf("names %s, which this export does not write: export its guests with it (--kind harule,vm,ct)", sid)
		}
		s.Guests = append(s.Guests, name)
	}
	if pvefields.ParseBool(v["disable"]) {
		s.Enabled = boolP(false)
	}
	for _, n := range strings.Split(v["nodes"], ",") {
		if n == "" {
			continue
		}
		node, prio, _ := strings.Cut(n, ":")
		p, _ := strconv.Atoi(prio)
		s.Nodes = append(s.Nodes, manifest.HARuleNode{Node: node, Priority: p})
	}
	return &manifest.HARule{Spec: s}, ""
}
