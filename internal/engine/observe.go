package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
)

// Guest is a VM or container as observed.
type Guest struct {
	// tagCase says whether the cluster's tags are case-sensitive
	// (tag-style); set by the plan, read only when tags differ in case.
	tagCase func() bool

	VMID     int
	Type     string // qemu or lxc
	Node     string
	Name     string
	Status   string // running, stopped, ...
	Lock     string
	Tags     []string
	Template bool
	Owned    bool
	// Adopted: the guest carries AdoptedTag, or this plan adopts it.
	Adopted bool
	// HAState is the guest's HA state from /cluster/resources ("" when it
	// is not an HA resource).
	HAState string
	// Pool is the resource pool the guest is in, from /cluster/resources.
	Pool string
	// Firewall is the guest's firewall, read with its configuration when
	// its manifest declares one (wantFW; its rules too with wantFWRules),
	// else nil.
	Firewall            *GuestFirewall
	wantFW, wantFWRules bool

	// Read says whether the configuration below was read this pass (only
	// for owned guests and declared VMIDs); ReadErr says why a read failed
	// (a node that does not answer, say): only that guest's plan suffers.
	Read    bool
	ReadErr error
	// Current is the running configuration; Effective is what it becomes
	// after pending changes; Pending lists keys whose change waits for a
	// reboot (value "" with PendingDelete for a pending removal).
	Current       map[string]string
	Effective     map[string]string
	Pending       map[string]string
	PendingDelete map[string]bool

	fresh bool // read just before being acted on (after a create or clone)
	// statusRead: Status is the guest's own status/current of this plan,
	// not pvestatd's report in /cluster/resources.
	statusRead bool
	// cached: the configuration above is the one a ReadCache kept from an
	// earlier plan (the guest's summary has not changed since), read at
	// ReadAt; a guest read by this plan has ReadAt now (with a cache).
	cached bool
	ReadAt time.Time

	// ProvisionRecord is proxmops' record line of the description (taken
	// out of Current and Effective), Provisioned whether there is one.
	ProvisionRecord provision.Record
	Provisioned     bool
	// AdoptionRecord is the disk sizes recorded at adoption (the
	// description's proxmops-adopted line, taken out of Current and
	// Effective), nil without one.
	AdoptionRecord *AdoptionRecord
}

// Running reports whether the guest runs.
func (g *Guest) Running() bool { return g.Status == "running" }

// HAManaged reports whether the HA stack manages the guest (an HA resource
// whose state is not "ignored"): Proxmox then turns its power calls into
// requests to the HA stack.
func (g *Guest) HAManaged() bool { return g.HAState != "" && g.HAState != "ignored" }

// HASID is the guest's HA resource id ("vm:100", "ct:200").
func (g *Guest) HASID() string { return pve.HASID(g.Type, g.VMID) }

// StorageRef is a storage as /cluster/resources lists it on one node.
type StorageRef struct {
	Node    string
	Storage string
	Content []string
	Shared  bool
	Type    string
	Status  string
	// pending: a declared storage no node lists yet, shown as this plan
	// will make it, empty (markPendingStorages).
	pending bool
}

// Accepts reports whether the storage takes a content type.
func (s *StorageRef) Accepts(content string) bool { return slices.Contains(s.Content, content) }

// ObserveStats says what observing cost.
type ObserveStats struct {
	Requests    int64 `json:"requests"`
	Guests      int   `json:"guests"`
	ConfigsRead int   `json:"configsRead"`
	// ConfigsCached counts the guests planned from a ReadCache's
	// configuration instead of a read; Rounds is how many observations the
	// plan took (a second one reads what the cache served and the plan
	// would act on).
	ConfigsCached  int           `json:"configsCached,omitempty"`
	Rounds         int           `json:"rounds,omitempty"`
	StoragesListed int           `json:"storagesListed"`
	Duration       time.Duration `json:"duration"`
}

// Observation is everything one pass knows about the cluster (not to be
// confused with a guest's snapshots, guestsnapshot.go).
type Observation struct {
	Nodes    []string
	Guests   map[int]*Guest
	storages map[string]map[string]*StorageRef // node -> storage -> ref
	volumes  map[string][]pve.Volume           // storage key -> content
	listErr  map[string]error
	kinds    kindsObserved // host networks, SDN, appliance catalogues
	Stats    ObserveStats
}

