package pvesim

// Power verbs (start, stop, shutdown, reboot, reset) and the bridge check
// a start makes, for VMs then containers.

import (
	"strconv"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

func (s *Server) qemuStart(r *route.Request, g *Guest) (any, error) {
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) && !r.Has("stateuri") {
		return s.haPowerRequest(r, g, false, 0), nil
	}
	return s.startTask(r, g.Node, "qmstart", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.qemuStartGuest(tc, g, skiplock)
	}), nil
}

// qemuStartGuest is vm_start: under the config lock, apply pending
// changes and start QEMU, which fails when a NIC's bridge is missing.
func (s *Server) qemuStartGuest(tc *taskCtx, g *Guest, skiplock bool) error {
	if err := tc.lockConfig(g); err != nil {
		return err
	}
	if g.IsTemplate() {
		return route.Fail("you can't start a vm if it's a template")
	}
	if !skiplock {
		if err := checkLock(g); err != nil {
			return err
		}
	}
	if g.Running {
		return route.Fail("VM %d already running", g.VMID)
	}
	if err := tc.Sleep(durStart); err != nil {
		return err
	}
	s.applyPending(g)
	if err := s.qemuCheckBridges(tc, g); err != nil {
		return err
	}
	g.Running = true
	g.StartedAt = s.clock.Now()
	g.KVM = kvmCommand(g.Conf)
	return nil
}

// maxQemuNets is MAX_NETS: net0 to net31.
const maxQemuNets = 32

// qemuCheckBridges is what happens when QEMU brings up its tap devices:
// pve-bridge dies with "bridge '...' does not exist" for a bridge that is
// neither an active host bridge nor an applied SDN vnet, QEMU logs the
// failed network script and exits, and the start fails.
func (s *Server) qemuCheckBridges(tc *taskCtx, g *Guest) error {
	for i := 0; i < maxQemuNets; i++ {
		key := "net" + strconv.Itoa(i)
		v, ok := g.Conf[key]
		if !ok {
			continue
		}
		n, err := parsePropString(qemuNetFormat, v, "")
		if err != nil || n["bridge"] == "" || s.bridgeExists(g.Node, n["bridge"]) {
			continue
		}
		vhost := ""
		if n["model"] == "virtio" {
			vhost = ",vhost=on"
		}
		tc.Log("bridge '%s' does not exist", n["bridge"])
		tc.Log("kvm: -netdev type=tap,id=%s,ifname=tap%di%d,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown%s: network script /usr/libexec/qemu-server/pve-bridge failed with status 512", key, g.VMID, i, vhost)
		return route.Fail("start failed: QEMU exited with code 1")
	}
	return nil
}

func (s *Server) qemuStop(r *route.Request, g *Guest, typ string) (any, error) {
	if err := s.rootOnly(r, "keepActive"); err != nil {
		return nil, err
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		if typ == "qmshutdown" {
			return s.haPowerRequest(r, g, true, r.IntOr("timeout", 60)), nil
		}
		if !r.Has("migratedfrom") {
			if r.Bool("overrule-shutdown") {
				return nil, route.ParamErr("overrule-shutdown", "Not applicable for HA resources.")
			}
			return s.haPowerRequest(r, g, true, 0), nil
		}
	}
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.stopGuest(tc, g, shutdownOf(r, typ == "qmshutdown"), skiplock)
	}), nil
}

func (s *Server) qemuReboot(r *route.Request, g *Guest) (any, error) {
	if !g.Running {
		return nil, route.Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "qmreboot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "qemu"); err != nil {
			return err
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if err := tc.Sleep(durShutdown + durStart); err != nil {
			return err
		}
		// The reboot task only stops the VM; qmeventd starts it again
		// outside the task, so a failing start leaves it stopped and the
		// reboot task still ends OK.
		s.applyPending(g)
		if err := s.qemuCheckBridges(&taskCtx{s: s, t: &Task{}}, g); err != nil {
			g.Running = false
			g.StartedAt = time.Time{}
			return nil
		}
		g.Running = true
		g.StartedAt = s.clock.Now()
		g.KVM = kvmCommand(g.Conf)
		return nil
	}), nil
}

