package pvesim

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// clusterState is everything the simulated cluster knows. It is guarded by
// Server.mu and serialisable as JSON (see /_sim/state and --state).
type clusterState struct {
	Nodes    []*Node          `json:"nodes"`
	Storages []*Storage       `json:"storages"`
	Volumes  []*Volume        `json:"volumes"`
	Guests   map[int]*Guest   `json:"guests"`
	Extra    map[string]any   `json:"extra,omitempty"` // room for later parts (network, SDN)
	Pools    map[string]*Pool `json:"pools,omitempty"` // user.cfg's pools, by poolid
	// Datacenter is datacenter.cfg's tag options as written (see
	// cluster_options.go).
	Datacenter map[string]string  `json:"datacenter,omitempty"`
	vols       map[string]*Volume // key: volumeKey
	extState
	clusterExt
}

// Node is one cluster member.
type Node struct {
	Name     string    `json:"name"`
	ID       int       `json:"id"`
	IP       string    `json:"ip"`
	BootTime time.Time `json:"boottime"`
	MaxCPU   int       `json:"maxcpu"`
	MaxMem   int64     `json:"maxmem"`
	MaxDisk  int64     `json:"maxdisk"`
	nextPID  int
	// clockSkew is how far the node's clock is off (SetNodeClockSkew).
	clockSkew time.Duration
}

// Storage is a storage definition; a non-shared storage exists on every
// node separately, with its own content.
type Storage struct {
	ID      string   `json:"id"`
	Type    string   `json:"type"`
	Content []string `json:"content"`
	Shared  bool     `json:"shared"`
	Path    string   `json:"path,omitempty"`
	Total   int64    `json:"total"`
	// Nodes restricts the storage to some nodes (storage.cfg "nodes");
	// empty means every node.
	Nodes []string `json:"nodes,omitempty"`
	// Disable is storage.cfg "disable".
	Disable bool `json:"disable,omitempty"`
	// Format is storage.cfg "format" (file storages): the default image
	// format; empty means the plugin's default, raw.
	Format string `json:"format,omitempty"`
	// VolumeChain is storage.cfg "snapshot-as-volume-chain" (LVM and the
	// file storages): snapshots are qcow2 backing chains.
	VolumeChain bool `json:"volumeChain,omitempty"`
	// Opts are storage.cfg's other keys as written through the API
	// (storage_config.go); nil for a storage made without them.
	Opts map[string]string `json:"opts,omitempty"`
}

// availableOn is storage_check_node (pve-storage Storage.pm) without the die.
func (st *Storage) availableOn(node string) bool {
	return len(st.Nodes) == 0 || slices.Contains(st.Nodes, node)
}

// enabledOn is storage_check_enabled without the die.
func (st *Storage) enabledOn(node string) bool { return !st.Disable && st.availableOn(node) }

func (st *Storage) allows(content string) bool {
	for _, c := range st.Content {
		if c == content {
			return true
		}
	}
	return false
}

// Volume is one item of storage content.
type Volume struct {
	Node      string `json:"node,omitempty"` // empty on shared storage
	Storage   string `json:"storage"`
	Name      string `json:"name"` // the part after "storage:", e.g. "iso/x.iso" or "vm-100-disk-0"
	Content   string `json:"content"`
	Format    string `json:"format"`
	Size      int64  `json:"size"`
	VMID      int    `json:"vmid,omitempty"`
	Notes     string `json:"notes,omitempty"`
	CTime     int64  `json:"ctime"`
	Parent    string `json:"parent,omitempty"` // base volume of a linked clone
	Protected bool   `json:"protected,omitempty"`
	Used      int64  `json:"used,omitempty"` // bytes on disk when they differ from Size (qcow2)
	// Checksums of downloaded or uploaded files, by algorithm (lower-case hex).
	Checksums map[string]string `json:"checksums,omitempty"`
}

// VolID is "storage:name".
func (v *Volume) VolID() string { return v.Storage + ":" + v.Name }

const gib = int64(1) << 30

