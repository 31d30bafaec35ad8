package pve

import (
	"context"
	"strconv"
)

// LxcPending reads a container's configuration with its pending changes
// (GET .../lxc/{vmid}/pending): one entry per key with its current value,
// its pending value and whether its removal is pending.
func (c *Client) LxcPending(ctx context.Context, node string, vmid int) ([]PendingEntry, error) {
	var out []PendingEntry
	err := c.Get(ctx, lxcPath(node, vmid)+"/pending", nil, &out)
	return out, err
}

// LxcStart starts a container (a task).
func (c *Client) LxcStart(ctx context.Context, node string, vmid int) (string, error) {
	return c.LxcPower(ctx, node, vmid, "start", nil)
}

// LxcStop stops a container at once (a task).
func (c *Client) LxcStop(ctx context.Context, node string, vmid int) (string, error) {
	return c.LxcPower(ctx, node, vmid, "stop", nil)
}

// LxcShutdown asks a container to shut down within timeoutSec seconds;
// with forceStop it is stopped when the time is up (a task).
func (c *Client) LxcShutdown(ctx context.Context, node string, vmid, timeoutSec int, forceStop bool) (string, error) {
	p := NewParams()
	if timeoutSec > 0 {
		p.Set("timeout", strconv.Itoa(timeoutSec))
	}
	if forceStop {
		p.SetBool("forceStop", true)
	}
	return c.LxcPower(ctx, node, vmid, "shutdown", p)
}

// LxcReboot reboots a container, which applies its pending changes (a task).
func (c *Client) LxcReboot(ctx context.Context, node string, vmid int) (string, error) {
	return c.LxcPower(ctx, node, vmid, "reboot", nil)
}
