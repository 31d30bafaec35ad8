package engine

import (
	"cmp"
	"maps"
	"math"
	"slices"
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
//   - when its turn came: each plan has a budget of requests for these
//     drift reads, the guests in scope × the time since the last plan /
//     the period (a tenth of them at a 60 s interval and a 10 min
//     period), and spends it on the guests read longest ago, each at what
//     its full read costs (readCost: its firewall's options and rules
//     come with its configuration). With one request per guest each is
//     read once per period; with guests whose read costs more, once per
//     Period, the period stretched by the mean cost, and a pass never
//     spends more than its budget;
//   - and whenever the plan made from the cache would act on the guest, or
//     plans anything at all for a template (Plan then reads them and plans
//     again): no action is ever planned from a configuration not read in
//     the same plan. Nor from a power state the cache (or
//     /cluster/resources, pvestatd's report) gave: the guests the plan
//     acts on have theirs read from status/current (Plan, powerUnconfirmed).
//
// A change by hand that /cluster/resources does not show is therefore
// found within one Period plus the time between plans. The reads of the
// first three reasons are the cost of a change and spend nothing of the
// budget. A cache with a period of 0 reads every guest on every plan and
// only keeps the time of each read.
type ReadCache struct {
	every time.Duration
	now   func() time.Time

	mu     sync.Mutex
	guests map[int]*cachedGuest
	want   map[int]bool // read on the next plan
	all    bool         // read every guest on the next plan
	plans  uint64       // plans begun
	// credit is the requests the drift reads may still spend, carried
	// from one plan to the next (a fraction of one, or what is saved up
	// for a read dearer than a plan's budget), granted for the time since
	// creditAt, at most maxGap of it.
	credit   float64
	creditAt time.Time
	maxGap   time.Duration
	// period is Every stretched by the mean cost of a guest's read, as the
	// last plan found it.
	period time.Duration
	// entries are collection items' nested entries (an IP set's), by
	// "Kind/name" (collection.go).
	entries map[string]*cachedEntries
	marks   entryMarks
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

// NewReadCache returns a cache whose plans spend on drift reads one
// request per guest in scope per every (0: every plan reads every guest),
// with now as its clock (nil: the wall clock).
func NewReadCache(every time.Duration, now func() time.Time) *ReadCache {
	if now == nil {
		now = time.Now
	}
	every = max(every, 0)
	return &ReadCache{every: every, now: now, guests: map[int]*cachedGuest{}, want: map[int]bool{}, maxGap: every, period: every}
}

// Every is the configured period: the budget of a plan's drift reads is
// one request per guest per Every.
func (c *ReadCache) Every() time.Duration { return c.every }

// Period is the time within which every guest is read, as the last plan
// found it: Every × the mean requests of a guest's full read (1, 3 for a
// guest whose firewall's options and rules are declared), e.g. 15 min for
// a 10 min Every with a quarter of the guests with such a firewall.
func (c *ReadCache) Period() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.period
}

// SetInterval tells the cache the time between a daemon's passes: a plan
// that comes later than two of them (a pass that waited, a daemon that
// was stopped) is granted the budget of two, not a burst of reads.
func (c *ReadCache) SetInterval(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d > 0 {
		c.maxGap = 2 * d
	}
}

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
	// elapsed is the time since the last plan's round, which the drift
	// reads' budget pays for.
	elapsed time.Duration
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
	if !c.creditAt.IsZero() {
		r.elapsed = min(max(r.now.Sub(c.creditAt), 0), c.maxGap)
	}
	c.creditAt = r.now
	return r
}

// cached returns the configuration the cache keeps of g when the plan may
// use it instead of reading the guest (unless its turn for a drift read
// came: turns), else nil.
func (r *cacheRound) cached(g *Guest, sum guestSummary) *cachedGuest {
	if r == nil || r.c.every <= 0 || r.all || r.want[g.VMID] || r.force[g.VMID] {
		return nil
	}
	// A guest pvestatd does not report, or one an operation holds, is
	// read: its summary says nothing reliable about its configuration.
	if sum.status == statusUnknown || sum.lock != "" {
		return nil
	}
	r.c.mu.Lock()
	cg := r.c.guests[g.VMID]
	r.c.mu.Unlock()
	if cg == nil || cg.sum != sum || g.wantFW && (cg.firewall == nil || g.wantFWRules && !cg.firewall.RulesRead) {
		return nil
	}
	return cg
}

// fill sets g's configuration from what the cache kept.
func (r *cacheRound) fill(g *Guest, cg *cachedGuest) {
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
}

// readCost is the requests of a guest's full read: its configuration
// (…/pending), and with its firewall declared the options and, when the
// rules are declared, the rules: pve-firewall serves them apart
// (API2/Firewall/VM.pm get_options, Rules.pm get_rules) and has no request
// that gives both.
func readCost(g *Guest) int {
	n := 1
	if g.wantFW {
		n++
		if g.wantFWRules {
			n++
		}
	}
	return n
}

// servable is a guest the cache could serve, and what it keeps of it.
type servable struct {
	g  *Guest
	cg *cachedGuest
}

// turns picks, among the guests the cache could serve, those whose drift
// read comes in this plan: the ones read longest ago first (ties in a
// fixed order from a hash of the VMID), as many as the plan's budget pays
// for at their readCost. The budget is inScope requests per period (each
// guest in scope once per period at one request) for the time since the
// last plan, rounded down: its fraction is kept for the next plan. A guest
// whose read costs more than what is left waits for the next plan, where
// it is first in line; while the budget is below the read of the guest
// first in line (fewer guests in scope than 3 × period / interval), it is
// saved up until it pays for that read. cost is the requests of a full
// read of every guest in scope, whose mean stretches the period (Period).
func (r *cacheRound) turns(cands []servable, inScope, cost int) map[int]bool {
	if r == nil || r.c.every <= 0 || inScope == 0 {
		return nil
	}
	slices.SortFunc(cands, func(a, b servable) int {
		if c := a.cg.readAt.Compare(b.cg.readAt); c != 0 {
			return c
		}
		return cmp.Compare(slotHash(uint64(a.g.VMID)), slotHash(uint64(b.g.VMID)))
	})
	r.c.mu.Lock()
	defer r.c.mu.Unlock()
	r.c.period = time.Duration(float64(r.c.every) * float64(cost) / float64(inScope))
	credit := r.c.credit + float64(inScope)*float64(r.elapsed)/float64(r.c.every)
	whole := math.Floor(credit + creditSlack)
	budget, waiting := int(whole), false
	out := map[int]bool{}
	for i, s := range cands {
		// A guest read in this plan (a later round) or at this instant is
		// not due a drift read.
		if !s.cg.readAt.Before(r.now) {
			break
		}
		c := readCost(s.g)
		if c > budget && i == 0 {
			// Saved up for the read first in line, so no cheaper read
			// can keep it waiting.
			r.c.credit = credit
			return out
		}
		if c > budget {
			waiting = true
			continue
		}
		budget -= c
		out[s.g.VMID] = true
	}
	r.c.credit = 0 // a surplus with no one left in line is not banked
	if waiting {
		r.c.credit = max(credit-whole, 0)
	}
	return out
}

// creditSlack absorbs the rounding of the budget's float arithmetic.
const creditSlack = 1e-9

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

// slotHash spreads VMIDs (splitmix64's finaliser).
func slotHash(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}