// Guest returns the guest holding vmid, or nil.
func (s *Observation) Guest(vmid int) *Guest { return s.Guests[vmid] }

// TemplateByName finds a template guest by name (VMs only).
func (s *Observation) TemplateByName(name string) *Guest {
	var found *Guest
	for _, g := range s.Guests {
		if g.Type == "qemu" && g.Template && g.Name == name {
			if found == nil || g.VMID < found.VMID {
				found = g
			}
		}
	}
	return found
}

// Storage returns a storage on a node, or nil.
func (s *Observation) Storage(node, storage string) *StorageRef {
	return s.storages[node][storage]
}

// StoragesOn lists a node's storages, sorted by name.
func (s *Observation) StoragesOn(node string) []*StorageRef {
	var out []*StorageRef
	for _, ref := range s.storages[node] {
		out = append(out, ref)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Storage < out[j].Storage })
	return out
}

// storageKey identifies a storage's content: shared storages once for the
// cluster, local ones per node.
func storageKey(ref *StorageRef) string {
	if ref.Shared {
		return ref.Storage
	}
	return ref.Node + "/" + ref.Storage
}

// Volumes returns the listed content of a storage and whether it was
// listed this pass.
func (s *Observation) Volumes(node, storage string) ([]pve.Volume, bool, error) {
	ref := s.Storage(node, storage)
	if ref == nil {
		return nil, false, nil
	}
	k := storageKey(ref)
	if err := s.listErr[k]; err != nil {
		return nil, false, err
	}
	v, ok := s.volumes[k]
	return v, ok, nil
}

// Volume finds a volume by id on a storage.
func (s *Observation) Volume(node, storage, volid string) (pve.Volume, bool) {
	vols, _, _ := s.Volumes(node, storage)
	for _, v := range vols {
		if v.VolID == volid {
			return v, true
		}
	}
	return pve.Volume{}, false
}

// scope is what reconcilers ask to be read besides /cluster/resources.
type scope struct {
	vmids    map[int]bool
	firewall map[int]bool       // guests whose firewall is read with their configuration: true with its rules
	status   map[int]bool       // guests whose power state must be read from status/current
	storages map[[2]string]bool // node, storage
	kinds    kindsScope
	// reads are a kind's own requests, run in parallel with the others.
	reads []func(context.Context) error
}

// read adds a request of a kind's own to the observation (a reconciler
// keeps what it read in its own fields: the registry makes one per plan).
// It runs in parallel with the others; an error it returns fails the
// whole plan, so a read whose failure concerns only the kind keeps the
// error and returns nil.
func (sc *scope) read(job func(context.Context) error) {
	sc.reads = append(sc.reads, job)
}

func newScope() *scope {
	return &scope{vmids: map[int]bool{}, firewall: map[int]bool{}, status: map[int]bool{}, storages: map[[2]string]bool{}, kinds: newKindsScope()}
}

func (sc *scope) guest(vmid int) {
	if vmid > 0 {
		sc.vmids[vmid] = true
	}
}

// confirmPower asks for a guest's configuration and its power state from
// status/current when the power state /cluster/resources reports would
// make the plan act (it differs from the declared one): that figure is
// pvestatd's last report, up to 10 seconds old.
func (sc *scope) confirmPower(g *Guest, want string) {
	if g != nil && want != "" && (want == "running") != g.Running() {
		sc.guest(g.VMID)
		sc.status[g.VMID] = true
	}
}

// guestFirewall asks for a guest's configuration and its firewall's
// options, and its rules too when asked.
func (sc *scope) guestFirewall(vmid int, rules bool) {
	if vmid > 0 {
		sc.vmids[vmid] = true
		sc.firewall[vmid] = sc.firewall[vmid] || rules
	}
}

// declaredGuest asks for a declared guest's configuration, and its
// firewall's as guestFirewall when the manifest declares one (fw).
func (sc *scope) declaredGuest(vmid int, fw *GuestFirewallSpec) {
	sc.guest(vmid)
	if fw != nil {
		sc.guestFirewall(vmid, fw.RulesSet)
	}
}

func (sc *scope) storage(node, storage string) {
	if node != "" && storage != "" {
		sc.storages[[2]string{node, storage}] = true
	}
}

// observeWorkers bounds parallel reads during observation.
const observeWorkers = 8

