package pve

import (
	"context"
	"strconv"
)

// GuestSnapshot is one entry of GET /nodes/{node}/{qemu|lxc}/{vmid}/snapshot
// (the "current" entry included: Name "current", Running set).
type GuestSnapshot struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	SnapTime    Int    `json:"snaptime"`
	Parent      string `json:"parent"`
	VMState     Int    `json:"vmstate"`
	SnapState   string `json:"snapstate"`
	Running     Int    `json:"running"`
}

func guestPath(typ, node string, vmid int) string {
	return "nodes/" + PathEscape(node) + "/" + typ + "/" + strconv.Itoa(vmid)
}

// Snapshots lists a guest's snapshots; typ is "qemu" or "lxc".
func (c *Client) Snapshots(ctx context.Context, typ, node string, vmid int) ([]GuestSnapshot, error) {
	var out []GuestSnapshot
	err := c.Get(ctx, guestPath(typ, node, vmid)+"/snapshot", nil, &out)
	return out, err
}

// CreateSnapshot takes a snapshot (without RAM) and returns the task id.
func (c *Client) CreateSnapshot(ctx context.Context, typ, node string, vmid int, name, description string) (string, error) {
	p := NewParams().Set("snapname", name)
	if description != "" {
		p.Set("description", description)
	}
	var upid string
	err := c.Post(ctx, guestPath(typ, node, vmid)+"/snapshot", p, &upid)
	return upid, err
}

// DeleteSnapshot deletes a snapshot and returns the task id.
func (c *Client) DeleteSnapshot(ctx context.Context, typ, node string, vmid int, name string) (string, error) {
	var upid string
	err := c.Delete(ctx, guestPath(typ, node, vmid)+"/snapshot/"+PathEscape(name), nil, &upid)
	return upid, err
}

// RollbackSnapshot rolls a guest back to a snapshot (Proxmox stops a running
// guest first); start starts it again afterwards. It returns the task id.
func (c *Client) RollbackSnapshot(ctx context.Context, typ, node string, vmid int, name string, start bool) (string, error) {
	var p *Params
	if start {
		p = NewParams().SetBool("start", true)
	}
	var upid string
	err := c.Post(ctx, guestPath(typ, node, vmid)+"/snapshot/"+PathEscape(name)+"/rollback", p, &upid)
	return upid, err
}

// SnapshotConfig reads the configuration a snapshot holds.
func (c *Client) SnapshotConfig(ctx context.Context, typ, node string, vmid int, name string) (ConfigValues, error) {
	var cfg ConfigValues
	err := c.Get(ctx, guestPath(typ, node, vmid)+"/snapshot/"+PathEscape(name)+"/config", nil, &cfg)
	return cfg, err
}
