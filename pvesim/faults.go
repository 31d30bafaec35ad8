package pvesim

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// FaultRates are the per-request faults of one endpoint class.
type FaultRates struct {
	// ErrorRate is the share of requests answered 500 without being processed.
	ErrorRate float64
	// DropRate is the share of requests processed and then left without an
	// answer: the connection is closed, so a client cannot know the outcome.
	DropRate float64
	// Latency is added before each request is handled.
	Latency time.Duration
}

// Faults is what the simulator injects. Rates are between 0 and 1 and
// drawn from a generator seeded with Options.Seed, so a run is repeatable.
type Faults struct {
	FaultRates
	// Classes overrides the rates for an endpoint class: "read" (GET),
	// "write" (other methods) or "auth" (login).
	Classes map[string]FaultRates
	// TaskFailRate is the share of tasks that fail.
	TaskFailRate float64
	// LockTimeoutRate is the share of guest lock attempts that time out.
	LockTimeoutRate float64
	// OfflineNodes do not answer (HTTP 595 "No route to host").
	OfflineNodes []string
}

// ParseFaults reads the --faults syntax:
// "error-rate=0.1,drop-rate=0.05,latency=20ms,task-fail-rate=0.1,lock-timeout-rate=0.05,offline=pve2".
// A key may be prefixed by a class ("write.error-rate=0.2"); "offline" may
// repeat or list nodes separated by ';'.
func ParseFaults(spec string) (Faults, error) {
	var f Faults
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		key, val, ok := strings.Cut(part, "=")
		if !ok {
			return f, fmt.Errorf("fault %q: want key=value", part)
		}
		class := ""
		if c, k, ok := strings.Cut(key, "."); ok {
			class, key = c, k
			switch class {
			case "read", "write", "auth":
			default:
				return f, fmt.Errorf("fault %q: unknown class %q (read, write, auth)", part, class)
			}
		}
		rates := &f.FaultRates
		var classRates FaultRates
		if class != "" {
			if f.Classes == nil {
				f.Classes = map[string]FaultRates{}
			}
			classRates = f.Classes[class]
			rates = &classRates
		}
		rate := func() (float64, error) {
			r, err := strconv.ParseFloat(val, 64)
			if err != nil || r < 0 || r > 1 {
				return 0, fmt.Errorf("fault %q: rate must be a number from 0 to 1", part)
			}
			return r, nil
		}
		var err error
		switch key {
		case "error-rate":
			rates.ErrorRate, err = rate()
		case "drop-rate":
			rates.DropRate, err = rate()
		case "latency":
			rates.Latency, err = time.ParseDuration(val)
			if err != nil || rates.Latency < 0 {
				err = fmt.Errorf("fault %q: latency must be a duration such as 20ms", part)
			}
		case "task-fail-rate":
			if class != "" {
				return f, fmt.Errorf("fault %q: task-fail-rate has no class", part)
			}
			f.TaskFailRate, err = rate()
		case "lock-timeout-rate":
			if class != "" {
				return f, fmt.Errorf("fault %q: lock-timeout-rate has no class", part)
			}
			f.LockTimeoutRate, err = rate()
		case "offline":
			for _, n := range strings.Split(val, ";") {
				if n = strings.TrimSpace(n); n != "" {
					f.OfflineNodes = append(f.OfflineNodes, n)
				}
			}
		default:
			return f, fmt.Errorf("fault %q: unknown key %q (error-rate, drop-rate, latency, task-fail-rate, lock-timeout-rate, offline)", part, key)
		}
		if err != nil {
			return f, err
		}
		if class != "" {
			f.Classes[class] = classRates
		}
	}
	return f, nil
}

// String writes the faults back in --faults syntax.
func (f Faults) String() string {
	var parts []string
	add := func(prefix string, r FaultRates) {
		if r.ErrorRate > 0 {
			parts = append(parts, prefix+"error-rate="+perlNum(r.ErrorRate))
		}
		if r.DropRate > 0 {
			parts = append(parts, prefix+"drop-rate="+perlNum(r.DropRate))
		}
		if r.Latency > 0 {
			parts = append(parts, prefix+"latency="+r.Latency.String())
		}
	}
	add("", f.FaultRates)
	for _, c := range sortedKeys(f.Classes) {
		add(c+".", f.Classes[c])
	}
	if f.TaskFailRate > 0 {
		parts = append(parts, "task-fail-rate="+perlNum(f.TaskFailRate))
	}
	if f.LockTimeoutRate > 0 {
		parts = append(parts, "lock-timeout-rate="+perlNum(f.LockTimeoutRate))
	}
	for _, n := range f.OfflineNodes {
		parts = append(parts, "offline="+n)
	}
	return strings.Join(parts, ",")
}

// FaultKind is a one-shot fault for InjectOnce.
type FaultKind int

// One-shot fault kinds.
const (
	// FaultError answers 500 without processing the request.
	FaultError FaultKind = iota + 1
	// FaultDrop processes the request, then closes the connection unanswered.
	FaultDrop
	// FaultLatency delays the request by OneShot.Latency.
	FaultLatency
)

