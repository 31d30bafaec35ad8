package pvesim

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Task is one worker task, as /nodes/{node}/tasks shows it.
type Task struct {
	UPID       string    `json:"upid"`
	Node       string    `json:"node"`
	PID        int       `json:"pid"`
	PStart     int64     `json:"pstart"`
	StartTime  time.Time `json:"starttime"`
	Type       string    `json:"type"`
	ID         string    `json:"id"`
	User       string    `json:"user"`
	Running    bool      `json:"running"`
	ExitStatus string    `json:"exitstatus,omitempty"`
	EndTime    time.Time `json:"endtime,omitempty"`
	Log        []string  `json:"log"`
	// Target is the new guest of a clone (the task's ID is the source).
	Target    int `json:"target,omitempty"`
	done      chan struct{}
	heldLocks []heldLock
	// onDone runs when the task has ended, with its error (the HA manager
	// learns its LRM's results so, injected failures included).
	onDone func(error)
}

type heldLock struct {
	vmid   int
	shared bool
}

type taskTable struct {
	byUPID map[string]*Task
	order  []*Task
}

func newTaskTable() *taskTable { return &taskTable{byUPID: map[string]*Task{}} }

func (tt *taskTable) add(t *Task) {
	tt.byUPID[t.UPID] = t
	tt.order = append(tt.order, t)
	// Keep the archive bounded, like Proxmox's task index.
	if len(tt.order) > 20000 {
		drop := tt.order[:len(tt.order)-20000]
		for _, old := range drop {
			if !old.Running {
				delete(tt.byUPID, old.UPID)
			}
		}
		tt.order = append([]*Task(nil), tt.order[len(tt.order)-20000:]...)
	}
}

// UPIDInfo is a parsed UPID.
type UPIDInfo struct {
	Node      string
	PID       int
	PStart    int64
	StartTime int64
	Type      string
	ID        string
	User      string
}

// ParseUPID splits "UPID:node:pid:pstart:starttime:type:id:user:".
func ParseUPID(upid string) (UPIDInfo, bool) {
	parts := strings.Split(upid, ":")
	if len(parts) != 9 || parts[0] != "UPID" || parts[8] != "" {
		// The id part can hold no colon; the user can hold none either.
		return UPIDInfo{}, false
	}
	pid, e1 := strconv.ParseInt(parts[2], 16, 64)
	pstart, e2 := strconv.ParseInt(parts[3], 16, 64)
	st, e3 := strconv.ParseInt(parts[4], 16, 64)
	if e1 != nil || e2 != nil || e3 != nil || len(parts[2]) != 8 || len(parts[3]) < 8 || len(parts[4]) != 8 {
		return UPIDInfo{}, false
	}
	return UPIDInfo{Node: parts[1], PID: int(pid), PStart: pstart, StartTime: st, Type: parts[5], ID: parts[6], User: parts[7]}, true
}

// taskCtx is what a task body works with. The body runs with Server.mu
// held; sleep and lock waits release it meanwhile.
type taskCtx struct {
	s     *Server
	t     *Task
	async bool
	// injected is a failure drawn by --faults task-fail-rate, not yet
	// delivered: the worker's first step that can fail (failPoint) gets it.
	injected error
}

// errInjectedFailure is what an injected task failure says; the worker's
// own error path wraps it as it wraps any other error of that step.
var errInjectedFailure = route.Fail("simulated task failure (fault injection)")

// failPoint returns the injected failure, once. Every step of a worker
// that can fail on a real node (a sleep standing for I/O, a transfer)
// calls it, so an injected failure runs the worker's real error path:
// a failed create or clone removes its half-made guest and volumes
// (qemu-server API2/Qemu.pm create_vm and clone_vm, pve-container
// API2/LXC.pm create_vm and clone_vm), as Proxmox's own workers do.
func (tc *taskCtx) failPoint() error {
	err := tc.injected
	tc.injected = nil
	return err
}

// Log appends a line to the task log.
func (tc *taskCtx) Log(format string, args ...any) {
	tc.t.Log = append(tc.t.Log, fmt.Sprintf(format, args...))
}

// Sleep waits d (scaled by TaskSpeed) without holding the state lock.
func (tc *taskCtx) Sleep(d time.Duration) error {
	return tc.wait(tc.s.scale(d))
}

// wait is how a task sleeps: an injected failure ends it first; then it
// waits d on the server's clock without holding the state lock (not at
// all when the task runs synchronously), or until the server closes.
func (tc *taskCtx) wait(d time.Duration) error {
	if err := tc.failPoint(); err != nil {
		return err
	}
	if d <= 0 || !tc.async {
		return nil
	}
	tc.s.mu.Unlock()
	defer tc.s.relock()
	select {
	case <-tc.s.clock.After(d):
		return nil
	case <-tc.s.closed:
		return errInterrupted
	}
}