func (s *Server) qemuReset(r *route.Request, g *Guest) (any, error) {
	if !g.Running {
		return nil, route.Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "qmreset", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.failPoint(); err != nil {
			return err
		}
		g.StartedAt = s.clock.Now()
		return nil
	}), nil
}

// lxcCheckBridges fails a start when a NIC's bridge is missing on the
// node: the lxcnetaddbr hook dies with "bridge '...' does not exist", the
// container stops during startup and vm_start reports that.
func (s *Server) lxcCheckBridges(tc *taskCtx, g *Guest) error {
	for i := 0; i < lxcMaxNetworks; i++ {
		k := "net" + strconv.Itoa(i)
		v, ok := g.Conf[k]
		if !ok {
			continue
		}
		if b := netBridge(v); b != "" && !s.bridgeExists(g.Node, b) {
			tc.Log("bridge '%s' does not exist", b)
			return route.Fail("startup for container '%d' failed", g.VMID)
		}
	}
	return nil
}

func (s *Server) lxcStart(r *route.Request, g *Guest) (any, error) {
	if g.Running {
		return nil, route.Fail("CT %d already running", g.VMID)
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		return s.haPowerRequest(r, g, false, 0), nil
	}
	return s.startTask(r, g.Node, "vzstart", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.lxcStartGuest(tc, g, skiplock)
	}), nil
}

// lxcStartGuest is the vzstart worker: under the config lock, apply
// pending changes and start the container, which fails on a missing bridge.
func (s *Server) lxcStartGuest(tc *taskCtx, g *Guest, skiplock bool) error {
	if err := tc.lockConfig(g); err != nil {
		return err
	}
	if g.IsTemplate() {
		return route.Fail("you can't start a CT if it's a template")
	}
	if !skiplock {
		if err := checkLock(g); err != nil {
			return err
		}
	}
	if g.Running {
		return route.Fail("CT %d already running", g.VMID)
	}
	if err := tc.Sleep(durCTStart); err != nil {
		return err
	}
	errs := map[string]string{}
	s.lxcApplyPending(g, nil, errs)
	if err := s.lxcCheckBridges(tc, g); err != nil {
		return err
	}
	g.Running = true
	g.StartedAt = s.clock.Now()
	return nil
}

func (s *Server) lxcStop(r *route.Request, g *Guest, typ string) (any, error) {
	if !g.Running {
		return nil, route.Fail("CT %d not running", g.VMID)
	}
	skiplock := r.Bool("skiplock")
	if s.haManaged(g) {
		if typ == "vzshutdown" {
			return s.haPowerRequest(r, g, true, r.IntOr("timeout", 60)), nil
		}
		if r.Bool("overrule-shutdown") {
			return nil, route.ParamErr("overrule-shutdown", "Not applicable for HA resources.")
		}
		return s.haPowerRequest(r, g, true, 0), nil
	}
	return s.startTask(r, g.Node, typ, strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		return s.stopGuest(tc, g, shutdownOf(r, typ == "vzshutdown"), skiplock)
	}), nil
}

func (s *Server) lxcReboot(r *route.Request, g *Guest) (any, error) {
	if !g.Running {
		// pve-container says "VM" here.
		return nil, route.Fail("VM %d not running", g.VMID)
	}
	return s.startTask(r, g.Node, "vzreboot", strconv.Itoa(g.VMID), func(tc *taskCtx) error {
		if err := tc.LockGuest(g.VMID, "lxc"); err != nil {
			return err
		}
		if err := checkLock(g); err != nil {
			return err
		}
		if err := tc.Sleep(durCTShutdown + durCTStart); err != nil {
			return err
		}
		s.lxcApplyPending(g, nil, map[string]string{})
		if err := s.lxcCheckBridges(tc, g); err != nil {
			g.Running = false
			return err
		}
		g.Running = true
		g.StartedAt = s.clock.Now()
		return nil
	}), nil
}

// shutdownOf reads a shutdown request's timeout (60 by default) and
// forceStop; nil for a stop.
func shutdownOf(r *route.Request, shutdown bool) *shutdownOpts {
	if !shutdown {
		return nil
	}
	return &shutdownOpts{timeout: r.IntOr("timeout", 60), force: r.Bool("forceStop")}
}
