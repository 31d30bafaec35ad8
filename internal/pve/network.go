package pve

import "context"

// NetworkInterface is one entry of GET /nodes/{node}/network.
type NetworkInterface struct {
	Iface       string `json:"iface"`
	Type        string `json:"type"`
	Active      Int    `json:"active"`
	Autostart   Int    `json:"autostart"`
	BridgePorts string `json:"bridge_ports"`
	VLANAware   Int    `json:"bridge_vlan_aware"`
	CIDR        string `json:"cidr"`
	Gateway     string `json:"gateway"`
	Comments    string `json:"comments"`
	Pending     any    `json:"pending"`
}

func networkPath(node string) string { return "nodes/" + PathEscape(node) + "/network" }

// NetworkList lists a node's interfaces (including staged changes).
func (c *Client) NetworkList(ctx context.Context, node string) ([]NetworkInterface, error) {
	var n []NetworkInterface
	err := c.Get(ctx, networkPath(node), nil, &n)
	return n, err
}

// NetworkCreate stages a new interface; iface and type are in params.
func (c *Client) NetworkCreate(ctx context.Context, node string, params *Params) error {
	return c.Post(ctx, networkPath(node), params, nil)
}

// NetworkUpdate stages a change to an interface (type is required in params).
func (c *Client) NetworkUpdate(ctx context.Context, node, iface string, params *Params) error {
	return c.Put(ctx, networkPath(node)+"/"+PathEscape(iface), params, nil)
}

// NetworkDelete stages the removal of an interface.
func (c *Client) NetworkDelete(ctx context.Context, node, iface string) error {
	return c.Delete(ctx, networkPath(node)+"/"+PathEscape(iface), nil, nil)
}

// NetworkApply applies staged changes (a task).
func (c *Client) NetworkApply(ctx context.Context, node string) (string, error) {
	var upid string
	err := c.Put(ctx, networkPath(node), nil, &upid)
	return upid, err
}

// NetworkRevert drops staged changes.
func (c *Client) NetworkRevert(ctx context.Context, node string) error {
	return c.Delete(ctx, networkPath(node), nil, nil)
}
