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
	return c.createGuest(ctx, node, "lxc", vmid, params)
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
	return c.deleteGuest(ctx, lxcPath(node, vmid))
}

// LxcStatus reads a container's run state.
func (c *Client) LxcStatus(ctx context.Context, node string, vmid int) (VMStatus, error) {
	return c.guestStatus(ctx, lxcPath(node, vmid))
}

// LxcPower runs start, stop, shutdown or reboot on a container.
func (c *Client) LxcPower(ctx context.Context, node string, vmid int, op string, params *Params) (string, error) {
	var upid string
	err := c.Post(ctx, lxcPath(node, vmid)+"/status/"+PathEscape(op), params, &upid)
	return upid, err
}

// LxcResize grows a container volume ("rootfs", "mp0").
func (c *Client) LxcResize(ctx context.Context, node string, vmid int, disk, size string) (string, error) {
	return c.resizeGuest(ctx, lxcPath(node, vmid), disk, size)
}

// The calls below are the same for a VM and a container: Proxmox's
// qemu-server and pve-container take the same parameters for them.

// createGuest creates a guest of typ ("qemu", "lxc") on node; vmid is
// added to params. It returns the task id.
func (c *Client) createGuest(ctx context.Context, node, typ string, vmid int, params *Params) (string, error) {
	p := NewParams().SetInt("vmid", vmid)
	for _, k := range params.Keys() {
		v, _ := params.Get(k)
		p.Set(k, v)
	}
	var upid string
	err := c.Post(ctx, "nodes/"+PathEscape(node)+"/"+typ, p, &upid)
	return upid, err
}

// deleteGuest destroys the stopped guest at path, purging it from jobs
// and destroying unreferenced disks.
func (c *Client) deleteGuest(ctx context.Context, path string) (string, error) {
	q := NewParams().SetBool("purge", true).SetBool("destroy-unreferenced-disks", true)
	var upid string
	err := c.Delete(ctx, path, q, &upid)
	return upid, err
}

// resizeGuest resizes the volume disk of the guest at path to size.
func (c *Client) resizeGuest(ctx context.Context, path, disk, size string) (string, error) {
	var upid string
	err := c.Put(ctx, path+"/resize", NewParams().Set("disk", disk).Set("size", size), &upid)
	return upid, err
}

// guestStatus reads the run state of the guest at path.
func (c *Client) guestStatus(ctx context.Context, path string) (VMStatus, error) {
	var s VMStatus
	err := c.Get(ctx, path+"/status/current", nil, &s)
	return s, err
}
