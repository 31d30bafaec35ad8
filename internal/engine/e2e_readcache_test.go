package engine_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// cacheClock is the clock of a ReadCache under test.
type cacheClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *cacheClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *cacheClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// cachedFleet is n owned VMs in sync with their specs (onboot on), on a
// simulator whose /cluster/resources is live, and an engine with a read
// cache of period every.
func cachedFleet(t *testing.T, n int, every time.Duration) (*env, *engine.Engine, *engine.ReadCache, *cacheClock, func(onboot map[int]bool) *engine.Desired) {
	t.Helper()
	e := newEnvWith(t, func(o *pvesim.Options) { o.StatusInterval = -1; o.TaskSpeed = 0 })
	clock := &cacheClock{now: time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)}
	cache := engine.NewReadCache(every, clock.Now)
	eng := e.engine(engine.Options{Reads: cache})
	desired := func(off map[int]bool) *engine.Desired {
		d := &engine.Desired{}
		for i := range n {
			on := !off[1000+i]
			d.Add(&engine.VMSpec{
				Meta: engine.Meta{Kind: engine.KindVirtualMachine, Name: fmt.Sprintf("vm-%03d", i), Node: "pve1", Sync: vocab.SyncAuto},
				VMID: 1000 + i, QemuHW: engine.QemuHW{Cores: 1, Memory: 512}, OnBoot: &on,
			})
		}
		return d
	}
	for i := range n {
		if err := e.sim.AddGuest(pvesim.GuestSpec{VMID: 1000 + i, Node: "pve1", Config: map[string]string{
			"name": fmt.Sprintf("vm-%03d", i), "cores": "1", "memory": "512", "onboot": "1", "tags": engine.OwnerTag}}); err != nil {
			t.Fatal(err)
		}
	}
	return e, eng, cache, clock, desired
}

// withFirewalls is the fleet (onboot on) with the firewall fw(vmid) given
// to each VM, none where it is nil.
func withFirewalls(fleet func(off map[int]bool) *engine.Desired, fw func(vmid int) *engine.GuestFirewallSpec) func() *engine.Desired {
	return func() *engine.Desired {
		d := fleet(nil)
		for _, s := range d.Specs(engine.KindVirtualMachine) {
			vm := s.(*engine.VMSpec)
			vm.Firewall = fw(vm.VMID)
		}
		return d
	}
}

