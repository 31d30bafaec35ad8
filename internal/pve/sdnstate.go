package pve

import (
	"context"
	"encoding/json"
	"sort"
)

// SDNEntry is a zone, vnet or subnet as GET /cluster/sdn/...?pending=1
// shows it: the applied (running) values, the values it will have once the
// pending configuration is applied, and its pending state.
type SDNEntry struct {
	ID string
	// State is "new", "changed", "deleted", or "" when the running
	// configuration matches.
	State string
	// Running are the applied values (empty for a new object).
	Running map[string]string
	// Config are the values after the pending changes (empty for an object
	// whose deletion is pending).
	Config map[string]string
}

// Pending reports whether the entry has changes that are not applied yet.
func (e SDNEntry) Pending() bool { return e.State != "" }

// SDNPending lists zones ("zones"), vnets ("vnets") or a vnet's subnets
// ("vnets/{vnet}/subnets") with their pending state.
func (c *Client) SDNPending(ctx context.Context, kind string) ([]SDNEntry, error) {
	var raw []map[string]json.RawMessage
	if err := c.Get(ctx, "cluster/sdn/"+kind, NewParams().SetBool("pending", true), &raw); err != nil {
		return nil, err
	}
	idKey := map[string]string{"zones": "zone", "vnets": "vnet"}[kind]
	if idKey == "" {
		idKey = "subnet"
	}
	out := make([]SDNEntry, 0, len(raw))
	for _, r := range raw {
		e := SDNEntry{Running: map[string]string{}, Config: map[string]string{}}
		var pending map[string]json.RawMessage
		for k, v := range r {
			switch k {
			case "pending":
				_ = json.Unmarshal(v, &pending)
			case "state":
				e.State, _ = scalarString(v)
			case "digest":
			default:
				if s, ok := sdnValue(v); ok {
					e.Running[k] = s
				}
			}
		}
		e.ID = e.Running[idKey]
		if idKey == "subnet" && e.Running["id"] != "" {
			e.ID = e.Running["id"]
		}
		if e.State != "deleted" {
			for k, v := range e.Running {
				e.Config[k] = v
			}
			for k, v := range pending {
				s, ok := sdnValue(v)
				switch {
				case !ok:
				case s == "deleted":
					delete(e.Config, k)
				default:
					e.Config[k] = s
				}
			}
		}
		if e.State == "new" {
			// A new object has no running values: only its identity is listed
			// beside the pending ones.
			for k := range e.Running {
				if _, isPending := pending[k]; isPending {
					delete(e.Running, k)
				}
			}
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// sdnValue renders a value as a string; arrays (a subnet's dhcp-range) are
// joined with newlines.
func sdnValue(v json.RawMessage) (string, bool) {
	var arr []json.RawMessage
	if len(v) > 0 && v[0] == '[' && json.Unmarshal(v, &arr) == nil {
		s := ""
		for i, x := range arr {
			xs, _ := scalarString(x)
			if i > 0 {
				s += "\n"
			}
			s += xs
		}
		return s, true
	}
	return scalarString(v)
}

// SDNSubnetCreate adds a subnet (CIDR) to a vnet; params carry the options.
func (c *Client) SDNSubnetCreate(ctx context.Context, vnet, cidr string, params *Params) error {
	p := NewParams().Set("subnet", cidr).Set("type", "subnet")
	copyParams(p, params)
	return c.Post(ctx, "cluster/sdn/vnets/"+PathEscape(vnet)+"/subnets", p, nil)
}

// SDNSet changes an object: params replace keys, del removes keys. kind is
// "zones", "vnets" or "vnets/{vnet}/subnets".
func (c *Client) SDNSet(ctx context.Context, kind, id string, params *Params, del []string) error {
	p := NewParams()
	copyParams(p, params)
	if len(del) > 0 {
		p.Set("delete", joinComma(del))
	}
	return c.Put(ctx, "cluster/sdn/"+kind+"/"+PathEscape(id), p, nil)
}

func copyParams(dst, src *Params) {
	for _, k := range src.Keys() {
		v, _ := src.Get(k)
		if more := src.more[k]; len(more) > 0 {
			dst.SetList(k, append([]string{v}, more...))
			continue
		}
		dst.Set(k, v)
	}
}
