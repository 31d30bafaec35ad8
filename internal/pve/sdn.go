package pve

import "context"

// SDNObject is a zone, vnet or subnet as listed by /cluster/sdn/*; the
// type-specific keys are kept in Raw.
type SDNObject struct {
	ID     string       `json:"-"`
	State  string       `json:"state"` // new, changed, deleted, "" when applied
	Type   string       `json:"type"`
	Digest string       `json:"digest"`
	Raw    ConfigValues `json:"-"`
}

func (c *Client) sdnList(ctx context.Context, path, idKey string) ([]SDNObject, error) {
	var raw []ConfigValues
	if err := c.Get(ctx, path, NewParams().SetBool("pending", true), &raw); err != nil {
		return nil, err
	}
	out := make([]SDNObject, 0, len(raw))
	for _, r := range raw {
		out = append(out, SDNObject{ID: r[idKey], State: r["state"], Type: r["type"], Digest: r["digest"], Raw: r})
	}
	return out, nil
}

// SDNZones lists zones with their pending state.
func (c *Client) SDNZones(ctx context.Context) ([]SDNObject, error) {
	return c.sdnList(ctx, "cluster/sdn/zones", "zone")
}

// SDNVnets lists vnets with their pending state.
func (c *Client) SDNVnets(ctx context.Context) ([]SDNObject, error) {
	return c.sdnList(ctx, "cluster/sdn/vnets", "vnet")
}

// SDNSubnets lists the subnets of a vnet.
func (c *Client) SDNSubnets(ctx context.Context, vnet string) ([]SDNObject, error) {
	return c.sdnList(ctx, "cluster/sdn/vnets/"+PathEscape(vnet)+"/subnets", "subnet")
}

// SDNCreate creates an object under kind ("zones", "vnets",
// "vnets/{vnet}/subnets").
func (c *Client) SDNCreate(ctx context.Context, kind string, params *Params) error {
	return c.Post(ctx, "cluster/sdn/"+kind, params, nil)
}

// SDNUpdate changes an object.
func (c *Client) SDNUpdate(ctx context.Context, kind, id string, params *Params) error {
	return c.Put(ctx, "cluster/sdn/"+kind+"/"+PathEscape(id), params, nil)
}

// SDNDelete removes an object.
func (c *Client) SDNDelete(ctx context.Context, kind, id string) error {
	return c.Delete(ctx, "cluster/sdn/"+kind+"/"+PathEscape(id), nil, nil)
}

// SDNApply applies pending SDN changes cluster-wide (a task).
func (c *Client) SDNApply(ctx context.Context) (string, error) {
	var upid string
	err := c.Put(ctx, "cluster/sdn", nil, &upid)
	return upid, err
}