func planOK(t *testing.T, eng *engine.Engine, d *engine.Desired) *engine.Plan {
	t.Helper()
	p, err := eng.Plan(context.Background(), d, "test")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func setConfig(t *testing.T, e *env, vmid int, key, value string) {
	t.Helper()
	if err := e.client.QemuSetConfig(context.Background(), "pve1", vmid, pve.NewParams().Set(key, value)); err != nil {
		t.Fatal(err)
	}
}

func TestReadCacheSpreadsFullReadsOverThePeriod(t *testing.T) {
	const n, every, interval = 100, 10 * time.Minute, time.Minute
	_, eng, cache, clock, desired := cachedFleet(t, n, every)
	d := desired(nil)
	first := planOK(t, eng, d)
	if first.Stats.ConfigsRead != n || first.HasChanges() {
		t.Fatalf("first plan read %d of %d guests (changes %v), want all in sync", first.Stats.ConfigsRead, n, first.HasChanges())
	}
	readAt := map[int]time.Time{}
	total := 0
	for pass := 1; pass <= 10; pass++ {
		clock.Advance(interval)
		p := planOK(t, eng, d)
		// One period over ten passes: a tenth of the guests each, the
		// budget of a pass (one request a guest).
		if got := p.Stats.ConfigsRead; got != n/10 {
			t.Errorf("pass %d read %d configurations, want %d", pass, got, n/10)
		}
		if p.Stats.Requests != int64(1+p.Stats.ConfigsRead) || p.Stats.ConfigsCached != n-p.Stats.ConfigsRead {
			t.Errorf("pass %d: %+v, want 1 + the configurations read", pass, p.Stats)
		}
		total += p.Stats.ConfigsRead
		for id := 1000; id < 1000+n; id++ {
			at, ok := cache.ReadAt(id)
			if !ok {
				t.Fatalf("no read time for %d", id)
			}
			readAt[id] = at
		}
	}
	// Over one period every guest was read exactly once more.
	if total != n {
		t.Errorf("%d reads over one period of 10 passes, want %d (each guest once)", total, n)
	}
	for id, at := range readAt {
		if clock.Now().Sub(at) >= every {
			t.Errorf("guest %d last read at %s, more than a period before %s", id, at, clock.Now())
		}
	}
}

func TestReadCacheFindsHandChangesWithinThePeriodAndSummaryChangesAtOnce(t *testing.T) {
	const n, every, interval = 40, 10 * time.Minute, time.Minute
	e, eng, _, clock, desired := cachedFleet(t, n, every)
	d := desired(nil)
	planOK(t, eng, d)
	// A field /cluster/resources does not show, changed by hand on every
	// guest, and one it shows (memory: maxmem) on one guest.
	changedAt := clock.Now()
	for id := 1000; id < 1000+n; id++ {
		setConfig(t, e, id, "onboot", "0")
	}
	setConfig(t, e, 1007, "memory", "1024")
	found := map[int]time.Duration{}
	for pass := 1; pass <= 11; pass++ {
		clock.Advance(interval)
		p := planOK(t, eng, d)
		for _, a := range p.Actions {
			if a.Action == vocab.ActionNone {
				continue
			}
			if _, ok := found[a.VMID]; !ok {
				found[a.VMID] = clock.Now().Sub(changedAt)
			}
			// Planned from a configuration read in this plan: the change
			// lists what the guest has now.
			want := map[string]bool{"onboot": true}
			if a.VMID == 1007 {
				want["memory"] = true
			}
			for _, ch := range a.Changes {
				if !want[ch.Field] {
					t.Errorf("%s: unexpected change %s", a.Key(), ch)
				}
			}
		}
		if pass == 1 {
			if got := found[1007]; got != interval {
				t.Errorf("the memory change (shown by /cluster/resources) was found after %s, want the next pass", got)
			}
		}
	}
	for id := 1000; id < 1000+n; id++ {
		got, ok := found[id]
		if !ok {
			t.Errorf("hand change on %d never found", id)
		} else if got > every+interval {
			t.Errorf("hand change on %d found after %s, more than driftCheckInterval + interval", id, got)
		}
	}
}

func TestReadCacheNeverPlansAnActionFromACachedConfiguration(t *testing.T) {
	const n = 5
	e, eng, _, clock, desired := cachedFleet(t, n, 10*time.Minute)
	planOK(t, eng, desired(nil))
	// Someone turns onboot off by hand on 1002 just as the repository
	// asks for it: the cache still says on.
	setConfig(t, e, 1002, "onboot", "0")
	clock.Advance(time.Minute)
	off := map[int]bool{1002: true, 1001: true}
	p := planOK(t, eng, desired(off))
	byVMID := map[int]*engine.Action{}
	for _, a := range p.Actions {
		byVMID[a.VMID] = a
	}
	// 1002: the cache would plan "onboot 1 -> 0"; read again, it is in sync.
	if a := byVMID[1002]; a.Action != vocab.ActionNone || a.Status != vocab.StatusSynced {
		t.Errorf("1002 planned %s %v from the cache; the guest already has what the repository asks", a.Action, a.Changes)
	}
	// 1001: the repository changed it; the change comes from a fresh read.
	if a := byVMID[1001]; a.Action != vocab.ActionUpdate || len(a.Changes) != 1 || a.Changes[0].Field != "onboot" {
		t.Errorf("1001: %s %v, want an update of onboot", a.Action, a.Changes)
	}
	if p.Stats.Rounds != 2 {
		t.Errorf("plan took %d rounds, want 2 (the cached guests it acts on read again)", p.Stats.Rounds)
	}
}

func TestReadCacheWithPeriodZeroReadsEveryGuest(t *testing.T) {
	const n = 10
	_, eng, cache, clock, desired := cachedFleet(t, n, 0)
	for range 3 {
		p := planOK(t, eng, desired(nil))
		if p.Stats.ConfigsRead != n || p.Stats.ConfigsCached != 0 {
			t.Fatalf("%+v, want every guest read", p.Stats)
		}
		if at, ok := cache.ReadAt(1004); !ok || !at.Equal(clock.Now()) {
			t.Fatalf("read time %s %v, want %s", at, ok, clock.Now())
		}
		clock.Advance(time.Minute)
	}
}

func TestReadCacheRefreshReadsAskedGuests(t *testing.T) {
	const n = 20
	e, eng, cache, clock, desired := cachedFleet(t, n, time.Hour)
	planOK(t, eng, desired(nil))
	setConfig(t, e, 1011, "onboot", "0")
	clock.Advance(time.Minute)
	cache.Refresh(1011)
	p := planOK(t, eng, desired(nil))
	if a := p.Find(engine.KindVirtualMachine, "vm-011"); a.Action != vocab.ActionUpdate {
		t.Errorf("a guest asked about was not read: %s", a.Action)
	}
	cache.RefreshAll()
	clock.Advance(time.Minute)
	if p := planOK(t, eng, desired(nil)); p.Stats.ConfigsRead != n {
		t.Errorf("RefreshAll read %d of %d", p.Stats.ConfigsRead, n)
	}
}

// A pass's drift reads spend a budget of requests, not of guests: a guest
// whose firewall's options and rules are declared costs three (its
// configuration and the two firewall reads, never split), so with a
// quarter of the guests so declared no pass sends more than 1 + n/10
// requests, each guest is still read in full, firewall and all, and the
// period within which it is stretches to 10 min × (1 + 2/4) = 15 min.
func TestReadCacheSpendsAPassBudgetOfRequestsFirewallReadsIncluded(t *testing.T) {
	const n, every, interval = 100, 10 * time.Minute, time.Minute
	e, eng, cache, clock, fleet := cachedFleet(t, n, every)
	desired := withFirewalls(fleet, func(vmid int) *engine.GuestFirewallSpec {
		if vmid%4 != 0 {
			return nil
		}
		return &engine.GuestFirewallSpec{
			Options:  []engine.GuestFirewallOption{{Key: "enable", Path: "spec.firewall.enabled", Value: "1"}},
			Rules:    []manifest.FirewallRule{{Type: "in", Action: "ACCEPT", Proto: "tcp", Dport: "22"}},
			RulesSet: true,
		}
	})
	if rep, err := eng.Apply(context.Background(), planOK(t, eng, desired()), nil); err != nil || rep.Failed > 0 {
		t.Fatalf("giving a quarter of the guests a firewall: %v %+v", err, rep)
	}
	clock.Advance(time.Second)
	if p := planOK(t, eng, desired()); p.HasChanges() {
		t.Fatalf("not in sync after the apply: %s", planText(p))
	}
	wantPeriod := every * (n + 2*n/4) / n
	if got := cache.Period(); got != wantPeriod {
		t.Errorf("Period %s, want %s (every guest's read: 1 request, 3 with a firewall)", got, wantPeriod)
	}
	const budget = 1 + n/10 // /cluster/resources and a tenth of the guests' requests
	fwReads := func() int64 {
		return e.sim.RequestCountFor("GET", fwOptionsPath) + e.sim.RequestCountFor("GET", "/nodes/{node}/qemu/{vmid}/firewall/rules")
	}
	lastRead := map[int]time.Time{}
	var spent int64
	passes := int(wantPeriod/interval) + 1
	for pass := 1; pass <= 2*passes; pass++ {
		clock.Advance(interval)
		fw0, opts0 := fwReads(), e.sim.RequestCountFor("GET", fwOptionsPath)
		p := planOK(t, eng, desired())
		if p.HasChanges() || p.Stats.Rounds != 1 {
			t.Fatalf("pass %d: %s in %d rounds, want in sync", pass, planText(p), p.Stats.Rounds)
		}
		if p.Stats.Requests > budget {
			t.Errorf("pass %d sent %d requests (%d configurations, %d firewall reads), want at most the budget %d",
				pass, p.Stats.Requests, p.Stats.ConfigsRead, fwReads()-fw0, budget)
		}
		spent += p.Stats.Requests - 1
		// The firewall comes with the configuration: options and rules
		// for each guest with one that the pass read, none for the rest.
		opts := e.sim.RequestCountFor("GET", fwOptionsPath) - opts0
		if fwReads()-fw0 != 2*opts || opts > int64(p.Stats.ConfigsRead) {
			t.Errorf("pass %d: %d firewall reads, %d options, beside %d configurations", pass, fwReads()-fw0, opts, p.Stats.ConfigsRead)
		}
		for id := 1000; id < 1000+n; id++ {
			at, _ := cache.ReadAt(id)
			if prev, ok := lastRead[id]; ok && at.Sub(prev) > wantPeriod+interval {
				t.Errorf("guest %d read at %s and then at %s: more than the period %s + an interval apart", id, prev, at, wantPeriod)
			}
			lastRead[id] = at
		}
	}
	// The budget is spent, not hoarded: 10 requests a pass on average.
	if want := int64(2 * passes * n / 10); spent < want-3 {
		t.Errorf("%d passes spent %d requests on the guests, want about %d", 2*passes, spent, want)
	}
	for id, at := range lastRead {
		if clock.Now().Sub(at) > wantPeriod {
			t.Errorf("guest %d last read at %s, more than the period %s before %s", id, at, wantPeriod, clock.Now())
		}
	}
}

// A pass that comes long after the last (a daemon stopped, a pass that
// waited) spends the budget of two intervals, not one of the whole wait:
// the guests are read in turn over the next passes, not all at once.
func TestReadCacheAfterALongGapSpendsTwoIntervalsBudget(t *testing.T) {
	const n, every, interval = 100, 10 * time.Minute, time.Minute
	_, eng, cache, clock, desired := cachedFleet(t, n, every)
	cache.SetInterval(interval)
	d := desired(nil)
	planOK(t, eng, d)
	clock.Advance(interval)
	if p := planOK(t, eng, d); p.Stats.ConfigsRead != n/10 {
		t.Fatalf("a pass one interval on read %d configurations, want %d", p.Stats.ConfigsRead, n/10)
	}
	clock.Advance(3 * every)
	if p := planOK(t, eng, d); p.Stats.ConfigsRead != 2*n/10 || p.Stats.Requests != int64(1+2*n/10) {
		t.Errorf("a pass after %s read %d configurations in %d requests, want %d (two intervals' budget)", 3*every, p.Stats.ConfigsRead, p.Stats.Requests, 2*n/10)
	}
	clock.Advance(interval)
	if p := planOK(t, eng, d); p.Stats.ConfigsRead != n/10 {
		t.Errorf("the next pass read %d configurations, want %d", p.Stats.ConfigsRead, n/10)
	}
}