// errInterrupted is how a worker ends when pvedaemon's signal handler
// interrupts it (fork_worker: die "received interrupt").
var errInterrupted = route.Fail("received interrupt")

// unlocked runs f without the state lock (network transfers).
func (tc *taskCtx) unlocked(f func()) {
	tc.s.mu.Unlock()
	defer tc.s.relock()
	f()
}

// LockGuest takes the guest's config lock for the rest of the task.
func (tc *taskCtx) LockGuest(vmid int, kind string) error {
	return tc.lock(vmid, kind, false, lockTimeout)
}

// lockConfig is lock_config then load_config (PVE::AbstractConfig): the
// guest's config lock, then its config file, which a task that held the
// lock before (a destroy, a migration) may have taken away.
func (tc *taskCtx) lockConfig(g *Guest) error {
	if err := tc.LockGuest(g.VMID, g.Type); err != nil {
		return err
	}
	return tc.s.configGone(g, g.Node)
}

func (tc *taskCtx) lock(vmid int, kind string, shared bool, timeout time.Duration) error {
	if err := tc.s.acquireLock(vmid, kind, shared, timeout); err != nil {
		return err
	}
	tc.t.heldLocks = append(tc.t.heldLocks, heldLock{vmid, shared})
	return nil
}

// unlock lets go of a lock the task took, before the task ends (create_vm
// releases the config lock before its autostart).
func (tc *taskCtx) unlock(vmid int) {
	for i, l := range tc.t.heldLocks {
		if l.vmid == vmid {
			tc.s.releaseLock(l.vmid, l.shared)
			tc.t.heldLocks = append(tc.t.heldLocks[:i], tc.t.heldLocks[i+1:]...)
			return
		}
	}
}

func (s *Server) scale(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.opts.TaskSpeed)
}

// startTask creates a task on node and runs body as its worker. With
// TaskSpeed 0 the task has finished when startTask returns; otherwise it
// runs in the background. Must be called with s.mu held.
func (s *Server) startTask(r *route.Request, node, typ, id string, body func(tc *taskCtx) error) string {
	return s.startTaskWith(r, node, typ, id, body, nil)
}

// startTaskWith is startTask with a function run when the task has ended.
func (s *Server) startTaskWith(r *route.Request, node, typ, id string, body func(tc *taskCtx) error, onDone func(error)) string {
	n := s.state.node(node)
	now := s.clock.Now()
	n.nextPID++
	t := &Task{
		Node: node, PID: n.nextPID, PStart: int64(now.Sub(n.BootTime) / (10 * time.Millisecond)),
		StartTime: now, Type: typ, ID: id, User: r.User, Running: true, done: make(chan struct{}), onDone: onDone,
	}
	t.UPID = fmt.Sprintf("UPID:%s:%08X:%08X:%08X:%s:%s:%s:", node, t.PID, t.PStart, now.Unix(), typ, id, t.User)
	s.tasks.add(t)
	async := s.opts.TaskSpeed > 0
	tc := &taskCtx{s: s, t: t, async: async}
	run := func() {
		if s.faults.taskFails(typ) {
			tc.injected = errInjectedFailure
		}
		err := body(tc)
		if err == nil && tc.injected != nil {
			// A worker that ended before any step that can fail: it fails
			// at its end (its work is done, as when Proxmox's worker dies
			// after its last step).
			err = tc.injected
		}
		s.finishTask(t, err)
	}
	if !async {
		run()
		return t.UPID
	}
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		s.relock()
		defer s.mu.Unlock()
		run()
	}()
	return t.UPID
}

// relock takes the state lock back for a task step that changes state.
func (s *Server) relock() {
	s.mu.Lock()
	s.statdCatchUp()
	s.touch()
}

func (s *Server) finishTask(t *Task, err error) {
	s.touch()
	s.guestSSHSync()
	for _, l := range t.heldLocks {
		s.releaseLock(l.vmid, l.shared)
	}
	t.heldLocks = nil
	t.Running = false
	t.EndTime = s.clock.Now()
	if err != nil {
		msg := strings.TrimRight(route.AsAPIError(err).Message, "\n")
		t.ExitStatus = msg
		t.Log = append(t.Log, "TASK ERROR: "+msg)
	} else {
		t.ExitStatus = "OK"
		t.Log = append(t.Log, "TASK OK")
	}
	close(t.done)
	if t.onDone != nil {
		t.onDone(err)
	}
}

