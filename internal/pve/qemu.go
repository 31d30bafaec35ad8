package pve

import (
	"context"
	"strconv"
)

func qemuPath(node string, vmid int) string {
	return "nodes/" + PathEscape(node) + "/qemu/" + strconv.Itoa(vmid)
}

// QemuCreate creates a VM (POST /nodes/{node}/qemu) and returns the task id.
// vmid is added to params.
func (c *Client) QemuCreate(ctx context.Context, node string, vmid int, params *Params) (string, error) {
	return c.createGuest(ctx, node, "qemu", vmid, params)
}

// QemuConfig reads a VM's configuration. With current, pending values are
// not shown.
func (c *Client) QemuConfig(ctx context.Context, node string, vmid int, current bool) (ConfigValues, error) {
	var q *Params
	if current {
		q = NewParams().SetBool("current", true)
	}
	var cfg ConfigValues
	err := c.Get(ctx, qemuPath(node, vmid)+"/config", q, &cfg)
	return cfg, err
}

// QemuSetConfig changes a VM's configuration synchronously (PUT).
func (c *Client) QemuSetConfig(ctx context.Context, node string, vmid int, params *Params) error {
	return c.Put(ctx, qemuPath(node, vmid)+"/config", params, nil)
}

// QemuSetConfigAsync changes a VM's configuration through a task (POST), as
// needed for changes that allocate disks; it returns the task id.
func (c *Client) QemuSetConfigAsync(ctx context.Context, node string, vmid int, params *Params) (string, error) {
	var upid string
	err := c.Post(ctx, qemuPath(node, vmid)+"/config", params, &upid)
	return upid, err
}

// QemuPending lists current and pending values.
func (c *Client) QemuPending(ctx context.Context, node string, vmid int) ([]PendingEntry, error) {
	var p []PendingEntry
	err := c.Get(ctx, qemuPath(node, vmid)+"/pending", nil, &p)
	return p, err
}

// QemuDelete destroys a VM (it must be stopped), purging it from jobs and
// destroying unreferenced disks.
func (c *Client) QemuDelete(ctx context.Context, node string, vmid int) (string, error) {
	return c.deleteGuest(ctx, qemuPath(node, vmid))
}

// QemuResize grows a disk to size ("20G") or by a delta ("+2G"). The task id
// is empty on servers that resize synchronously (7.x).
func (c *Client) QemuResize(ctx context.Context, node string, vmid int, disk, size string) (string, error) {
	return c.resizeGuest(ctx, qemuPath(node, vmid), disk, size)
}

// QemuTemplate converts a VM into a template.
func (c *Client) QemuTemplate(ctx context.Context, node string, vmid int) (string, error) {
	var upid string
	err := c.Post(ctx, qemuPath(node, vmid)+"/template", nil, &upid)
	return upid, err
}

// QemuTemplateDisk turns one more disk of a template into a base volume
// (POST .../template with disk=).
func (c *Client) QemuTemplateDisk(ctx context.Context, node string, vmid int, disk string) (string, error) {
	var upid string
	err := c.Post(ctx, qemuPath(node, vmid)+"/template", NewParams().Set("disk", disk), &upid)
	return upid, err
}

// CloneOptions are the parameters of a clone.
type CloneOptions struct {
	NewID   int
	Name    string
	Full    *bool  // nil: Proxmox's default (full for VMs, linked for templates)
	Storage string // full clones only
	Format  string // full clones only
	Target  string // target node
	Pool    string
	// Description replaces the source's, which Proxmox copies otherwise;
	// "" keeps the copy (Proxmox ignores an empty one).
	Description string
}

// QemuClone clones a VM or template.
func (c *Client) QemuClone(ctx context.Context, node string, vmid int, o CloneOptions) (string, error) {
	p := NewParams().SetInt("newid", o.NewID)
	if o.Name != "" {
		p.Set("name", o.Name)
	}
	if o.Full != nil {
		p.SetBool("full", *o.Full)
	}
	if o.Storage != "" {
		p.Set("storage", o.Storage)
	}
	if o.Format != "" {
		p.Set("format", o.Format)
	}
	if o.Target != "" {
		p.Set("target", o.Target)
	}
	if o.Pool != "" {
		p.Set("pool", o.Pool)
	}
	if o.Description != "" {
		p.Set("description", o.Description)
	}
	var upid string
	err := c.Post(ctx, qemuPath(node, vmid)+"/clone", p, &upid)
	return upid, err
}

// QemuStatus reads the current run state.
func (c *Client) QemuStatus(ctx context.Context, node string, vmid int) (VMStatus, error) {
	return c.guestStatus(ctx, qemuPath(node, vmid))
}

func (c *Client) qemuPower(ctx context.Context, node string, vmid int, op string, p *Params) (string, error) {
	var upid string
	err := c.Post(ctx, qemuPath(node, vmid)+"/status/"+op, p, &upid)
	return upid, err
}

// QemuStart starts a VM.
func (c *Client) QemuStart(ctx context.Context, node string, vmid int) (string, error) {
	return c.qemuPower(ctx, node, vmid, "start", nil)
}

// QemuStop stops a VM at once (power off).
func (c *Client) QemuStop(ctx context.Context, node string, vmid int) (string, error) {
	return c.qemuPower(ctx, node, vmid, "stop", nil)
}

// QemuShutdown asks the guest to shut down, waiting at most timeoutSec
// seconds (0: Proxmox's default); with forceStop the VM is stopped after.
func (c *Client) QemuShutdown(ctx context.Context, node string, vmid int, timeoutSec int, forceStop bool) (string, error) {
	p := NewParams()
	if timeoutSec > 0 {
		p.SetInt("timeout", timeoutSec)
	}
	if forceStop {
		p.SetBool("forceStop", true)
	}
	return c.qemuPower(ctx, node, vmid, "shutdown", p)
}

// QemuReboot reboots a VM, applying pending changes.
func (c *Client) QemuReboot(ctx context.Context, node string, vmid int) (string, error) {
	return c.qemuPower(ctx, node, vmid, "reboot", nil)
}
