package engine

import (
	"context"
	"fmt"

	"github.com/proxmops/proxmops/internal/pve"
)

// Selection says what ObserveSelection reads: the guests, host networks
// and SDN an export writes manifests for.
type Selection struct {
	Node  string         // only guests and networks of this node ("" all)
	VMIDs func(int) bool // nil: every guest
	// Networks reads the host interfaces of the selected nodes; SDN the
	// zones, vnets and subnets.
	Networks, SDN bool
	// Pools reads the resource pools.
	Pools bool
}

// Wants says whether the selection holds guest g.
func (sel Selection) Wants(g *Guest) bool {
	return (g.Type == "qemu" || g.Type == "lxc") && (sel.Node == "" || g.Node == sel.Node) && (sel.VMIDs == nil || sel.VMIDs(g.VMID))
}

// Selected is the cluster as ObserveSelection read it.
type Selected struct {
	*Observation
	Selection Selection
	// Networks are the host interfaces by node (when asked).
	Networks map[string]*pve.NetworkState
	// Zones, Vnets and Subnets (by vnet) are the SDN configuration as it
	// will be once pending changes are applied (when asked).
	Zones, Vnets []pve.SDNEntry
	Subnets      map[string][]pve.SDNEntry
	// Pools are the resource pools' comments by pool ID (when asked).
	Pools map[string]string
}

// ObserveSelection reads the selected guests' configurations (and, when
// asked, host networks and SDN) with the engine's own observation.
func (e *Engine) ObserveSelection(ctx context.Context, sel Selection) (*Selected, error) {
	snap, err := e.observe(ctx, nil, func(s *Observation) *scope {
		sc := newScope()
		for id, g := range s.Guests {
			if sel.Wants(g) {
				// The manifest's state comes from the guest's own status:
				// /cluster/resources has pvestatd's report, up to 10 s old.
				sc.guestFirewall(id, true)
				sc.status[id] = true
			}
		}
		if sel.Networks {
			for _, n := range s.Nodes {
				if sel.Node == "" || n == sel.Node {
					sc.kinds.networks[n] = true
				}
			}
		}
		sc.kinds.sdn = sel.SDN
		return sc
	})
	if err != nil {
		return nil, err
	}
	out := &Selected{Observation: snap, Selection: sel, Networks: snap.kinds.networks, Zones: snap.kinds.zones,
		Vnets: snap.kinds.vnets, Subnets: map[string][]pve.SDNEntry{}}
	if sel.Pools {
		var list []struct {
			PoolID  string `json:"poolid"`
			Comment string `json:"comment"`
		}
		if err := e.client.Get(ctx, "pools", nil, &list); err != nil {
			return nil, fmt.Errorf("reading the pools: %w", err)
		}
		out.Pools = map[string]string{}
		for _, p := range list {
			out.Pools[p.PoolID] = p.Comment
		}
	}
	if sel.SDN {
		if snap.kinds.sdnErr != nil {
			return nil, snap.kinds.sdnErr
		}
		for _, v := range snap.kinds.vnets {
			subs, err := e.client.SDNPending(ctx, "vnets/"+pve.PathEscape(v.ID)+"/subnets")
			if err != nil {
				return nil, fmt.Errorf("reading the subnets of vnet %s: %w", v.ID, err)
			}
			out.Subnets[v.ID] = subs
		}
	}
	return out, nil
}
