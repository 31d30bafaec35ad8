package pve

import (
	"context"
	"strconv"
)

func lxcPath(node string, vmid int) string {
	return "nodes/" + PathEscape(node) + "/lxc/" + strconv.Itoa(vmid)
}

// LxcCreate creates a container; vmid is added to params.
func (c *Client) LxcCreate(ctx context.Context, node string, vmid int, params *Params) (string, error) {
	p := NewParams().SetInt("vmid", vmid)
	for _, k := range params.Keys() {
		v, _ := params.Get(k)
		p.Set(k, v)
	}
	var upid string
	err := c.Post(ctx, "nodes/"+PathEscape(node)+"/lxc", p, &upid)
	return upid, err
}

// LxcConfig reads a container's configuration.
func (c *Client) LxcConfig(ctx context.Context, node string, vmid int) (ConfigValues, error) {
	var cfg ConfigValues
	err := c.Get(ctx, lxcPath(node, vmid)+"/config", nil, &cfg)
	return cfg, err
}

// LxcSetConfig changes a container's configuration (synchronous PUT).
func (c *Client) LxcSetConfig(ctx context.Context, node string, vmid int, params *Params) error {
	return c.Put(ctx, lxcPath(node, vmid)+"/config", params, nil)
}

// LxcDelete destroys a stopped container.
func (c *Client) LxcDelete(ctx context.Context, node string, vmid int) (string, error) {
	q := NewParams().SetBool("purge", true).SetBool("destroy-unreferenced-disks", true)
	var upid string
	err := c.Delete(ctx, lxcPath(node, vmid), q, &upid)
	return upid, err
}

// LxcStatus reads a container's run state.
func (c *Client) LxcStatus(ctx context.Context, node string, vmid int) (VMStatus, error) {
	var s VMStatus
	err := c.Get(ctx, lxcPath(node, vmid)+"/status/current", nil, &s)
	return s, err
}

// LxcPower runs start, stop, shutdown or reboot on a container.
func (c *Client) LxcPower(ctx context.Context, node string, vmid int, op string, params *Params) (string, error) {
	var upid string
	err := c.Post(ctx, lxcPath(node, vmid)+"/status/"+PathEscape(op), params, &upid)
	return upid, err
}

// LxcResize grows a container volume ("rootfs", "mp0").
func (c *Client) LxcResize(ctx context.Context, node string, vmid int, disk, size string) (string, error) {
	var upid string
	err := c.Put(ctx, lxcPath(node, vmid)+"/resize", NewParams().Set("disk", disk).Set("size", size), &upid)
	return upid, err
}
