package pvesim

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
)

// taskLog returns the lines of a task's log.
func taskLog(c *client, upid string) []string {
	c.t.Helper()
	info, _ := ParseUPID(upid)
	var out []string
	for _, l := range c.mustOK("GET", "/nodes/"+info.Node+"/tasks/"+url.PathEscape(upid)+"/log", vals("limit", "0")).list(c.t) {
		out = append(out, l["t"].(string))
	}
	return out
}

// TestQemuStartChecksBridges starts VMs whose NICs use bridges that exist
// or not: a missing bridge fails the start as QEMU's tap script does.
func TestQemuStartChecksBridges(t *testing.T) {
	srv, c := newSim(t, Options{})
	// vmbr7 is staged on pve1 but not applied; vmbr8 is applied; vnet10 is an
	// applied SDN vnet and vnet20 a defined but unapplied one.
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr8", "type", "bridge", "autostart", "1"))
	c.task("PUT", "/nodes/pve1/network", nil)
	c.mustOK("POST", "/nodes/pve1/network", vals("iface", "vmbr7", "type", "bridge", "autostart", "1"))
	c.mustOK("POST", "/cluster/sdn/zones", vals("zone", "flat", "type", "simple"))
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "vnet10", "zone", "flat"))
	c.task("PUT", "/cluster/sdn", nil)
	c.mustOK("POST", "/cluster/sdn/vnets", vals("vnet", "vnet20", "zone", "flat"))

	const failed = "start failed: QEMU exited with code 1"
	tests := []struct {
		name   string
		nics   []string // key=value pairs
		status string   // task exit status
		// logs are lines the failed start logs.
		logs []string
	}{
		{"host bridge", []string{"net0", "virtio,bridge=vmbr0"}, "OK", nil},
		{"applied new bridge", []string{"net0", "virtio,bridge=vmbr8"}, "OK", nil},
		{"applied vnet", []string{"net0", "virtio,bridge=vnet10"}, "OK", nil},
		{"user networking", []string{"net0", "e1000"}, "OK", nil},
		{"missing bridge", []string{"net0", "virtio,bridge=vmbr9"}, failed, []string{
			"bridge 'vmbr9' does not exist",
			"kvm: -netdev type=tap,id=net0,ifname=tap%[1]di0,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown,vhost=on: network script /usr/libexec/qemu-server/pve-bridge failed with status 512",
		}},
		{"staged bridge", []string{"net0", "virtio,bridge=vmbr7"}, failed, []string{"bridge 'vmbr7' does not exist"}},
		{"unapplied vnet", []string{"net0", "virtio,bridge=vnet20"}, failed, []string{"bridge 'vnet20' does not exist"}},
		{"second NIC, e1000", []string{"net0", "virtio,bridge=vmbr0", "net1", "e1000,bridge=vmbr9"}, failed, []string{
			"kvm: -netdev type=tap,id=net1,ifname=tap%[1]di1,script=/usr/libexec/qemu-server/pve-bridge,downscript=/usr/libexec/qemu-server/pve-bridgedown: network script /usr/libexec/qemu-server/pve-bridge failed with status 512",
		}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(t, srv)
			vmid := 100 + i
			id := itoa(vmid)
			params := vals("vmid", itoa(vmid))
			for j := 0; j+1 < len(tt.nics); j += 2 {
				params.Set(tt.nics[j], tt.nics[j+1])
			}
			mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", params)
			upid := c.mustOK("POST", "/nodes/pve1/qemu/"+id+"/status/start", nil).str(t)
			if st := c.waitTask(upid); st != tt.status {
				t.Fatalf("start: %q, want %q", st, tt.status)
			}
			lines := taskLog(c, upid)
			for _, want := range tt.logs {
				if strings.Contains(want, "%[1]d") {
					want = fmt.Sprintf(want, vmid)
				}
				if !slices.Contains(lines, want) {
					t.Errorf("log %q lacks %q", lines, want)
				}
			}
			if tt.status != "OK" && lines[len(lines)-1] != "TASK ERROR: "+failed {
				t.Errorf("last log line %q", lines[len(lines)-1])
			}
			wantStatus := "running"
			if tt.status != "OK" {
				wantStatus = "stopped"
			}
			if st := c.mustOK("GET", "/nodes/pve1/qemu/"+id+"/status/current", nil).obj(t); st["status"] != wantStatus {
				t.Errorf("status %v, want %s", st["status"], wantStatus)
			}
		})
	}

	// start=1 on create: the create succeeds, the failed start is logged
	// and the VM stays stopped.
	upid := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "200", "net0", "virtio,bridge=vmbr9", "start", "1")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("create with start: %q", st)
	}
	if lines := taskLog(c, upid); !slices.Contains(lines, "bridge 'vmbr9' does not exist") || !slices.Contains(lines, failed) {
		t.Errorf("create log %q", lines)
	}
	if st := c.mustOK("GET", "/nodes/pve1/qemu/200/status/current", nil).obj(t); st["status"] != "stopped" {
		t.Errorf("created with start=1 on a missing bridge: %v", st["status"])
	}

	// A reboot that brings a pending NIC change onto a missing bridge: the
	// reboot task succeeds (qmeventd starts the VM outside it), the VM stays down.
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu", vals("vmid", "201", "net0", "virtio,bridge=vmbr0", "start", "1"))
	g, _ := srv.Guest(201)
	net0 := strings.Replace(g.Config["net0"], "bridge=vmbr0", "bridge=vmbr9", 1)
	c.mustOK("PUT", "/nodes/pve1/qemu/201/config", vals("net0", net0))
	mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/201/status/reboot", nil)
	if st := c.mustOK("GET", "/nodes/pve1/qemu/201/status/current", nil).obj(t); st["status"] != "stopped" {
		t.Errorf("after reboot onto a missing bridge: %v", st["status"])
	}
}