// observe reads the cluster: resources first, then the configurations and
// storage contents that the reconcilers need.
func (e *Engine) observe(ctx context.Context, cr *cacheRound, need func(*Observation) *scope) (*Observation, error) {
	start := time.Now()
	before := e.client.Stats()
	res, err := e.client.ClusterResources(ctx, "")
	if err != nil {
		return nil, fmt.Errorf("reading cluster resources: %w", err)
	}
	snap, sums := indexResources(res, cr != nil)
	sc := need(snap)

	var mu sync.Mutex
	var vanished []*Guest
	vmids := sc.guestsToRead(snap)
	withStatus := cr.serve(snap, sc, vmids, sums)
	jobs, read := e.guestReadJobs(snap, vmids, withStatus, cr, sums, &mu, &vanished)
	storageJobs, listed := e.storageListJobs(snap, sc, &mu)
	jobs = append(jobs, storageJobs...)
	jobs = append(jobs, e.kindsJobs(snap, sc.kinds, &mu)...)
	jobs = append(jobs, sc.reads...)
	if err := runParallel(ctx, observeWorkers, jobs); err != nil {
		return nil, err
	}
	if err := e.relocate(ctx, snap, vanished, cr); err != nil {
		return nil, err
	}
	cr.end(snap.Guests)
	snap.Stats = ObserveStats{Requests: e.client.Stats().Sub(before).Total(), Guests: len(snap.Guests),
		ConfigsRead: read, ConfigsCached: len(vmids) - read, StoragesListed: listed, Duration: time.Since(start), Rounds: 1}
	return snap, nil
}

// indexResources is the observation of the cluster's resource list: its
// nodes, guests and storages (and each guest's summary for the read cache
// when withSums).
func indexResources(res []pve.Resource, withSums bool) (*Observation, map[int]guestSummary) {
	snap := &Observation{Guests: map[int]*Guest{}, storages: map[string]map[string]*StorageRef{},
		volumes: map[string][]pve.Volume{}, listErr: map[string]error{}}
	var sums map[int]guestSummary
	if withSums {
		sums = map[int]guestSummary{}
	}
	for _, r := range res {
		switch r.Type {
		case "node":
			if r.Node != "" {
				snap.Nodes = append(snap.Nodes, r.Node)
			}
		case "qemu", "lxc":
			tags := r.TagList()
			snap.Guests[int(r.VMID)] = &Guest{VMID: int(r.VMID), Type: r.Type, Node: r.Node, Name: r.Name,
				Status: r.Status, Lock: r.Lock, Tags: tags, Template: r.IsTemplate(), Owned: hasTag(tags, OwnerTag),
				Adopted: hasTag(tags, AdoptedTag), HAState: r.HAState, Pool: r.Pool}
			if sums != nil {
				sums[int(r.VMID)] = summaryOf(r)
			}
		case "storage":
			if snap.storages[r.Node] == nil {
				snap.storages[r.Node] = map[string]*StorageRef{}
			}
			snap.storages[r.Node][r.Storage] = &StorageRef{Node: r.Node, Storage: r.Storage,
				Content: r.ContentTypes(), Shared: r.Shared != 0, Type: r.PluginType, Status: r.Status}
		}
	}
	sort.Strings(snap.Nodes)
	return snap, sums
}

// guestsToRead are the guests in scope that exist, in VMID order.
func (sc *scope) guestsToRead(snap *Observation) []int {
	vmids := make([]int, 0, len(sc.vmids))
	for id := range sc.vmids {
		if g := snap.Guests[id]; g != nil && (g.Type == "qemu" || g.Type == "lxc") {
			vmids = append(vmids, id)
		}
	}
	sort.Ints(vmids)
	return vmids
}

// serve fills from the cache the guests whose turn to be read has not come
// (see turns); a guest whose power state must come from itself is never
// served, and is in withStatus.
func (cr *cacheRound) serve(snap *Observation, sc *scope, vmids []int, sums map[int]guestSummary) (withStatus map[int]bool) {
	withStatus, cost := map[int]bool{}, 0
	var served []servable
	for _, id := range vmids {
		g := snap.Guests[id]
		rules, fw := sc.firewall[id]
		g.wantFW, g.wantFWRules = fw, rules
		cost += readCost(g)
		// pvestatd has not reported the guest yet (or its node went
		// silent): its power state comes from the guest itself.
		if sc.status[id] || g.Status == statusUnknown {
			withStatus[id] = true
		} else if cg := cr.cached(g, sums[id]); cg != nil {
			served = append(served, servable{g: g, cg: cg})
		}
	}
	turns := cr.turns(served, len(vmids), cost)
	for _, s := range served {
		if !turns[s.g.VMID] {
			cr.fill(s.g, s.cg)
		}
	}
	return withStatus
}