func newClusterState(nodes int, now time.Time) *clusterState {
	cs := &clusterState{Guests: map[int]*Guest{}, vols: map[string]*Volume{}, Extra: map[string]any{}}
	for i := 1; i <= nodes; i++ {
		cs.Nodes = append(cs.Nodes, &Node{
			Name: fmt.Sprintf("pve%d", i), ID: i, IP: fmt.Sprintf("192.0.2.%d", 10+i),
			BootTime: now.Add(-72 * time.Hour).Truncate(time.Second), MaxCPU: 16, MaxMem: 64 * gib, MaxDisk: 100 * gib,
			nextPID: 10000 + 1000*i,
		})
	}
	cs.Storages = []*Storage{
		{ID: "local", Type: "dir", Content: []string{"iso", "vztmpl", "import", "snippets", "backup"}, Path: "/var/lib/vz", Total: 100 * gib},
		{ID: "local-lvm", Type: "lvmthin", Content: []string{"images", "rootdir"}, Total: 500 * gib},
		{ID: "nfs-shared", Type: "nfs", Content: []string{"images", "rootdir", "iso", "vztmpl", "import"}, Shared: true, Path: "/mnt/pve/nfs-shared", Total: 2048 * gib, Format: "qcow2"},
	}
	return cs
}

func (cs *clusterState) node(name string) *Node {
	for _, n := range cs.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

func (cs *clusterState) storage(id string) *Storage {
	for _, st := range cs.Storages {
		if st.ID == id {
			return st
		}
	}
	return nil
}

// volumeKey identifies a volume: shared storage has one namespace for the
// cluster, local storage one per node.
func (cs *clusterState) volumeKey(node, storage, name string) string {
	if st := cs.storage(storage); st != nil && st.Shared {
		node = ""
	}
	return node + "|" + storage + ":" + name
}

func (cs *clusterState) volume(node, volid string) *Volume {
	storage, name, ok := strings.Cut(volid, ":")
	if !ok {
		return nil
	}
	return cs.vols[cs.volumeKey(node, storage, name)]
}

func (cs *clusterState) addVolume(v *Volume) {
	if st := cs.storage(v.Storage); st != nil && st.Shared {
		v.Node = ""
	}
	key := cs.volumeKey(v.Node, v.Storage, v.Name)
	if old, ok := cs.vols[key]; ok {
		*old = *v
		return
	}
	cs.vols[key] = v
	cs.Volumes = append(cs.Volumes, v)
}

func (cs *clusterState) removeVolume(node, volid string) {
	storage, name, _ := strings.Cut(volid, ":")
	key := cs.volumeKey(node, storage, name)
	v, ok := cs.vols[key]
	if !ok {
		return
	}
	delete(cs.vols, key)
	for i, x := range cs.Volumes {
		if x == v {
			cs.Volumes = append(cs.Volumes[:i], cs.Volumes[i+1:]...)
			break
		}
	}
}

// volumesOn lists the content of a storage as seen from a node, sorted by volid.
func (cs *clusterState) volumesOn(node, storage string) []*Volume {
	st := cs.storage(storage)
	if st == nil {
		return nil
	}
	var out []*Volume
	for _, v := range cs.Volumes {
		if v.Storage == storage && (st.Shared || v.Node == node) {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reindex rebuilds lookup maps after loading state from JSON.
func (cs *clusterState) reindex() {
	cs.vols = map[string]*Volume{}
	for _, v := range cs.Volumes {
		cs.vols[cs.volumeKey(v.Node, v.Storage, v.Name)] = v
	}
	if cs.Guests == nil {
		cs.Guests = map[int]*Guest{}
	}
	for id, g := range cs.Guests {
		g.VMID = id
		g.ensureMaps()
	}
	for _, p := range cs.Pools {
		if p.VMs == nil {
			p.VMs = map[int]bool{}
		}
		if p.Storage == nil {
			p.Storage = map[string]bool{}
		}
	}
}

// usedBytesAll sums the volumes of every storage in one pass, keyed
// "node|storage" ("|storage" for shared storages).
func (cs *clusterState) usedBytesAll() map[string]int64 {
	out := map[string]int64{}
	for _, v := range cs.Volumes {
		node := v.Node
		if st := cs.storage(v.Storage); st != nil && st.Shared {
			node = ""
		}
		out[node+"|"+v.Storage] += v.Size
	}
	return out
}

// usedBytes sums the volumes of a storage on a node.
func (cs *clusterState) usedBytes(node, storage string) int64 {
	st := cs.storage(storage)
	if st == nil {
		return 0
	}
	var n int64
	for _, v := range cs.Volumes {
		if v.Storage == storage && (st.Shared || v.Node == node) {
			n += v.Size
		}
	}
	return n
}
