package pvesim

// The QEMU guest agent inside a simulated VM: it starts answering some
// time after the VM boots (Options.AgentStartDelay), like a real agent
// that starts with the guest's services, and only when the VM's config
// enables it. Health checks (agent/ping) and network-get-interfaces go
// through the same assert_agent_available.

import (
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// DefaultAgentStartDelay is how long after a start the simulated guest
// agent answers when Options.AgentStartDelay is 0.
const DefaultAgentStartDelay = 3 * time.Second

func init() {
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/qemu/{vmid}/agent/ping",
			Perm: route.PermAny("/vms/{vmid}", "VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted"), ProxyTo: "node",
			Params: route.NewParams(pNode(), pVMID()), Handler: s.onGuest(s.qemuGuest, s.agentPing)})
	})
}

// agentStartDelay is the configured delay: 0 is the default, a negative
// value an agent answering as soon as the VM runs.
func (s *Server) agentStartDelay() time.Duration {
	switch d := s.opts.AgentStartDelay; {
	case d < 0:
		return 0
	case d == 0:
		return DefaultAgentStartDelay
	default:
		return d
	}
}

// assertAgentAvailable is assert_agent_available (qemu-server
// PVE/QemuServer/Agent.pm), in its order: an agent key in the config, a
// running VM, an agent answering guest-ping (qga_check_running). Only an
// enabled agent has its device, and it answers once it has started.
func (s *Server) assertAgentAvailable(g *Guest) error {
	if _, ok := g.Conf["agent"]; !ok {
		return route.Fail("No QEMU guest agent configured")
	}
	if !g.Running {
		return route.Fail("VM %d is not running", g.VMID)
	}
	a, err := parsePropString(qemuConfigTypes.Lookup("agent").PropFormat, g.Conf["agent"], "")
	if err != nil || a["enabled"] != "1" || s.clock.Now().Before(g.StartedAt.Add(s.agentStartDelay())) {
		return route.Fail("QEMU guest agent is not running")
	}
	return nil
}

// agentPing is the ping command of API2/Qemu/Agent.pm register_command:
// the agent's empty answer to guest-ping as the result.
func (s *Server) agentPing(r *route.Request, g *Guest) (any, error) {
	if err := s.assertAgentAvailable(g); err != nil {
		return nil, err
	}
	return map[string]any{"result": map[string]any{}}, nil
}
