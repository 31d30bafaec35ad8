package engine

import (
	"context"
	"fmt"
	"strings"
)

// Guests that HA, a migration or PVE's load balancing moved to another
// node than their manifest's metadata.node: proxmops finds them by VMID,
// acts on them where they are, and says so.

// placeOn makes the action act on g where it is: its node and VMID,
// and, when that is not the node the manifest names, ManifestNode. A
// guest that HA or a migration moved is neither created again on the
// declared node nor moved back (metadata.node places a guest only when
// proxmops creates it).
func (a *Action) placeOn(g *Guest) {
	a.Node, a.VMID = g.Node, g.VMID
	if a.declaredNode != "" && g.Node != a.declaredNode {
		a.ManifestNode = a.declaredNode
	}
}

// MovedNote is what the plan, the status and the history say of a guest
// on node whose manifest names manifestNode ("" when there is nothing to
// say).
func MovedNote(node, manifestNode string, running bool) string {
	if manifestNode == "" || node == "" || node == manifestNode {
		return ""
	}
	where := "on "
	if running {
		where = "running on "
	}
	return fmt.Sprintf("%s%s; the manifest says %s: moved by HA or a migration, left where it is", where, node, manifestNode)
}

// movedAway explains a call that failed because the guest left the node
// the plan found it on while the action ran (a migration started or ended
// in between): its config is gone from that node, or locked by the
// migration. It says where the guest is now ("" when that is not why).
func (e *Engine) movedAway(ctx context.Context, a *Action, err error) string {
	if a.VMID <= 0 || a.Node == "" || err == nil {
		return ""
	}
	msg := err.Error()
	if strings.Contains(msg, " is locked (migrate)") {
		return fmt.Sprintf("VMID %d is being migrated from %s (by HA or a person): planned again once it has moved", a.VMID, a.Node)
	}
	if !strings.Contains(msg, fmt.Sprintf("Configuration file 'nodes/%s/", a.Node)) {
		return ""
	}
	res, lerr := e.client.ClusterResources(ctx, "vm")
	if lerr != nil {
		return ""
	}
	for _, r := range res {
		if int(r.VMID) == a.VMID && r.Node != a.Node {
			return fmt.Sprintf("VMID %d is now on %s: moved by HA or a migration while proxmops acted on it on %s; planned again where it is", a.VMID, r.Node, a.Node)
		}
	}
	return ""
}