// setTaskTarget records the new guest of a clone task.
func (s *Server) setTaskTarget(upid string, vmid int) {
	if t := s.tasks.byUPID[upid]; t != nil {
		t.Target = vmid
	}
}

// WaitTask blocks until the task has finished (for Go tests).
func (s *Server) WaitTask(upid string) (*Task, bool) {
	s.mu.Lock()
	t := s.tasks.byUPID[upid]
	s.mu.Unlock()
	if t == nil {
		return nil, false
	}
	<-t.done
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *t
	c.Log = append([]string(nil), t.Log...)
	return &c, true
}

// WaitIdle blocks until no task runs (for Go tests): a test that lost
// the answers to some requests waits for the tasks they started.
func (s *Server) WaitIdle() {
	for {
		s.mu.Lock()
		var running []*Task
		for _, t := range s.tasks.order {
			if t.Running {
				running = append(running, t)
			}
		}
		s.mu.Unlock()
		if len(running) == 0 {
			return
		}
		for _, t := range running {
			<-t.done
		}
	}
}

// guestLock is the flock Proxmox takes on a guest's config: exclusive,
// or shared (a clone of a stopped guest only needs its source not to change).
type guestLock struct {
	held     bool // exclusively
	shared   int
	released chan struct{} // closed (and replaced) whenever the lock loosens
}

// lockTimeout is Proxmox's default wait for a config lock (10 seconds).
const lockTimeout = 10 * time.Second

func lockFilePath(vmid int, kind string) string {
	if kind == "lxc" {
		return fmt.Sprintf("/run/lock/lxc/pve-config-%d.lock", vmid)
	}
	return fmt.Sprintf("/var/lock/qemu-server/lock-%d.conf", vmid)
}

func (s *Server) lockOf(vmid int) *guestLock {
	lk := s.locks[vmid]
	if lk == nil {
		lk = &guestLock{released: make(chan struct{})}
		s.locks[vmid] = lk
	}
	return lk
}

// acquireGuestLock takes a guest's lock exclusively, waiting up to the
// scaled 10 s for a holder to let go. Called with s.mu held; the wait releases it.
func (s *Server) acquireGuestLock(vmid int, kind string) error {
	return s.acquireLock(vmid, kind, false, lockTimeout)
}

// acquireLock takes a guest's lock, shared or exclusive, waiting up to timeout (scaled).
func (s *Server) acquireLock(vmid int, kind string, shared bool, timeout time.Duration) error {
	timeoutErr := route.Fail("can't lock file '%s' - got timeout", lockFilePath(vmid, kind))
	if s.faults.lockTimesOut() {
		return timeoutErr
	}
	var timer <-chan time.Time
	for {
		lk := s.lockOf(vmid)
		if !lk.held && (shared || lk.shared == 0) {
			if shared {
				lk.shared++
			} else {
				lk.held = true
			}
			return nil
		}
		wait := s.scale(timeout)
		if wait <= 0 {
			return timeoutErr
		}
		if timer == nil {
			timer = s.clock.After(wait)
		}
		ch := lk.released
		s.mu.Unlock()
		select {
		case <-ch:
			s.relock()
		case <-timer:
			s.relock()
			if l := s.lockOf(vmid); !l.held && (shared || l.shared == 0) {
				continue
			}
			return timeoutErr
		case <-s.closed:
			s.relock()
			return timeoutErr
		}
	}
}

func (s *Server) releaseLock(vmid int, shared bool) {
	lk := s.locks[vmid]
	if lk == nil {
		return
	}
	if shared {
		if lk.shared > 0 {
			lk.shared--
		}
	} else {
		lk.held = false
	}
	close(lk.released)
	lk.released = make(chan struct{})
}

func (s *Server) releaseGuestLock(vmid int) { s.releaseLock(vmid, false) }

// withGuestLock runs f holding the guest's lock (for synchronous calls).
func (s *Server) withGuestLock(vmid int, kind string, f func() (any, error)) (any, error) {
	if err := s.acquireGuestLock(vmid, kind); err != nil {
		return nil, err
	}
	defer s.releaseGuestLock(vmid)
	return f()
}

// HoldGuestLock takes a guest's lock from a Go test, as a long-running
// operation would; call the returned function to let go.
func (s *Server) HoldGuestLock(vmid int) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lk := s.lockOf(vmid)
	if lk.held || lk.shared > 0 {
		panic(fmt.Sprintf("pvesim: lock of %d already held", vmid))
	}
	lk.held = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.releaseGuestLock(vmid)
	}
}

