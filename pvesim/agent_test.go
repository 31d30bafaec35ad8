package pvesim

import (
	"testing"
	"time"
)

// agent/ping refuses as assert_agent_available does, in its order, and
// answers once the agent has started, AgentStartDelay after the boot.
func TestAgentPingAnswersSomeSecondsAfterBoot(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	_, c := lxcSim(t, Options{Nodes: 1, Clock: clock, AgentStartDelay: 5 * time.Second})
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "100"))
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "101", "agent", "enabled=1"))
	c.task("POST", "/nodes/pve1/qemu", vals("vmid", "102", "agent", "0"))
	c.task("POST", "/nodes/pve1/qemu/102/status/start", nil)
	for _, tc := range []struct{ path, want string }{
		{"/nodes/pve1/qemu/100/agent/ping", "No QEMU guest agent configured"},
		{"/nodes/pve1/qemu/101/agent/ping", "VM 101 is not running"},
		{"/nodes/pve1/qemu/102/agent/ping", "QEMU guest agent is not running"},
	} {
		if r := c.do("POST", tc.path, nil); r.Status != 500 || r.Reason != tc.want {
			t.Errorf("%s: %d %q, want 500 %q", tc.path, r.Status, r.Reason, tc.want)
		}
	}
	c.task("POST", "/nodes/pve1/qemu/101/status/start", nil)
	if r := c.do("POST", "/nodes/pve1/qemu/101/agent/ping", nil); r.Reason != "QEMU guest agent is not running" {
		t.Fatalf("agent before it started: %d %q", r.Status, r.Reason)
	}
	clock.Advance(5 * time.Second)
	if r := c.do("POST", "/nodes/pve1/qemu/101/agent/ping", nil); r.Status != 200 || string(r.Data) != `{"result":{}}` {
		t.Fatalf("agent after it started: %d %q %s", r.Status, r.Reason, r.Data)
	}
}
