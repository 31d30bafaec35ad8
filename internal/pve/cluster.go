package pve

import (
	"context"
	"fmt"
	"strconv"
)

// Version reads GET /version (also a cheap check of endpoint and token).
func (c *Client) Version(ctx context.Context) (Version, error) {
	var v Version
	err := c.Get(ctx, "version", nil, &v)
	return v, err
}

// Nodes lists the cluster's nodes.
func (c *Client) Nodes(ctx context.Context) ([]Node, error) {
	var n []Node
	err := c.Get(ctx, "nodes", nil, &n)
	return n, err
}

// ClusterResources reads GET /cluster/resources, optionally filtered by type
// ("vm", "storage", "node", "sdn"; "" for everything). Since pve-manager
// 9.0.12 zones come as type "network" entries, only without a filter.
func (c *Client) ClusterResources(ctx context.Context, typ string) ([]Resource, error) {
	var q *Params
	if typ != "" {
		q = NewParams().Set("type", typ)
	}
	var r []Resource
	err := c.Get(ctx, "cluster/resources", q, &r)
	return r, err
}

// NextID asks the cluster for a free VMID.
func (c *Client) NextID(ctx context.Context) (int, error) {
	var s Int
	if err := c.Get(ctx, "cluster/nextid", nil, &s); err != nil {
		return 0, err
	}
	if s <= 0 {
		return 0, fmt.Errorf("pve: cluster/nextid answered %d", s)
	}
	return int(s), nil
}

// VMIDFree reports whether vmid is unused, using nextid's vmid check.
func (c *Client) VMIDFree(ctx context.Context, vmid int) (bool, error) {
	var s Int
	err := c.Get(ctx, "cluster/nextid", NewParams().Set("vmid", strconv.Itoa(vmid)), &s)
	if err == nil {
		return true, nil
	}
	if pe, ok := err.(*ParamError); ok && pe.Params["vmid"] != "" {
		return false, nil
	}
	return false, err
}