// taskJSON renders a task as the task lists and the status read do. With
// splitToken, a token's task names the user in "user" and the token's name
// in "tokenid", as pve-manager's API2/Tasks.pm ($convert_token_task) and
// API2/Cluster.pm (tasks) do; only the UPID keeps the full token id.
func taskJSON(t *Task, splitToken bool) map[string]any {
	m := map[string]any{
		"upid": t.UPID, "node": t.Node, "pid": t.PID, "pstart": t.PStart,
		"starttime": t.StartTime.Unix(), "type": t.Type, "id": t.ID, "user": t.User,
	}
	if splitToken {
		if user, token, ok := splitTokenID(t.User); ok {
			m["user"], m["tokenid"] = user, token
		}
	}
	if t.Running {
		m["status"] = "running"
	} else {
		m["status"] = t.ExitStatus
		m["endtime"] = t.EndTime.Unix()
	}
	return m
}

func init() {
	registerRoutes(func(s *Server) {
		node := route.Str("node").Fmt("pve-node")
		upid := route.Str("upid")
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/tasks", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(node,
				route.Int("start").Opt().Min(0).Default("0"),
				route.Int("limit").Opt().Min(0).Default("50"),
				route.Str("userfilter").Opt(),
				route.Str("typefilter").Opt(),
				route.Int("vmid").Opt().Fmt("pve-vmid").Min(100).Max(999999999),
				route.Bool("errors").Opt().Default("0"),
				route.Str("source").Opt().Enum("archive", "active", "all").Default("archive"),
				route.Int("since").Opt(),
				route.Int("until").Opt(),
				route.Str("statusfilter").Opt().Fmt("pve-task-status-type-list"),
			),
			Handler: s.listTasks})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/tasks/{upid}", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(node, upid),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.findTask(r); err != nil {
					return nil, err
				}
				return []map[string]any{{"name": "log"}, {"name": "status"}}, nil
			}})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/tasks/{upid}", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(node, upid),
			Handler: s.onTask("Sys.Modify", func(r *route.Request, t *Task) (any, error) {
				if t.Running {
					t.Log = append(t.Log, "received interrupt")
				}
				return nil, nil
			})})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/tasks/{upid}/status", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(node, upid),
			Handler: s.onTask("Sys.Audit", func(r *route.Request, t *Task) (any, error) {
				m := taskJSON(t, true)
				if t.Running {
					m["status"] = "running"
				} else {
					m["status"] = "stopped"
					m["exitstatus"] = t.ExitStatus
				}
				delete(m, "endtime")
				return m, nil
			})})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/tasks/{upid}/log", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(node, upid,
				route.Int("start").Opt().Min(0).Default("0"),
				route.Int("limit").Opt().Min(0).Default("50"),
				route.Bool("download").Opt(),
			),
			Handler: s.onTask("Sys.Audit", func(r *route.Request, t *Task) (any, error) {
				start := r.IntOr("start", 0)
				limit := r.IntOr("limit", 50)
				out := []map[string]any{}
				for i := start; i < len(t.Log) && (limit == 0 || i < start+limit); i++ {
					out = append(out, map[string]any{"n": i + 1, "t": t.Log[i]})
				}
				total := len(t.Log)
				if total == 0 {
					// An empty log reads as one placeholder line whatever
					// the start (pve-common Tools.pm
					// dump_logfile_by_filehandle, for ExtJS; pve-manager
					// API2/Tasks.pm read_task_log sets total from it).
					out, total = []map[string]any{{"n": 1, "t": "no content"}}, 1
				}
				return Result{Data: out, Total: &total}, nil
			})})
	})
}

func (s *Server) findTask(r *route.Request) (*Task, error) {
	upid := r.Str("upid")
	info, ok := ParseUPID(upid)
	if !ok {
		return nil, route.Fail("unable to parse worker upid '%s'", upid)
	}
	if info.Node != r.Str("node") {
		return nil, route.Fail("no such task")
	}
	t := s.tasks.byUPID[upid]
	if t == nil {
		return nil, route.Fail("no such task")
	}
	return t, nil
}

