package pve

import (
	"context"
	"strconv"
)

// HAStatus is the "ha" object of a guest's status/current
// (PVE::HA::Config::get_service_status): managed is 1 for a guest in the
// HA resources whose requested state is not "ignored"; state is the CRM's
// state of its service (started, stopped, request_stop, error, ...).
type HAStatus struct {
	Managed Int    `json:"managed"`
	State   string `json:"state"`
}

// HASID is the HA resource id of a guest: "vm:100" or "ct:200".
func HASID(guestType string, vmid int) string {
	if guestType == "lxc" {
		return "ct:" + strconv.Itoa(vmid)
	}
	return "vm:" + strconv.Itoa(vmid)
}

// HADeleteResource removes a resource from the HA configuration (DELETE
// /cluster/ha/resources/{sid}); the guest keeps running as it is.
func (c *Client) HADeleteResource(ctx context.Context, sid string) error {
	return c.Delete(ctx, "cluster/ha/resources/"+PathEscape(sid), nil, nil)
}

// HAResource is an entry of the HA resources (GET
// /cluster/ha/resources/{sid}); State is the requested state, "" meaning
// the default, started.
type HAResource struct {
	SID   string `json:"sid"`
	State string `json:"state"`
}

// HAResource reads one HA resource.
func (c *Client) HAResource(ctx context.Context, sid string) (HAResource, error) {
	var r HAResource
	err := c.Get(ctx, "cluster/ha/resources/"+PathEscape(sid), nil, &r)
	return r, err
}

// HASetState sets the requested state of an HA resource (PUT
// /cluster/ha/resources/{sid}).
func (c *Client) HASetState(ctx context.Context, sid, state string) error {
	return c.Put(ctx, "cluster/ha/resources/"+PathEscape(sid), NewParams().Set("state", state), nil)
}

// HAServiceCRMState is the CRM's state of a service as GET
// /cluster/ha/status/current lists it ("" when the CRM does not manage
// it: not configured, ignored, or not taken over yet).
func (c *Client) HAServiceCRMState(ctx context.Context, sid string) (string, error) {
	var list []struct {
		ID       string `json:"id"`
		CRMState string `json:"crm_state"`
	}
	if err := c.Get(ctx, "cluster/ha/status/current", nil, &list); err != nil {
		return "", err
	}
	for _, e := range list {
		if e.ID == "service:"+sid {
			return e.CRMState, nil
		}
	}
	return "", nil
}