// OneShot is a fault applied to the next request that matches.
type OneShot struct {
	Kind FaultKind
	// Method to match ("" = any).
	Method string
	// Path below /api2/json, either concrete ("/nodes/pve1/qemu") or a
	// route template ("/nodes/{node}/qemu"); "" matches any path.
	Path string
	// Message for FaultError (default "injected error").
	Message string
	// ParamErrors makes a FaultError Proxmox's refusal of parameters
	// (raise_param_exc): 400 "Parameter verification failed." with these
	// messages keyed by parameter, instead of a 500.
	ParamErrors map[string]string
	// Latency for FaultLatency.
	Latency time.Duration
}

type faultState struct {
	mu       sync.Mutex
	f        Faults
	rng      *rand.Rand
	oneShot  []OneShot
	taskOnce []string // task types whose next task fails
	offline  map[string]bool
}

func (fs *faultState) set(f Faults, seed int64) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.f = f
	if fs.rng == nil {
		fs.rng = rand.New(rand.NewSource(seed ^ 0x5eed))
	}
	fs.offline = map[string]bool{}
	for _, n := range f.OfflineNodes {
		fs.offline[n] = true
	}
}

func (fs *faultState) ratesFor(rt *route.Route) FaultRates {
	r := fs.f.FaultRates
	if rt != nil {
		if c, ok := fs.f.Classes[rt.FaultClass()]; ok {
			r = c
		}
	}
	return r
}

func (fs *faultState) chance(p float64) bool {
	if p <= 0 {
		return false
	}
	return fs.rng.Float64() < p
}

func oneShotMatches(o OneShot, method string, rt *route.Route, rel string) bool {
	if o.Method != "" && o.Method != method {
		return false
	}
	if o.Path == "" {
		return true
	}
	return o.Path == rel || (rt != nil && o.Path == rt.Path)
}

// takeOneShot removes and returns the first matching one-shot fault of a kind.
func (fs *faultState) takeOneShot(kind FaultKind, method string, rt *route.Route, rel string) (OneShot, bool) {
	for i, o := range fs.oneShot {
		if o.Kind == kind && oneShotMatches(o, method, rt, rel) {
			fs.oneShot = append(fs.oneShot[:i], fs.oneShot[i+1:]...)
			return o, true
		}
	}
	return OneShot{}, false
}

func (fs *faultState) latencyFor(rt *route.Route, method, rel string) time.Duration {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	d := fs.ratesFor(rt).Latency
	if o, ok := fs.takeOneShot(FaultLatency, method, rt, rel); ok {
		d += o.Latency
	}
	return d
}

func (fs *faultState) errorFor(rt *route.Route, method, rel string) *route.APIError {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if o, ok := fs.takeOneShot(FaultError, method, rt, rel); ok {
		if len(o.ParamErrors) > 0 {
			return route.ParamError(o.ParamErrors).(*route.APIError)
		}
		msg := o.Message
		if msg == "" {
			msg = "injected error"
		}
		return &route.APIError{Status: 500, Message: msg + "\n"}
	}
	if fs.chance(fs.ratesFor(rt).ErrorRate) {
		return &route.APIError{Status: 500, Message: "injected error\n"}
	}
	return nil
}

func (fs *faultState) dropFor(rt *route.Route, method, rel string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ok := fs.takeOneShot(FaultDrop, method, rt, rel); ok {
		return true
	}
	return fs.chance(fs.ratesFor(rt).DropRate)
}

func (fs *faultState) taskFails(typ string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for i, t := range fs.taskOnce {
		if t == typ {
			fs.taskOnce = append(fs.taskOnce[:i], fs.taskOnce[i+1:]...)
			return true
		}
	}
	return fs.chance(fs.f.TaskFailRate)
}

// FailNextTask makes the next task of a type ("qmtemplate", "qmclone", ...)
// fail as task-fail-rate fails one: at its worker's first step that can
// fail, through the worker's own error path.
func (s *Server) FailNextTask(typ string) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.taskOnce = append(s.faults.taskOnce, typ)
}

func (fs *faultState) lockTimesOut() bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.chance(fs.f.LockTimeoutRate)
}

func (fs *faultState) nodeOffline(node string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.offline[node]
}

// SetFaults replaces the injected faults at run time.
func (s *Server) SetFaults(f Faults) {
	s.faults.set(f, s.opts.Seed)
	s.touch()
}

// Faults returns the faults in effect.
func (s *Server) Faults() Faults {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.f
}

// InjectOnce queues a fault for the next matching request.
func (s *Server) InjectOnce(o OneShot) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.oneShot = append(s.faults.oneShot, o)
}

// SetNodeOnline takes a node offline (false) or back online (true).
func (s *Server) SetNodeOnline(node string, online bool) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	if online {
		delete(s.faults.offline, node)
	} else {
		s.faults.offline[node] = true
	}
	nodes := make([]string, 0, len(s.faults.offline))
	for n := range s.faults.offline {
		nodes = append(nodes, n)
	}
	sort.Strings(nodes)
	s.faults.f.OfflineNodes = nodes
	s.touch()
}
