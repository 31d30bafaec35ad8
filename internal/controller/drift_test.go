package controller

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	goruntime "runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/gittest"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/simtest"
	"github.com/proxmops/proxmops/internal/testwait"
	"github.com/proxmops/proxmops/internal/vocab"
	"github.com/proxmops/proxmops/pvesim"
)

// driftManifest is a minimal VM with a field /cluster/resources does not
// show (onboot), which the hand changes of the drift runs turn off.
func driftManifest(i int) string {
	return fmt.Sprintf(`apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata:
  name: g-%04d
  node: pve%d
spec:
  vmid: %d
  cores: 1
  memory: 512
  onboot: true
`, i, 1+i%3, 2000+i)
}

// countingRT counts the daemon's requests to Proxmox.
type countingRT struct {
	next      http.RoundTripper
	gets, all atomic.Int64
	kinds     requestKinds
}

func (c *countingRT) RoundTrip(r *http.Request) (*http.Response, error) {
	c.all.Add(1)
	c.kinds.add(r)
	if r.Method == http.MethodGet {
		c.gets.Add(1)
	}
	return c.next.RoundTrip(r)
}

// driftRun is a daemon over n owned guests on a simulator, both on fake
// clocks moved together, one interval at a time.
type driftRun struct {
	t        testing.TB
	e        *env
	sim      *pvesim.Server
	simClock *pvesim.FakeClock
	hand     *pve.Client // a person editing guests through the API
	count    *countingRT
	n        int
	interval time.Duration
	every    time.Duration
	// collections is the number of cluster-wide lists the repository's
	// declared objects make a pass read.
	collections int
}

// newDriftRun builds the fleet (created by an engine of its own, not
// measured) and a daemon with driftCheckInterval every that has made its
// first pass.
func newDriftRun(t testing.TB, n int, every time.Duration) *driftRun {
	return newDriftRunDeclaring(t, n, every, false)
}

// newDriftRunDeclaring is newDriftRun whose repository, with clusterWide,
// also declares one object of every cluster-wide kind (driftClusterWide),
// created by the daemon's first pass.
func newDriftRunDeclaring(t testing.TB, n int, every time.Duration, clusterWide bool) *driftRun {
	start := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	simClock := pvesim.NewFakeClock(start)
	sim := simtest.Start(t, pvesim.Options{Nodes: 3, TokenID: simTokenID, TokenSecret: simTokenSecret, Seed: 1, Clock: simClock})
	hand := simClient(t, sim)

	repo := gittest.New(t)
	files := map[string]string{}
	for i := range n {
		files[fmt.Sprintf("vms/g-%04d.yaml", i)] = driftManifest(i)
		if clusterWide { // the backup job selects the guests by tag
			m := strings.Replace(driftManifest(i), "spec:\n", "  tags: [bench]\nspec:\n", 1)
			if i == 0 { // the HA rule's guest is an HA resource
				m += "  ha: { state: started }\n"
			}
			if i%driftFirewallEvery == 0 {
				m += driftGuestFirewall
			}
			files[fmt.Sprintf("vms/g-%04d.yaml", i)] = m
		}
	}
	declared := n
	if clusterWide {
		maps.Copy(files, driftClusterWide)
		declared += len(driftClusterWide)
	}
	// Proxmox records no owner of a storage: proxmops' store does, so the
	// daemon creates it, after the fleet.
	storage := map[string]string{}
	if clusterWide {
		storage["cluster/storage.yaml"] = files["cluster/storage.yaml"]
		delete(files, "cluster/storage.yaml")
	}
	repo.Commit("fleet", files)
	// The guests' firewall rules name the security group and the alias:
	// those are created with the fleet.
	load := filepath.Join(repo.Dir, "vms")
	if clusterWide {
		load = repo.Dir
	}
	set, err := manifest.LoadPath(load)
	if err != nil {
		t.Fatal(err)
	}
	eng := engine.New(hand, engine.Options{Concurrency: 16, PerNode: 16})
	p, err := eng.Plan(context.Background(), engine.DesiredFromSet(set, nil), "fleet")
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := eng.Apply(context.Background(), p, nil); err != nil || rep.Failed > 0 || rep.Applied != declared-len(storage) {
		t.Fatalf("creating the fleet: %v %+v", err, rep)
	}

	if clusterWide {
		repo.Commit("storage", storage)
	}
	r := &driftRun{t: t, sim: sim, simClock: simClock, hand: hand, n: n, interval: time.Minute, every: every}
	if clusterWide {
		r.collections = driftCollections
	}
	e := newEnv(t, sim, repo, "", func(o *Options) {
		o.Jitter = -1
		o.Config.Reconcile.Interval = r.interval
		o.Config.Reconcile.DriftCheckInterval = every
		o.Config.Reconcile.Concurrency = 16
		o.PerNode, o.QueueLimit = 16, 4*n
		o.Clock = NewFakeClock(start)
		o.PVE = func(c *pve.Config) {
			c.TaskPollMin, c.TaskPollMax = 5*time.Millisecond, 20*time.Millisecond
			c.WrapTransport = func(next http.RoundTripper) http.RoundTripper {
				r.count = &countingRT{next: next}
				return r.count
			}
		}
	})
	e.clock = e.c.opts.Clock.(*FakeClock)
	e.timeout = 5 * time.Minute
	r.e = e
	e.start()
	r.settle(0)
	if l, _ := e.c.Resources(context.Background()); l.Counts[vocab.StatusSynced] != declared {
		var bad []string
		for _, it := range l.Resources {
			if it.Status != vocab.StatusSynced {
				bad = append(bad, fmt.Sprintf("%s/%s %s: %s", it.Kind, it.Name, it.Status, it.Reason))
			}
		}
		t.Fatalf("fleet not in sync after the first pass: %v %v", l.Counts, bad)
	}
	// The guests were created after pvestatd's last report: the first
	// pass saw them "unknown" and the next sees their summaries change,
	// so both read every guest. From the third on, passes are steady.
	r.tick()
	return r
}

