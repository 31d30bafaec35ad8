package check

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/pve"
)

// storageKey is one storage as one node sees it.
type storageKey struct{ node, storage string }

// storages reports each storage the manifests use on each node: that it
// is there and enabled, takes the content types, and has room for the
// disks of the guests that do not exist yet.
func (c *clusterCheck) storages(ctx context.Context) {
	if len(c.refs.Storages) == 0 {
		return
	}
	existing := map[int]bool{}
	if guests, err := c.client.ClusterResources(ctx, "vm"); err == nil {
		for _, g := range guests {
			existing[int(g.VMID)] = true
		}
	}
	lists := map[string][]pve.StorageInfo{}
	listErr := map[string]error{}
	var order []storageKey
	uses := map[storageKey][]engine.StorageUse{}
	for _, u := range c.refs.Storages {
		k := storageKey{u.Node, u.Storage}
		if _, ok := uses[k]; !ok {
			order = append(order, k)
		}
		uses[k] = append(uses[k], u)
	}
	for _, k := range order {
		if online, known := c.online[k.node]; known && !online || !known && c.online != nil {
			continue // the node's line says it
		}
		if _, ok := lists[k.node]; !ok && listErr[k.node] == nil {
			lists[k.node], listErr[k.node] = c.client.NodeStorages(ctx, k.node, "")
		}
		name := "storage " + k.storage + " on " + k.node
		if err := listErr[k.node]; err != nil {
			c.r.fail(name, "GET /nodes/"+k.node+"/storage: "+err.Error(), fixForError(err, c.o))
			continue
		}
		c.storage(name, k, lists[k.node], uses[k], existing)
	}
}

func (c *clusterCheck) storage(name string, k storageKey, list []pve.StorageInfo, uses []engine.StorageUse, existing map[int]bool) {
	var st *pve.StorageInfo
	for i := range list {
		if list[i].Storage == k.storage {
			st = &list[i]
		}
	}
	if st == nil {
		c.r.fail(name, "node "+k.node+" has no storage "+k.storage+" (needed by "+uses[0].Why+")",
			"add "+k.node+" to the storage's nodes (Datacenter → Storage), or name a storage the node has")
		return
	}
	if st.Enabled == 0 || st.Active == 0 {
		state := "disabled"
		if st.Enabled != 0 {
			state = "not active"
		}
		c.r.fail(name, "storage "+k.storage+" is "+state+" on "+k.node+" (needed by "+uses[0].Why+")",
			"enable it (pvesm set "+k.storage+" --disable 0) and check that its backing device or share is there")
		return
	}
	content := map[string]bool{}
	for _, t := range st.ContentTypes() {
		content[t] = true
	}
	var lacking []string
	var whys []string
	var planned int64
	for _, u := range uses {
		if !content[u.Content] && !contains(lacking, u.Content) {
			lacking = append(lacking, u.Content)
			whys = append(whys, u.Why)
		}
		if u.VMID == 0 || !existing[u.VMID] {
			planned += u.Bytes
		}
	}
	if len(lacking) > 0 {
		c.r.fail(name, fmt.Sprintf("storage %s takes %s, not %s (needed by %s)", k.storage, st.Content, strings.Join(lacking, ", "), strings.Join(whys, ", ")),
			fmt.Sprintf("pvesm set %s --content %s,%s, or name a storage that takes %s", k.storage, st.Content, strings.Join(lacking, ","), strings.Join(lacking, ", ")))
		return
	}
	shared := "local to the node"
	if st.Shared != 0 {
		shared = "shared"
	}
	msg := fmt.Sprintf("%s storage, %s; takes %s; %s free", st.Type, shared, st.Content, gib(int64(st.Avail)))
	if planned > 0 {
		msg += fmt.Sprintf(", %s for the guests still to create", gib(planned))
	}
	if planned > int64(st.Avail) {
		c.r.fail(name, msg+": not enough room", "free space on "+k.storage+", or put the new disks on another storage")
		return
	}
	c.r.ok(name, msg)
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// bridges reports the bridges guests attach to that the manifests do not
// declare: each must be a bridge on its node or an SDN VNet.
func (c *clusterCheck) bridges(ctx context.Context) {
	if len(c.refs.Bridges) == 0 {
		return
	}
	var vnets map[string]bool
	ifaces := map[string]map[string]string{} // node → iface → type
	seen := map[string]bool{}
	for _, b := range c.refs.Bridges {
		if seen[b.Node+" "+b.Bridge] {
			continue
		}
		seen[b.Node+" "+b.Bridge] = true
		if online, known := c.online[b.Node]; !online || !known {
			continue
		}
		name := "bridge " + b.Bridge + " on " + b.Node
		if _, ok := ifaces[b.Node]; !ok {
			list, err := c.client.NetworkList(ctx, b.Node)
			if err != nil {
				c.r.fail(name, "GET /nodes/"+b.Node+"/network: "+err.Error(), fixForError(err, c.o))
				ifaces[b.Node] = nil
				continue
			}
			ifaces[b.Node] = map[string]string{}
			for _, i := range list {
				ifaces[b.Node][i.Iface] = i.Type
			}
		}
		if t := ifaces[b.Node][b.Bridge]; t == "bridge" || t == "OVSBridge" {
			c.r.ok(name, "a "+t+" on the node ("+b.Why+")")
			continue
		}
		if vnets == nil {
			vnets = map[string]bool{}
			if list, err := c.client.SDNVnets(ctx); err == nil {
				for _, v := range list {
					vnets[v.ID] = true
				}
			}
		}
		if vnets[b.Bridge] {
			c.r.ok(name, "an SDN VNet ("+b.Why+")")
			continue
		}
		c.r.fail(name, "node "+b.Node+" has no bridge or VNet "+b.Bridge+" (needed by "+b.Why+"); the token sees bridges it has SDN.Audit or SDN.Use on",
			"create it (a Network or SdnVnet manifest, or the node's network settings), grant SDN.Use on /sdn/zones/localnetwork/"+b.Bridge+", or name an existing bridge")
	}
}

// sdn reports the SDN zones the declared VNets live in but no manifest
// declares.
func (c *clusterCheck) sdn(ctx context.Context) {
	if len(c.refs.Zones) == 0 {
		return
	}
	zones, err := c.client.SDNZones(ctx)
	if err != nil {
		c.r.fail("cluster: sdn", "GET /cluster/sdn/zones: "+err.Error(), "install and enable SDN (Proxmox VE 8 has it), and grant SDN.Audit on /sdn")
		return
	}
	have := map[string]bool{}
	for _, z := range zones {
		have[z.ID] = true
	}
	for _, z := range slices.Sorted(maps.Keys(c.refs.Zones)) {
		if have[z] {
			c.r.ok("sdn zone "+z, "exists ("+c.refs.Zones[z]+" lives in it)")
		} else {
			c.r.fail("sdn zone "+z, "no SDN zone "+z+" (needed by "+c.refs.Zones[z]+")", "declare it in an SdnZone manifest or create it under Datacenter → SDN → Zones")
		}
	}
}
