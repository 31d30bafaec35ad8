package pvesim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// haKick asks the HA manager for a round: at once (and until nothing
// changes) with TaskSpeed 0, otherwise haRoundDelay later on the
// simulator's clock. Called with s.mu held.
func (s *Server) haKick() {
	h := s.state.HA
	if h == nil || len(h.Resources)+len(h.Services)+len(h.Commands) == 0 {
		return
	}
	if s.opts.TaskSpeed == 0 {
		if s.haSyncRunning {
			s.haSyncAgain = true
			return
		}
		s.haSyncRunning = true
		defer func() { s.haSyncRunning = false }()
		// The CRM repeats its state machine while states change; the bound
		// only stops a start that fails for ever (max_restart is unbounded).
		for i := 0; i < 50; i++ {
			s.haSyncAgain = false
			if !s.haRound() && !s.haSyncAgain {
				return
			}
		}
		return
	}
	if s.haScheduled {
		return
	}
	select {
	case <-s.closed:
		return // the cluster is shutting down: no more rounds
	default:
	}
	s.haScheduled = true
	due := s.clock.After(s.scale(haRoundDelay))
	s.bgWG.Add(1)
	go func() {
		defer s.bgWG.Done()
		select {
		case <-due:
		case <-s.closed:
			return
		}
		s.relock()
		defer s.mu.Unlock()
		s.haScheduled = false
		if s.haRound() {
			s.haKick()
		}
	}()
}

// haRound is one round of the CRM (Manager.pm manage: CRM commands, new
// and stale services, next state of each) followed by what the LRMs start.
// It reports whether anything changed.
func (s *Server) haRound() bool {
	h := s.ha()
	changed := len(h.Commands) > 0
	for _, cmd := range h.Commands {
		// update_crm_commands: "stop <sid> <timeout>"; one for a service the
		// CRM does not know is dropped ("crm command error - no such service").
		if f := strings.Fields(cmd); len(f) == 3 && f[0] == "stop" {
			if sv := h.Services[f[1]]; sv != nil {
				sv.Cmd = []string{"stop", f[2]}
			}
		}
	}
	h.Commands = nil
	for _, sid := range sortedKeys(h.Resources) {
		conf := h.Resources[sid]
		if h.Services[sid] != nil || conf["state"] == "ignored" {
			continue
		}
		sv := &HAService{State: "request_stop"}
		if haRequestState(conf) == "started" {
			sv.State = "request_start"
		}
		if g := s.haGuest(sid); g != nil {
			sv.Node = g.Node
		}
		h.Services[sid] = sv
		changed = true
	}
	for _, sid := range sortedKeys(h.Services) {
		if conf := h.Resources[sid]; conf == nil || conf["state"] == "ignored" {
			delete(h.Services, sid) // "removing stale service"
			changed = true
		}
	}
	for _, sid := range sortedKeys(h.Services) {
		if s.haNextState(sid, h.Services[sid], h.Resources[sid]) {
			changed = true
		}
	}
	if changed {
		s.touch()
	}
	return changed
}

// haNextState moves one service as the CRM's next_state_* subs do and
// starts the LRM's work for it. Relocation to another node after failed
// starts is not modelled: after 1+max_restart failed starts the service
// is in the error state.
func (s *Server) haNextState(sid string, sv *HAService, conf map[string]string) bool {
	g := s.haGuest(sid)
	if g == nil || sv.busy || s.faults.nodeOffline(g.Node) {
		return false
	}
	changed := false
	set := func(state string) {
		sv.State = state
		changed = true
	}
	sv.Node = g.Node
	req := haRequestState(conf)
	if sv.State == "request_start" {
		set("started")
	}
	if sv.State == "stopped" {
		if sv.Cmd != nil {
			sv.Cmd = nil // "ignore service ... stop request - service already stopped"
			changed = true
		}
		if req == "started" {
			set("started")
			sv.Running = false
		}
	}
	if sv.State == "started" {
		switch {
		case req == "stopped" || req == "disabled":
			set("request_stop")
			sv.Timeout = nil
		case len(sv.Cmd) == 2 && sv.Cmd[0] == "stop":
			// next_state_started: the stop command also sets the requested
			// state to stopped in resources.cfg.
			t, _ := strconv.Atoi(sv.Cmd[1])
			sv.Timeout, sv.Cmd = &t, nil
			set("request_stop")
			conf["state"] = "stopped"
		}
	}
	switch sv.State {
	case "started":
		if g.Running {
			if !sv.Running {
				sv.Running, sv.Failures = true, 0
				changed = true
			}
			return changed
		}
		s.haLRM(sid, sv, g, "start")
		return true
	case "request_stop":
		if !g.Running {
			set("stopped")
			sv.Running, sv.Timeout = false, nil
			return true
		}
		s.haLRM(sid, sv, g, "stop")
		return true
	case "stopped":
		if g.Running {
			// The LRM keeps a stopped service stopped.
			s.haLRM(sid, sv, g, "stop")
			return true
		}
	case "error":
		if req == "disabled" {
			set("stopped")
			sv.Failures, sv.Cmd = 0, nil
		}
	}
	return changed
}

