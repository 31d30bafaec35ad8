package pve

import (
	"context"
	"encoding/json"
)

// NetworkState is a node's network configuration as GET
// /nodes/{node}/network returns it: the interfaces as they will be after
// the staged changes (interfaces.new), and the staged changes themselves as
// a unified diff ("" when nothing is staged).
type NetworkState struct {
	Interfaces []ConfigValues
	Changes    string
}

func (n *NetworkState) decodeEnvelope(raw []byte) error {
	var env struct {
		Data    []ConfigValues  `json:"data"`
		Changes json.RawMessage `json:"changes"`
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return err
	}
	n.Interfaces = env.Data
	n.Changes = ""
	if s, ok := scalarString(env.Changes); ok && s != "0" {
		n.Changes = s
	}
	return nil
}

// Interface returns the interface named iface, or nil.
func (n *NetworkState) Interface(iface string) ConfigValues {
	for _, i := range n.Interfaces {
		if i["iface"] == iface {
			return i
		}
	}
	return nil
}

// NetworkConfig reads a node's interfaces and its staged changes.
func (c *Client) NetworkConfig(ctx context.Context, node string) (*NetworkState, error) {
	var st NetworkState
	if err := c.Get(ctx, networkPath(node), nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// NetworkSet stages a change to an interface: all of params replace the
// interface's keys, and the keys in del are removed.
func (c *Client) NetworkSet(ctx context.Context, node, iface string, params *Params, del []string) error {
	p := NewParams()
	for _, k := range params.Keys() {
		v, _ := params.Get(k)
		p.Set(k, v)
	}
	if len(del) > 0 {
		p.Set("delete", joinComma(del))
	}
	return c.Put(ctx, networkPath(node)+"/"+PathEscape(iface), p, nil)
}

func joinComma(v []string) string {
	out := ""
	for i, s := range v {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}