// settle waits until the daemon has made a pass since passes and is idle:
// no pass running or asked for, no action queued or running.
func (r *driftRun) settle(passes int64) {
	c := r.e.c
	deadline := time.Now().Add(5 * time.Minute)
	var quiet time.Time
	for {
		n := c.passes.Load()
		c.reqMu.Lock()
		pending := !c.rescanAt.IsZero() || c.req.immediate()
		c.reqMu.Unlock()
		if n > passes && n%2 == 0 && !pending && len(c.dispatcher.Active()) == 0 {
			if quiet.IsZero() {
				quiet = time.Now()
			} else if time.Since(quiet) > 30*time.Millisecond && c.passes.Load() == n {
				return
			}
		} else {
			quiet = time.Time{}
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("the daemon did not settle (passes %d, pending %v, active %v)", n, pending, c.dispatcher.Active())
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// tick moves both clocks one interval on and waits for the pass.
func (r *driftRun) tick() {
	before := r.e.c.passes.Load()
	r.simClock.Advance(r.interval)
	r.e.clock.Advance(r.interval)
	r.settle(before)
}

// now is the daemon's (and the simulator's) time.
func (r *driftRun) now() time.Time { return r.e.clock.Now() }

// driftFigures is what an hour of the daemon cost and how soon it found
// the hand changes.
type driftFigures struct {
	Passes          int
	Requests        []int64            // per interval: every request of the passes in it
	Reads           []int64            // per interval: GET requests
	ByKind          []map[string]int64 // per interval: requests by kind (kindOf)
	Found           []int              // per interval: hand changes found
	Detect          []time.Duration
	CPU             time.Duration
	AllocBytes      uint64
	HeapInUseAfter  uint64
	HandChanges     int
	MaxDetect       time.Duration
	DetectedInBound bool
	// Period is the effective drift-check period (ReadCache.Period).
	Period time.Duration
}

// hour runs the daemon for a simulated hour, turning onboot off by hand on
// perMinute guests (not already changed) before each pass, and then for as
// long as the bound takes so that every change has had its chance to be
// found. A change counts as found when the daemon has put onboot back.
func (r *driftRun) hour(perMinute int) driftFigures {
	var f driftFigures
	type change struct {
		vmid int
		at   time.Time
	}
	var open []change
	changed := map[int]bool{}
	next := 0
	var ru0 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru0)
	var m0 goruntime.MemStats
	goruntime.ReadMemStats(&m0)
	bound := r.period() + r.interval
	end := r.now().Add(time.Hour)
	for r.now().Before(end) || len(open) > 0 {
		inHour := r.now().Before(end)
		if inHour {
			for range perMinute {
				// A spread of guests: a stride through the fleet.
				next = (next + 7919) % r.n
				vmid := 2000 + next
				if changed[vmid] {
					continue
				}
				node := fmt.Sprintf("pve%d", 1+next%3)
				if err := r.hand.QemuSetConfig(context.Background(), node, vmid, pve.NewParams().Set("onboot", "0")); err != nil {
					r.t.Fatal(err)
				}
				changed[vmid] = true
				open = append(open, change{vmid, r.now()})
				f.HandChanges++
			}
		}
		all0, gets0, kinds0 := r.count.all.Load(), r.count.gets.Load(), r.count.kinds.snapshot()
		p0 := r.e.c.passes.Load()
		r.tick()
		if inHour {
			f.Requests = append(f.Requests, r.count.all.Load()-all0)
			f.Reads = append(f.Reads, r.count.gets.Load()-gets0)
			f.ByKind = append(f.ByKind, r.count.kinds.since(kinds0))
			f.Passes += int(r.e.c.passes.Load()-p0) / 2
		}
		kept, found := open[:0], 0
		for _, ch := range open {
			g, _ := r.sim.Guest(ch.vmid)
			if g.Config["onboot"] == "1" {
				found++
				d := r.now().Sub(ch.at)
				f.Detect = append(f.Detect, d)
				f.MaxDetect = max(f.MaxDetect, d)
				delete(changed, ch.vmid)
				continue
			}
			if r.now().Sub(ch.at) > bound+r.interval {
				r.t.Fatalf("hand change on %d at %s not found by %s (bound %s)", ch.vmid, ch.at, r.now(), bound)
			}
			kept = append(kept, ch)
		}
		open = kept
		if inHour {
			f.Found = append(f.Found, found)
		}
	}
	var ru1 syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru1)
	var m1 goruntime.MemStats
	goruntime.ReadMemStats(&m1)
	f.CPU = time.Duration(ru1.Utime.Nano()+ru1.Stime.Nano()) - time.Duration(ru0.Utime.Nano()+ru0.Stime.Nano())
	f.AllocBytes = m1.TotalAlloc - m0.TotalAlloc
	f.HeapInUseAfter = heapInUseNow()
	f.DetectedInBound = f.MaxDetect <= bound
	f.Period = r.period()
	return f
}

// period is the time within which the daemon reads every guest: the
// driftCheckInterval stretched by the mean requests of a guest's read.
func (r *driftRun) period() time.Duration {
	return r.e.c.currentRuntime().reads.Period()
}

func heapInUseNow() uint64 {
	goruntime.GC()
	var m goruntime.MemStats
	goruntime.ReadMemStats(&m)
	return m.HeapInuse
}

func median(xs []int64) int64 {
	s := append([]int64(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

// TestDriftChecksFindEveryHandChangeWithinTheBound runs the daemon with
// the default driftCheckInterval for a simulated hour over 150 owned
// guests and one object of every cluster-wide kind, with two hand changes
// of a field /cluster/resources does not show every minute. A quarter of
// the guests have a firewall of their own, read with their configuration
// (options and rules: three requests a read instead of one), and a pass
// stays within 1 + storages (0) + owned/10 + collections, those firewall
// reads included: each guest is therefore read every driftCheckInterval ×
// (1 + 2 × the share with a firewall), and each change is found (and put
// right) within that period plus one interval on the fake clock.
func TestDriftChecksFindEveryHandChangeWithinTheBound(t *testing.T) {
	const n = 150
	r := newDriftRunDeclaring(t, n, 10*time.Minute, true)
	withFW := (n + driftFirewallEvery - 1) / driftFirewallEvery
	period := r.every * time.Duration(n+2*withFW) / n
	if got := r.period(); got != period {
		t.Errorf("the daemon reads every guest within %s, want %s (10 min × (1 + 2 × %d/%d))", got, period, withFW, n)
	}
	if got := testutil.ToFloat64(r.e.c.m.DriftPeriod.WithLabelValues(r.e.c.Name())); got != period.Seconds() {
		t.Errorf("proxmops_drift_check_period_seconds %v, want %v", got, period.Seconds())
	}
	f := r.hour(2)
	if !f.DetectedInBound || len(f.Detect) != f.HandChanges || f.HandChanges < 100 {
		t.Fatalf("%d of %d hand changes found, the slowest after %s (bound %s)", len(f.Detect), f.HandChanges, f.MaxDetect, f.Period+r.interval)
	}
	// Quiet passes: /cluster/resources, n/10 requests of guest reads
	// (firewall reads included) and each collection's list. A change
	// found costs its fix on top (a re-read, the update, its task and the
	// read after it: readsPerFix), so each interval is measured less what
	// its fixes cost: how many changes an interval finds varies with the
	// machine's speed, the reads of a quiet pass do not. The re-scan after
	// a fix is a pass of its own and lists the collections again: the
	// interval's pass keeps its one read of each.
	const readsPerFix = 8
	budget := int64(1 + n/10 + r.collections)
	quiet := make([]int64, len(f.Reads))
	for i, reads := range f.Reads {
		quiet[i] = reads - readsPerFix*int64(f.Found[i]) - (collectionReads(f.ByKind[i]) - int64(r.collections))
	}
	t.Logf("budget 1 + storages (0) + owned/10 (%d) + collections (%d) = %d; quiet passes %v; median per interval by kind %v", n/10, r.collections, budget, quiet, kindMedians(f.ByKind))
	if m := median(quiet); m > budget || m < 1+n/20 {
		t.Errorf("median GET requests per interval, less the fixes, %d, want within the budget %d (reads %v, changes found %v)", m, budget, f.Reads, f.Found)
	}
	if m := slices.Max(quiet); m > budget+6 {
		t.Errorf("an interval made %d GET requests besides its fixes, want at most the budget %d + 6 (reads %v, changes found %v)", m, budget, f.Reads, f.Found)
	}
	// The collections: each list once a pass (a fix's re-scan is a pass),
	// plus an IP set's entries when its digest changed or at the
	// drift-check cadence, never every pass.
	var entries int64
	for i, byKind := range f.ByKind {
		passes := byKind["resources"] // each pass reads /cluster/resources once
		for _, kind := range driftCollectionKinds {
			if byKind[kind] < 1 || byKind[kind] > passes {
				t.Errorf("interval %d: %d %q in %d pass(es), want one a pass (by kind %v)", i, byKind[kind], kind, passes, byKind)
			}
		}
		entries += byKind["ipset entries read"] + byKind["group rules read"]
	}
	if entries > 2*int64(len(f.ByKind))/5 {
		t.Errorf("the IP set's entries and the security group's rules were read %d times in %d intervals: more often than the drift-check cadence", entries, len(f.ByKind))
	}
	checkGuestFirewallReads(t, f, n)

	// Read in turn, the longest wait is the period; the spread means some
	// changes wait most of it.
	if f.MaxDetect < f.Period/2 {
		t.Errorf("slowest detection %s: the hand changes were found too soon for a spread of reads", f.MaxDetect)
	}
}

// checkGuestFirewallReads: a guest's firewall (options and rules, two
// GETs) is read with its configuration, so over the hour the firewall
// reads follow the configuration reads of the share of guests that have
// one, never every such guest every pass.
func checkGuestFirewallReads(t *testing.T, f driftFigures, n int) {
	t.Helper()
	var fw, guest int64
	for _, byKind := range f.ByKind {
		fw += byKind["guest firewall read"]
		guest += byKind["guest read"]
	}
	withFW := int64((n + driftFirewallEvery - 1) / driftFirewallEvery)
	// Two reads per guest read of a guest with a firewall: about 2/4 of
	// the guest reads, give or take the stride of the hand changes.
	want := 2 * guest / driftFirewallEvery
	if fw < want/2 || fw > 2*want {
		t.Errorf("%d guest firewall reads beside %d guest reads in the hour, want about %d (two for each read of one of the %d guests with a firewall)", fw, guest, want, withFW)
	}
	if every := 2 * withFW * int64(len(f.ByKind)); fw > every/5 {
		t.Errorf("%d guest firewall reads in the hour, want far fewer than %d (every guest with a firewall every pass)", fw, every)
	}
}

// TestDriftCheckIntervalZeroReadsEveryGuestEveryPass is today's
// behaviour: every hand change is found by the next pass.
func TestDriftCheckIntervalZeroReadsEveryGuestEveryPass(t *testing.T) {
	const n = 30
	r := newDriftRun(t, n, 0)
	r.every = 0
	var f driftFigures
	for range 5 {
		gets0 := r.count.gets.Load()
		if err := r.hand.QemuSetConfig(context.Background(), "pve2", 2001, pve.NewParams().Set("onboot", "0")); err != nil {
			t.Fatal(err)
		}
		r.tick()
		f.Reads = append(f.Reads, r.count.gets.Load()-gets0)
		if g, _ := r.sim.Guest(2001); g.Config["onboot"] != "1" {
			t.Fatalf("a hand change was not found by the next pass with driftCheckInterval 0")
		}
	}
	if m := median(f.Reads); m < 1+n {
		t.Errorf("median GET requests per interval %d, want at least 1 + %d (every guest)", m, n)
	}
}

// TestConfigReadAtIsShownAndLiveReadsAgain: the detail says when the
// guest's configuration was read; looking at it live makes the next pass
// read it, so a hand change is found at once.
func TestConfigReadAtIsShownAndLiveReadsAgain(t *testing.T) {
	r := newDriftRun(t, 12, time.Hour)
	key := "VirtualMachine/g-0005"
	before := r.e.c.passes.Load()
	d, err := r.e.c.Resource(context.Background(), "VirtualMachine", "g-0005")
	if err != nil || d.ConfigReadAt == nil || !d.ConfigReadAt.Equal(r.now()) {
		t.Fatalf("configReadAt %v (%v), want the first pass's time %s", d.ConfigReadAt, err, r.now())
	}
	r.settle(before) // looking asked for a pass that reads it again
	if err := r.hand.QemuSetConfig(context.Background(), "pve3", 2005, pve.NewParams().Set("onboot", "0")); err != nil {
		t.Fatal(err)
	}
	r.tick()
	if g, _ := r.sim.Guest(2005); g.Config["onboot"] != "0" {
		t.Fatal("the guest was read although nothing asked for it (driftCheckInterval 1h)")
	}
	before = r.e.c.passes.Load()
	if _, err := r.e.c.Live(context.Background(), "VirtualMachine", "g-0005"); err != nil {
		t.Fatal(err)
	}
	r.settle(before) // Live asks for a pass; the clock has not moved
	if g, _ := r.sim.Guest(2005); g.Config["onboot"] != "1" {
		t.Fatalf("looking at %s did not make the daemon read it", key)
	}
	d, _ = r.e.c.Resource(context.Background(), "VirtualMachine", "g-0005")
	if d.ConfigReadAt == nil || !d.ConfigReadAt.Equal(r.now()) {
		t.Errorf("configReadAt %v after the live read, want %s", d.ConfigReadAt, r.now())
	}
	// A sync of one resource reads it too.
	if err := r.hand.QemuSetConfig(context.Background(), "pve1", 2003, pve.NewParams().Set("onboot", "0")); err != nil {
		t.Fatal(err)
	}
	before = r.e.c.passes.Load()
	if err := r.e.c.SyncOne(context.Background(), "VirtualMachine", "g-0003"); err != nil {
		t.Fatal(err)
	}
	r.settle(before)
	if g, _ := r.sim.Guest(2003); g.Config["onboot"] != "1" {
		t.Error("a sync of one resource did not read it")
	}
	var list api.ResourceList
	list, _ = r.e.c.Resources(context.Background())
	if list.Counts[vocab.StatusSynced] != 12 {
		t.Errorf("counts %v", list.Counts)
	}
}

// TestOpeningADetailReadsAgainAfterAPassThatReadIt: the last pass read
// the guest, then someone changed it by hand and opened its drawer. The
// pass's read predates the change, so the drawer still asks for a new one.
func TestOpeningADetailReadsAgainAfterAPassThatReadIt(t *testing.T) {
	r := newDriftRun(t, 6, time.Hour)
	c := r.e.c
	// The first pass has just read every guest.
	if err := r.hand.QemuSetConfig(context.Background(), "pve3", 2002, pve.NewParams().Set("onboot", "0")); err != nil {
		t.Fatal(err)
	}
	before := c.passes.Load()
	if _, err := c.Resource(context.Background(), "VirtualMachine", "g-0002"); err != nil {
		t.Fatal(err)
	}
	// The daemon's clock stands still: only the detail can ask for a pass.
	if !testwait.Until(20*time.Second, func() bool { return c.passes.Load() != before }) {
		t.Fatal("opening the detail of a guest the last pass read asked for no new read: a change by hand since that read stays hidden")
	}
	r.settle(before)
	if g, _ := r.sim.Guest(2002); g.Config["onboot"] != "1" {
		t.Fatalf("onboot %q after opening the detail, want the declared 1", g.Config["onboot"])
	}
}

// BenchmarkDaemonDriftHour runs the daemon for a simulated hour over 2,000
// owned guests (PROXMOPS_DRIFT_GUESTS for another count) and one object of
// every cluster-wide kind (interval 60s) with two hand changes of a
// config-only field a minute, with the default driftCheckInterval and with
// 0, and reports the requests per pass (the median per interval of each
// kind of request too, beside the budget 1 + storages + owned/10 +
// collections), how long the hand changes took to be found and the
// period within which every guest is read, and the process's CPU and
// allocation per pass (simulator included).
func BenchmarkDaemonDriftHour(b *testing.B) {
	n := 2000
	if v, err := strconv.Atoi(os.Getenv("PROXMOPS_DRIFT_GUESTS")); err == nil && v > 0 {
		n = v
	}
	for _, every := range []time.Duration{10 * time.Minute, 0} {
		b.Run(fmt.Sprintf("driftCheckInterval=%s", every), func(b *testing.B) {
			for b.Loop() {
				r := newDriftRunDeclaring(b, n, every, true)
				heap0 := heapInUseNow()
				f := r.hour(2)
				if !f.DetectedInBound || len(f.Detect) != f.HandChanges {
					b.Fatalf("%d of %d hand changes found, slowest %s", len(f.Detect), f.HandChanges, f.MaxDetect)
				}
				var sum time.Duration
				for _, d := range f.Detect {
					sum += d
				}
				intervals := len(f.Requests)
				b.ReportMetric(float64(median(f.Requests)), "requests/pass")
				b.ReportMetric(float64(median(f.Reads)), "GETs/pass")
				b.ReportMetric(float64(1+n/10+r.collections), "budget/pass")
				for kind, m := range kindMedians(f.ByKind) {
					b.ReportMetric(float64(m), strings.ReplaceAll(kind, " ", "-")+"/pass")
				}
				for i, byKind := range f.ByKind {
					b.Logf("interval %d: %d requests, %d hand changes found, by kind %v", i, f.Requests[i], f.Found[i], byKind)
				}
				var total int64
				for _, x := range f.Requests {
					total += x
				}
				b.ReportMetric(float64(total), "requests/hour")
				b.ReportMetric(float64(f.Passes), "passes/hour")
				b.ReportMetric(float64(f.HandChanges), "hand-changes")
				b.ReportMetric((sum / time.Duration(len(f.Detect))).Seconds(), "mean-detect-s")
				b.ReportMetric(f.MaxDetect.Seconds(), "max-detect-s")
				b.ReportMetric(f.Period.Seconds(), "period-s")
				b.ReportMetric(float64(f.CPU.Milliseconds())/float64(intervals), "cpu-ms/interval")
				b.ReportMetric(float64(f.AllocBytes)/float64(intervals)/(1<<20), "alloc-MiB/interval")
				b.ReportMetric(float64(int64(f.HeapInUseAfter)-int64(heap0))/(1<<20), "heap-growth-MiB")
				b.ReportMetric(float64(heap0)/(1<<20), "heap-MiB")
				r.e.stop()
			}
		})
	}
}