// haLRM runs the resource agent's start or shutdown on the guest's node as
// the LRM does (PVE::HA::Resources::PVEVM/PVECT start and shutdown): a
// qmstart/vzstart task, a qmshutdown/vzshutdown with the request's timeout
// (60 s by default) and forceStop, or a qmstop/vzstop for timeout 0, all by
// root@pam.
func (s *Server) haLRM(sid string, sv *HAService, g *Guest, op string) {
	sv.busy = true
	lxc := g.Type == "lxc"
	typ := map[bool]string{false: "qm", true: "vz"}[lxc]
	var body func(tc *taskCtx) error
	switch {
	case op == "start":
		typ += "start"
		body = func(tc *taskCtx) error {
			if lxc {
				return s.lxcStartGuest(tc, g, false)
			}
			return s.qemuStartGuest(tc, g, false)
		}
	case sv.Timeout != nil && *sv.Timeout == 0:
		typ += "stop"
		body = func(tc *taskCtx) error { return s.stopGuest(tc, g, nil, false) }
	default:
		// PVEVM.pm shutdown sets forceStop; PVECT.pm shutdown does not.
		typ += "shutdown"
		o := &shutdownOpts{timeout: 60, force: !lxc}
		if sv.Timeout != nil {
			o.timeout = *sv.Timeout
		}
		body = func(tc *taskCtx) error { return s.stopGuest(tc, g, o, false) }
	}
	lrm := &route.Request{User: "root@pam"}
	s.startTaskWith(lrm, g.Node, typ, strconv.Itoa(g.VMID), body, func(err error) {
		sv.busy = false
		if s.state.HA == nil || s.state.HA.Services[sid] != sv {
			return
		}
		switch {
		case op == "start" && err == nil:
			sv.Running, sv.Failures = true, 0
		case op == "start":
			sv.Failures++
			if max := haInt(s.state.HA.Resources[sid], "max_restart", 1); sv.Failures > max {
				sv.State, sv.Running = "error", false
			}
		case err == nil:
			sv.State, sv.Running, sv.Timeout = "stopped", false, nil
		default:
			sv.State, sv.Running = "error", false
		}
		s.haKick()
	})
}

func haInt(conf map[string]string, key string, def int) int {
	if n, err := strconv.Atoi(conf[key]); err == nil {
		return n
	}
	return def
}

// shutdownOpts is how a graceful stop asks the guest: the timeout in
// seconds (vm_shutdown's "timeout", 60 by default) and forceStop.
type shutdownOpts struct {
	timeout int
	force   bool
}

// stopGuest is the worker of a stop (hard, shutdown nil) or a shutdown of
// a VM or container. A guest that ignores shutdowns (Guest.IgnoresShutdown)
// still runs at the timeout: forceStop stops it hard then (qemu-server
// QemuServer.pm _do_vm_stop: "VM still running - terminating now with
// SIGTERM"), else the shutdown fails ("VM quit/powerdown failed - got
// timeout"; pve-container LXC.pm vm_stop: lxc-stop --nokill fails and
// "container did not stop").
func (s *Server) stopGuest(tc *taskCtx, g *Guest, shutdown *shutdownOpts, skiplock bool) error {
	graceful := shutdown != nil
	kind := "qemu"
	dur := durStop
	switch {
	case g.Type == "lxc" && graceful:
		kind, dur = "lxc", durCTShutdown
	case g.Type == "lxc":
		kind, dur = "lxc", durCTStop
	case graceful:
		dur = durShutdown
	}
	if err := tc.LockGuest(g.VMID, kind); err != nil {
		return err
	}
	if kind == "lxc" {
		if err := s.configGone(g, g.Node); err != nil {
			return err
		}
	} else if !g.Running {
		// qemu-server PVE/QemuServer.pm _do_vm_stop: a VM that does not
		// run is done with before its config and lock are looked at.
		return nil
	}
	if !skiplock {
		if err := checkLock(g); err != nil {
			return err
		}
	}
	if !g.Running {
		return nil
	}
	if graceful && g.IgnoresShutdown {
		if err := tc.Sleep(time.Duration(shutdown.timeout) * time.Second); err != nil {
			return err
		}
		switch {
		case kind == "lxc" && !shutdown.force:
			tc.Log("command 'lxc-stop -n %d --nokill --timeout %d' failed: exit code 1", g.VMID, shutdown.timeout)
			return route.Fail("container did not stop")
		case kind == "qemu" && !shutdown.force:
			return route.Fail("VM quit/powerdown failed - got timeout")
		case kind == "qemu":
			tc.Log("VM still running - terminating now with SIGTERM")
		}
		dur = durStop
	}
	if err := tc.Sleep(dur); err != nil {
		return err
	}
	g.Running = false
	g.StartedAt = time.Time{}
	return nil
}

