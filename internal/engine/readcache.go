package engine

import (
	"maps"
	"sync"
	"time"

	"github.com/proxmops/proxmops/internal/provision"
	"github.com/proxmops/proxmops/internal/pve"
)

// ReadCache keeps the full configurations of guests between plans, so a
// daemon need not read every owned guest's configuration on every pass
// (one request each, against a Perl API server). A plan with a cache reads
// /cluster/resources as always and reads a guest's configuration again
// only:
//
//   - when what /cluster/resources shows of it (node, status, name, tags,
//     lock, CPUs, memory, boot disk size, template, HA state) differs from
//     what it showed at the last read;
//   - when asked to (Refresh: proxmops acted on it, a person looked at it);
//   - once per period at the latest, in a slot of its own: the slot is a
//     fixed offset in the period from a hash of the VMID, so the reads are
//     spread evenly over the passes;
//   - and whenever the plan made from the cache would act on the guest, or
//     plans anything at all for a template (Plan then reads them and plans
//     again): no action is ever planned from a configuration not read in
//     the same plan. Nor from a power state the cache (or
//     /cluster/resources, pvestatd's report) gave: the guests the plan
//     acts on have theirs read from status/current (Plan, powerUnconfirmed).
//
// A change by hand that /cluster/resources does not show is therefore
// found within one period plus the time between plans. A cache with a
// period of 0 reads every guest on every plan and only keeps the time of
// each read.
type ReadCache struct {
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	guests map[int]*cachedGuest
	want   map[int]bool // read on the next plan
	all    bool         // read every guest on the next plan
	plans  uint64       // plans begun
	// entries are collection items' nested entries (an IP set's), by
	// "Kind/name" (collection.go).
	entries map[string]*cachedEntries
}

// cachedGuest is one guest's configuration as last read.
type cachedGuest struct {
	sum           guestSummary
	readAt        time.Time
	plan          uint64 // the plan that read it
	current       map[string]string
	effective     map[string]string
	pending       map[string]string
	pendingDelete map[string]bool
	record        provision.Record
	provisioned   bool
	adopted       *AdoptionRecord // shared, never changed
	firewall      *GuestFirewall  // nil when not read with the configuration
}

// guestSummary is what /cluster/resources shows of a guest that follows
// from its configuration or its state (pve-manager PVE/API2/Cluster.pm
// resources: lock and tags from the config, the rest from pvestatd's
// report, PVE/API2Tools.pm extract_vm_stats). Usage figures (cpu, mem,
// disk, uptime, I/O) are left out: they change on every report.
type guestSummary struct {
	node, typ, name, status, tags, lock, haState string
	template                                     bool
	maxCPU                                       float64
	maxMem, maxDisk                              int64
}

func summaryOf(r pve.Resource) guestSummary {
	return guestSummary{node: r.Node, typ: r.Type, name: r.Name, status: r.Status, tags: r.Tags, lock: r.Lock,
		haState: r.HAState, template: r.IsTemplate(), maxCPU: float64(r.MaxCPU), maxMem: int64(r.MaxMem), maxDisk: int64(r.MaxDisk)}
}

// NewReadCache returns a cache that reads each guest at least once per
// every (0: on every plan), with now as its clock (nil: the wall clock).
func NewReadCache(every time.Duration, now func() time.Time) *ReadCache {
	if now == nil {
		now = time.Now
	}
	return &ReadCache{every: max(every, 0), now: now, guests: map[int]*cachedGuest{}, want: map[int]bool{}}
}

// Every is the period within which every guest is read.
func (c *ReadCache) Every() time.Duration { return c.every }

// ReadAt is when the guest's configuration was last read by a plan.
func (c *ReadCache) ReadAt(vmid int) (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g := c.guests[vmid]; g != nil {
		return g.readAt, true
	}
	return time.Time{}, false
}

// Refresh makes the next plan read these guests.
func (c *ReadCache) Refresh(vmids ...int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range vmids {
		if id > 0 {
			c.want[id] = true
		}
	}
}

// RefreshAll makes the next plan read every guest.
func (c *ReadCache) RefreshAll() {
	c.mu.Lock()
	c.all = true
	c.entries = nil
	c.mu.Unlock()
}