// guestReadJobs read the guests the cache did not serve; a guest gone
// from its node meanwhile is added to vanished. read counts them.
func (e *Engine) guestReadJobs(snap *Observation, vmids []int, withStatus map[int]bool, cr *cacheRound, sums map[int]guestSummary,
	mu *sync.Mutex, vanished *[]*Guest) (jobs []func(context.Context) error, read int) {
	for _, id := range vmids {
		g, needStatus := snap.Guests[id], withStatus[id]
		if g.cached { // served by the cache
			continue
		}
		read++
		jobs = append(jobs, func(ctx context.Context) error {
			err := e.readGuestState(ctx, g, needStatus)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				cr.keep(g, sums[g.VMID])
			case pve.IsNotFound(err):
				// Gone from its node between the two reads: deleted, or
				// migrated meanwhile (Proxmox answers both alike).
				*vanished = append(*vanished, g)
			case ctx.Err() != nil:
				return ctx.Err()
			default:
				g.ReadErr = err
				cr.drop(g.VMID)
			}
			return nil
		})
	}
	return jobs, read
}

// storageListJobs list each storage in scope once (a shared storage is
// one listing whatever node names it); listed counts them.
func (e *Engine) storageListJobs(snap *Observation, sc *scope, mu *sync.Mutex) (jobs []func(context.Context) error, listed int) {
	seen := map[string]bool{}
	keys := slices.SortedFunc(maps.Keys(sc.storages), func(a, b [2]string) int {
		return strings.Compare(a[0]+a[1], b[0]+b[1])
	})
	for _, k := range keys {
		ref := snap.Storage(k[0], k[1])
		if ref == nil || ref.pending || seen[storageKey(ref)] {
			continue
		}
		key := storageKey(ref)
		seen[key] = true
		jobs = append(jobs, func(ctx context.Context) error {
			vols, err := e.client.StorageContent(ctx, ref.Node, ref.Storage, "")
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				// A storage that cannot be listed fails only the resources
				// that need it.
				snap.listErr[key] = err
				return nil
			}
			snap.volumes[key] = vols
			return nil
		})
	}
	return jobs, len(seen)
}

// relocate settles the guests whose node said they do not exist: the
// cluster's list tells a guest migrated meanwhile (read again on its new
// node) from one deleted (absent). Taking a moved guest for absent would
// plan a create that Proxmox refuses ("already exists on node").
func (e *Engine) relocate(ctx context.Context, snap *Observation, vanished []*Guest, cr *cacheRound) error {
	if len(vanished) == 0 {
		return nil
	}
	res, err := e.client.ClusterResources(ctx, "vm")
	if err != nil {
		return fmt.Errorf("reading cluster resources: %w", err)
	}
	now := map[int]pve.Resource{}
	for _, r := range res {
		now[int(r.VMID)] = r
	}
	for _, g := range vanished {
		r, ok := now[g.VMID]
		if ok && r.Node != g.Node && r.Type == g.Type {
			g.Node, g.Lock, g.HAState = r.Node, r.Lock, r.HAState
			err := e.readGuestState(ctx, g, true)
			switch {
			case err == nil:
				cr.drop(g.VMID) // read afresh on its new node next time
				continue
			case !pve.IsNotFound(err):
				g.ReadErr = err
				cr.drop(g.VMID)
				continue
			}
		}
		delete(snap.Guests, g.VMID)
		cr.drop(g.VMID)
	}
	return nil
}

// statusUnknown is what /cluster/resources says of a guest pvestatd has
// not reported (PVE/API2Tools.pm extract_vm_stats).
const statusUnknown = "unknown"

