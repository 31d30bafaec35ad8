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