// cacheRound is one plan's use of the cache: the refresh requests it
// took, and the guests it must read whatever the cache holds.
type cacheRound struct {
	c     *ReadCache
	now   time.Time
	want  map[int]bool
	all   bool
	force map[int]bool
	plan  uint64
}

// begin takes the pending refresh requests for one plan; requests made
// while it runs are left for the next.
func (c *ReadCache) begin(force map[int]bool) *cacheRound {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(force) == 0 {
		c.plans++ // a plan's first round
	}
	r := &cacheRound{c: c, now: c.now(), want: c.want, all: c.all, force: force, plan: c.plans}
	c.want, c.all = map[int]bool{}, false
	return r
}

// fill sets g's configuration from the cache and reports true when the
// plan may use it instead of reading the guest.
func (r *cacheRound) fill(g *Guest, sum guestSummary) bool {
	if r == nil || r.c.every <= 0 || r.all || r.want[g.VMID] || r.force[g.VMID] {
		return false
	}
	// A guest pvestatd does not report, or one an operation holds, is
	// read: its summary says nothing reliable about its configuration.
	if sum.status == statusUnknown || sum.lock != "" {
		return false
	}
	r.c.mu.Lock()
	cg := r.c.guests[g.VMID]
	r.c.mu.Unlock()
	if cg == nil || cg.sum != sum || r.c.due(g.VMID, cg.readAt, r.now) || g.wantFW && (cg.firewall == nil || g.wantFWRules && !cg.firewall.RulesRead) {
		return false
	}
	// Copies: the plan must not be able to change what the cache keeps.
	g.Current, g.Effective = maps.Clone(cg.current), maps.Clone(cg.effective)
	g.Pending, g.PendingDelete = maps.Clone(cg.pending), maps.Clone(cg.pendingDelete)
	g.ProvisionRecord, g.Provisioned = cg.record, cg.provisioned
	g.AdoptionRecord = cg.adopted
	if g.wantFW {
		g.Firewall = cg.firewall.clone()
	}
	g.Read, g.cached, g.ReadAt = true, true, cg.readAt
	g.nameFromConfig()
	return true
}

// keep records a guest just read.
func (r *cacheRound) keep(g *Guest, sum guestSummary) {
	if r == nil {
		return
	}
	g.ReadAt = r.now
	cg := &cachedGuest{sum: sum, readAt: r.now, plan: r.plan, current: g.Current, effective: g.Effective, pending: g.Pending,
		pendingDelete: g.PendingDelete, record: g.ProvisionRecord, provisioned: g.Provisioned, adopted: g.AdoptionRecord}
	if r.c.every > 0 {
		cg.current, cg.effective = maps.Clone(g.Current), maps.Clone(g.Effective)
		cg.pending, cg.pendingDelete = maps.Clone(g.Pending), maps.Clone(g.PendingDelete)
		cg.firewall = g.Firewall.clone()
	} else {
		// Every plan reads every guest: only the time of the read is kept.
		cg.current, cg.effective, cg.pending, cg.pendingDelete = nil, nil, nil, nil
	}
	r.c.mu.Lock()
	r.c.guests[g.VMID] = cg
	r.c.mu.Unlock()
}

// drop forgets a guest whose read failed or that is gone.
func (r *cacheRound) drop(vmid int) {
	if r == nil {
		return
	}
	r.c.mu.Lock()
	delete(r.c.guests, vmid)
	r.c.mu.Unlock()
}

// end forgets the guests the cluster no longer lists.
func (r *cacheRound) end(listed map[int]*Guest) {
	if r == nil {
		return
	}
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	for id := range r.c.guests {
		if listed[id] == nil {
			delete(r.c.guests, id)
		}
	}
}

// due reports whether a guest read at readAt is to be read again at now:
// whether its slot in the period came since. The slot is the same offset
// in every period, from a hash of the VMID, so consecutive VMIDs land far
// apart and each pass reads about the same number of guests.
func (c *ReadCache) due(vmid int, readAt, now time.Time) bool {
	every := int64(c.every)
	phase := int64(slotHash(uint64(vmid)) % uint64(every))
	period := func(t time.Time) int64 { return floorDiv(t.UnixNano()-phase, every) }
	return period(now) > period(readAt)
}

// slotHash spreads VMIDs (splitmix64's finaliser).
func slotHash(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}