// readGuestState reads a guest's configuration and, when asked, its power
// state. Name and template then come from the configuration, not from
// /cluster/resources, where they are pvestatd's last report: missing for a
// new guest, the old ones for up to 10 seconds after a rename or a
// conversion to a template.
func (e *Engine) readGuestState(ctx context.Context, g *Guest, withStatus bool) error {
	read, status := e.readGuest, e.client.QemuStatus
	if g.Type == "lxc" {
		read, status = e.readLxc, e.client.LxcStatus
	}
	if err := read(ctx, g); err != nil {
		return err
	}
	g.splitProvisionRecord()
	g.splitAdoptionRecord()
	g.nameFromConfig()
	if g.wantFW {
		if err := e.readGuestFirewall(ctx, g); err != nil {
			return err
		}
	}
	if !withStatus {
		return nil
	}
	st, err := status(ctx, g.Node, g.VMID)
	if err != nil {
		if pve.IsNotFound(err) {
			return err
		}
		return fmt.Errorf("reading the status of guest %d: %w", g.VMID, err)
	}
	g.Status, g.statusRead = st.Status, true
	return nil
}

// nameFromConfig sets name and template from the configuration read, with
// the name Proxmox's vmstatus gives a guest without one.
func (g *Guest) nameFromConfig() {
	key, def := "name", "VM "+strconv.Itoa(g.VMID)
	if g.Type == "lxc" {
		key, def = "hostname", "CT"+strconv.Itoa(g.VMID)
	}
	g.Name = g.Current[key]
	if g.Name == "" {
		g.Name = def
	}
	g.Template = g.Current["template"] == "1"
}

// readGuest reads a VM's current and pending configuration in one request.
func (e *Engine) readGuest(ctx context.Context, g *Guest) error {
	entries, err := e.client.QemuPending(ctx, g.Node, g.VMID)
	if err != nil {
		var api *pve.APIError
		if errors.As(err, &api) && api.StatusCode == 501 {
			return e.readGuestConfig(ctx, g)
		}
		return fmt.Errorf("reading configuration of VM %d: %w", g.VMID, err)
	}
	g.setPending(entries)
	return nil
}

// readGuestConfig is the fallback for servers without the pending endpoint.
func (e *Engine) readGuestConfig(ctx context.Context, g *Guest) error {
	cfg, err := e.client.QemuConfig(ctx, g.Node, g.VMID, false)
	if err != nil {
		return fmt.Errorf("reading configuration of VM %d: %w", g.VMID, err)
	}
	g.setConfig(cfg)
	return nil
}

// setPending takes a guest's configuration from its pending entries (a VM's
// and a container's are read alike): the current values, the pending ones,
// the pending removals, and what it will be once they apply.
func (g *Guest) setPending(entries []pve.PendingEntry) {
	cur, eff := map[string]string{}, map[string]string{}
	pend, del := map[string]string{}, map[string]bool{}
	for _, en := range entries {
		if en.Value != nil {
			cur[en.Key] = anyString(en.Value)
			eff[en.Key] = cur[en.Key]
		}
		if en.Pending != nil {
			pend[en.Key] = anyString(en.Pending)
			eff[en.Key] = pend[en.Key]
		}
		if en.Delete != 0 {
			del[en.Key] = true
			delete(eff, en.Key)
		}
	}
	g.Current, g.Effective, g.Pending, g.PendingDelete, g.Read = cur, eff, pend, del, true
}

// setConfig takes a guest's configuration from a server without the
// pending endpoint: nothing is pending.
func (g *Guest) setConfig(cfg map[string]string) {
	g.Current, g.Effective = cfg, cfg
	g.Pending, g.PendingDelete, g.Read = map[string]string{}, map[string]bool{}, true
}

func anyString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case float64:
		if x == float64(int64(x)) {
			return fmt.Sprintf("%d", int64(x))
		}
		return fmt.Sprintf("%g", x)
	case bool:
		if x {
			return "1"
		}
		return "0"
	case nil:
		return ""
	default:
		return fmt.Sprint(x)
	}
}

func hasTag(tags []string, t string) bool {
	for _, x := range tags {
		if strings.EqualFold(x, t) {
			return true
		}
	}
	return false
}

// runParallel runs jobs on n workers; the first error cancels the rest.
func runParallel(ctx context.Context, n int, jobs []func(context.Context) error) error {
	if len(jobs) == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := make(chan func(context.Context) error)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i := 0; i < min(n, len(jobs)); i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range ch {
				if err := j(ctx); err != nil {
					once.Do(func() { first = err; cancel() })
				}
			}
		}()
	}
	for _, j := range jobs {
		select {
		case ch <- j:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(ch)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}