func (s *Server) listTasks(r *route.Request) (any, error) {
	node := r.Str("node")
	source := r.Str("source")
	if source == "" {
		source = "archive"
	}
	vmid, hasVMID := r.Int("vmid")
	auditor := s.can(r.User, "/nodes/"+node, "Sys.Audit")
	indexed := s.indexedTasks(node)
	var list []*Task
	for i := len(s.tasks.order) - 1; i >= 0; i-- {
		t := s.tasks.order[i]
		if t.Node != node || (!t.Running && !indexed[t]) {
			continue
		}
		if (source == "active" && !t.Running) || (source == "archive" && t.Running) {
			continue
		}
		if !auditor && !taskOwnedBy(t, r.User) {
			continue
		}
		if uf := r.Str("userfilter"); uf != "" && !userFilterMatches(t, uf) {
			continue
		}
		if tf := r.Str("typefilter"); tf != "" && t.Type != tf {
			continue
		}
		if hasVMID && t.ID != strconv.Itoa(vmid) {
			continue
		}
		if r.Bool("errors") && (t.Running || t.ExitStatus == "OK") {
			continue
		}
		if since, ok := r.Int("since"); ok && t.StartTime.Unix() < int64(since) {
			continue
		}
		if until, ok := r.Int("until"); ok && t.StartTime.Unix() > int64(until) {
			continue
		}
		list = append(list, t)
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].StartTime.After(list[j].StartTime) })
	total := len(list)
	start := r.IntOr("start", 0)
	limit := r.IntOr("limit", 50)
	out := []map[string]any{}
	for i := start; i < len(list) && (limit == 0 || i < start+limit); i++ {
		out = append(out, taskJSON(list[i], !list[i].Running))
	}
	return Result{Data: out, Total: &total}, nil
}

// indexedTasks is the set of a node's finished tasks still in its task
// index files. pve-common's RESTEnvironment.pm appends each finished task
// as a line "UPID ENDTIME STATUS" to /var/log/pve/tasks/index and renames
// it to index.1 once it exceeds 50000 bytes; node_tasks reads index and
// index.1 only.
func (s *Server) indexedTasks(node string) map[*Task]bool {
	limit := s.opts.TaskIndexBytes
	if limit <= 0 {
		limit = 50000
	}
	var done []*Task
	for _, t := range s.tasks.order {
		if t.Node == node && !t.Running {
			done = append(done, t)
		}
	}
	sort.SliceStable(done, func(i, j int) bool { return done[i].EndTime.Before(done[j].EndTime) })
	var index, previous []*Task
	size := 0
	for _, t := range done {
		index = append(index, t)
		size += len(t.UPID) + 1 + 8 + 1 + len(t.ExitStatus) + 1
		if size > limit {
			previous, index, size = index, nil, 0
		}
	}
	out := make(map[*Task]bool, len(index)+len(previous))
	for _, t := range append(index, previous...) {
		out[t] = true
	}
	return out
}

// userFilterMatches is node_tasks' userfilter: a case-insensitive substring
// match (m/\Q$userfilter\E/i) on the task's user. Archived tasks are
// matched after $convert_token_task has cut the token's name off, so
// "root@pam!proxmops" matches none of them; running tasks (read from the
// active file) are matched unconverted.
func userFilterMatches(t *Task, filter string) bool {
	user := t.User
	if !t.Running {
		if u, _, ok := splitTokenID(user); ok {
			user = u
		}
	}
	return strings.Contains(strings.ToLower(user), strings.ToLower(filter))
}

// splitTokenID is pve-access-control's split_tokenid for a valid token id
// (user@realm!name).
func splitTokenID(id string) (user, token string, ok bool) {
	user, token, ok = strings.Cut(id, "!")
	if !ok || !strings.Contains(user, "@") || token == "" {
		return "", "", false
	}
	return user, token, true
}

// taskOwnedBy is Tasks.pm's check_task_user: a token sees its own tasks,
// a user its own and its tokens'.
func taskOwnedBy(t *Task, user string) bool {
	return t.User == user || strings.HasPrefix(t.User, user+"!")
}

// onTask adapts a handler of one task to a route: the path's task, which
// the user may see with priv (accessibleTask), before h runs.
func (s *Server) onTask(priv string, h func(*route.Request, *Task) (any, error)) func(*route.Request) (any, error) {
	return func(r *route.Request) (any, error) {
		t, err := s.accessibleTask(r, priv)
		if err != nil {
			return nil, err
		}
		return h(r, t)
	}
}

// accessibleTask is the task {upid} names when the user may see it with
// priv (checkTaskAccess).
func (s *Server) accessibleTask(r *route.Request, priv string) (*Task, error) {
	t, err := s.findTask(r)
	if err != nil {
		return nil, err
	}
	if err := s.checkTaskAccess(r, t, priv); err != nil {
		return nil, err
	}
	return t, nil
}

// checkTaskAccess lets the task's owner through and asks others for a
// privilege on the node (Sys.Audit to read, Sys.Modify to stop).
func (s *Server) checkTaskAccess(r *route.Request, t *Task, priv string) error {
	if taskOwnedBy(t, r.User) {
		return nil
	}
	return s.check(r.User, "/nodes/"+r.Str("node"), priv)
}