// haPowerRequest is the HA branch of vm_start, vm_shutdown and vm_stop in
// qemu-server (API2/Qemu.pm) and pve-container (API2/LXC/Status.pm) for a
// guest vm_is_ha_managed: a hastart task that runs "ha-manager set <sid>
// --state started", or a hastop task that runs "ha-manager crm-command stop
// <sid> <timeout>" (timeout 0 from vm_stop: a hard stop). Both end as soon
// as the request is written; the HA manager acts later.
func (s *Server) haPowerRequest(r *route.Request, g *Guest, stop bool, timeout int) string {
	sid := haSID(g)
	what := "VM"
	if g.Type == "lxc" {
		what = "CT"
	}
	typ := "hastart"
	if stop {
		typ = "hastop"
	}
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if !stop {
			return s.haStartRequest(tc, g)
		}
		tc.Log("Requesting HA stop for %s %d", what, g.VMID)
		err := s.haCheckServiceState(sid, "")
		if !s.haManagedSID(sid) {
			err = route.Fail("resource '%s' is not HA managed", sid)
		}
		if err != nil {
			tc.Log("%s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
			return route.Fail("command 'ha-manager crm-command stop %s %d' failed: exit code 255", sid, timeout)
		}
		s.ha().Commands = append(s.ha().Commands, fmt.Sprintf("stop %s %d", sid, timeout))
		s.haKick()
		return nil
	})
}

// haStartRequest is the HA branch of vm_start inside a worker: "ha-manager
// set <sid> --state started", which only writes the request.
func (s *Server) haStartRequest(tc *taskCtx, g *Guest) error {
	sid := haSID(g)
	what := "VM"
	if g.Type == "lxc" {
		what = "CT"
	}
	tc.Log("Requesting HA start for %s %d", what, g.VMID)
	err := s.haCheckServiceState(sid, "started")
	if err == nil {
		err = s.haSet(sid, map[string]string{"state": "started"}, nil, "")
	}
	if err != nil {
		tc.Log("%s", strings.TrimRight(route.AsAPIError(err).Message, "\n"))
		return route.Fail("command 'ha-manager set %s --state started' failed: exit code 255", sid)
	}
	return nil
}

// haAddAfterCreate is the "ha-managed" option of a create: "ha-manager add
// <sid> --state started|stopped"; a failure is only a warning of the task.
// The HA manager is not woken when a start request follows at once.
func (s *Server) haAddAfterCreate(tc *taskCtx, g *Guest, started, wake bool) {
	tc.Log("Add as HA resource")
	sid := haSID(g)
	state := "stopped"
	if started {
		state = "started"
	}
	h := s.ha()
	if h.Resources[sid] != nil {
		tc.Log("create resource failed: resource ID '%s' already defined", sid)
		tc.Log("command 'ha-manager add %s --state %s' failed: exit code 255", sid, state)
		return
	}
	h.Resources[sid] = map[string]string{"type": haTypes[g.Type], "state": state}
	h.Order = append(h.Order, sid)
	if wake {
		s.haKick()
	}
}

// purgeGuest is the purge step of a destroy (destroy_vm in API2/Qemu.pm and
// API2/LXC.pm): the guest leaves the backup jobs and the HA resources with
// their rules (delete_service_from_config with purge). Replication jobs are
// not modelled.
func (s *Server) purgeGuest(tc *taskCtx, g *Guest, purge bool) {
	if !purge {
		return
	}
	what := "VM"
	if g.Type == "lxc" {
		what = "CT"
	}
	tc.Log("purging %s %d from related configurations..", what, g.VMID)
	s.backupJobsForget(g.VMID)
	if sid := haSID(g); s.haConfigured(sid) {
		s.haRemove(sid)
		s.haRulesForget(sid)
		tc.Log("NOTE: removed %s %d from HA resource configuration.", what, g.VMID)
	}
}

// AddHAResource puts a guest under HA from a Go test, as "ha-manager add
// <sid> --state <state>" would ("" leaves the state at its default,
// started); the HA manager takes it over on its next round.
func (s *Server) AddHAResource(sid, state string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touch()
	sid, typ, name, err := s.haParseSID(sid)
	if err == nil {
		err = s.haCheckName(typ, name)
	}
	if err != nil {
		return err
	}
	h := s.ha()
	if h.Resources[sid] != nil {
		return fmt.Errorf("resource ID '%s' already defined", sid)
	}
	conf := map[string]string{"type": typ}
	if state != "" {
		conf["state"] = state
	}
	h.Resources[sid] = conf
	h.Order = append(h.Order, sid)
	s.haKick()
	return nil
}
