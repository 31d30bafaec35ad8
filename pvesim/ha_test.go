package pvesim

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"
)

// haSim starts a simulator with VM 100 and container 200 on pve1, both stopped.
func haSim(t *testing.T, opts Options) (*Server, *client) {
	t.Helper()
	srv := startSim(t, opts)
	for _, g := range []GuestSpec{
		{VMID: 100, Node: "pve1", Type: "qemu", Config: map[string]string{"name": "web", "memory": "1024", "net0": "virtio=BC:24:11:00:00:01,bridge=vmbr0"}},
		{VMID: 200, Node: "pve1", Type: "lxc", Config: map[string]string{"hostname": "ct", "memory": "512", "rootfs": "local-lvm:vm-200-disk-0,size=4G"}},
	} {
		mustAddGuest(t, srv, g)
	}
	return srv, newClient(t, srv)
}

// tasksOf lists the tasks of a node for one guest, oldest first, as "type user".
func tasksOf(c *client, node string, vmid string) []string {
	c.t.Helper()
	list := c.mustOK("GET", "/nodes/"+node+"/tasks", vals("vmid", vmid, "source", "all")).list(c.t)
	var out []string
	for i := len(list) - 1; i >= 0; i-- {
		user := list[i]["user"].(string)
		if tok, ok := list[i]["tokenid"].(string); ok {
			user += "!" + tok // listed tasks carry a token's user and token id apart
		}
		out = append(out, list[i]["type"].(string)+" "+user)
	}
	return out
}

func haTaskLog(c *client, upid string) string {
	c.t.Helper()
	return strings.Join(taskLog(c, upid), "\n")
}

func guestStatus(c *client, path string) string {
	c.t.Helper()
	return c.mustOK("GET", path+"/status/current", nil).obj(c.t)["status"].(string)
}

// TestHAResourceCalls checks list, create, read, update and delete of HA
// resources with pve-ha-manager's checks and error texts (API2/HA/Resources.pm).
func TestHAResourceCalls(t *testing.T) {
	_, c := haSim(t, Options{})
	steps := []struct {
		method, path string
		params       url.Values
		status       int
		want         string // error message, or a part of the answer
	}{
		{"POST", "/cluster/ha/resources", vals("sid", "101"), 500, "unable to detect SID from VMID - VM/CT 101 does not exist\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "vm:101"), 500, "resource 'vm:101' does not exist in cluster\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "vm:200"), 500, "resource 'vm:200' - guest with ID 200 is not a VM\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "ct:100"), 500, "resource 'ct:100' - guest with ID 100 is not a container\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "vm:5"), 500, "invalid VMID\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "foo:100"), 500, "unknown section type 'foo'\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "100", "type", "ct"), 500, "types does not match\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "100", "group", "g1"), 500, "invalid parameter 'group': ha groups have been migrated to rules\n"},
		{"POST", "/cluster/ha/resources", vals("sid", "vm 100"), 400, "value does not look like a valid ha resource id"},
		{"POST", "/cluster/ha/resources", vals("sid", "100", "state", "running"), 400, "value 'running' does not have a value in the enumeration"},
		{"POST", "/cluster/ha/resources", vals("sid", "100", "state", "stopped", "max_restart", "3", "comment", "db"), 200, "null"},
		{"POST", "/cluster/ha/resources", vals("sid", "vm:100"), 500, "create resource failed: resource ID 'vm:100' already defined\n"},
		{"GET", "/cluster/ha/resources/100", nil, 200, `"max_restart":3`},
		{"GET", "/cluster/ha/resources/vm:100", nil, 200, `"state":"stopped"`},
		{"GET", "/cluster/ha/resources/ct:200", nil, 500, "no such resource 'ct:200'\n"},
		{"PUT", "/cluster/ha/resources/vm:100", vals("digest", "0000"), 500, "update resources config failed: detected modified configuration - file changed by other user? Try again.\n"},
		{"PUT", "/cluster/ha/resources/vm:100", vals("delete", "nodes"), 500, "update resources config failed: no such option 'nodes'\n"},
		{"PUT", "/cluster/ha/resources/ct:200", vals("state", "started"), 500, "update resources config failed: no such resource 'ct:200'\n"},
		{"PUT", "/cluster/ha/resources/100", vals("failback", "0", "delete", "comment"), 200, "null"},
		{"GET", "/cluster/ha/resources/100", nil, 200, `"failback":0`},
		{"GET", "/cluster/ha/resources", vals("type", "ct"), 200, "[]"},
		{"GET", "/cluster/ha/resources", nil, 200, `"sid":"vm:100"`},
		{"DELETE", "/cluster/ha/resources/ct:200", nil, 500, "cannot delete service 'ct:200', not HA managed!\n"},
		{"DELETE", "/cluster/ha/resources/100", nil, 200, "null"},
		{"GET", "/cluster/ha/resources", nil, 200, "[]"},
	}
	for i, st := range steps {
		r := c.do(st.method, st.path, st.params)
		got := string(r.Data)
		if r.Status != 200 {
			got = r.Message
			for _, e := range r.Errors {
				got += e
			}
		}
		if r.Status != st.status || !strings.Contains(got, st.want) || (st.status == 500 && got != st.want) {
			t.Fatalf("step %d %s %s %v: %d %q, want %d %q", i, st.method, st.path, st.params, r.Status, got, st.status, st.want)
		}
	}
}

// TestHAResourceReadBack checks the read-back: only the keys written, typed
// as SectionConfig's check_value types them, with the file's digest.
func TestHAResourceReadBack(t *testing.T) {
	_, c := haSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "ct:200", "failback", "1", "max_relocate", "0"))
	got := c.mustOK("GET", "/cluster/ha/resources/ct:200", nil).obj(t)
	digest, _ := got["digest"].(string)
	delete(got, "digest")
	want := map[string]any{"sid": "ct:200", "type": "ct", "failback": float64(1), "max_relocate": float64(0)}
	if len(got) != len(want) || len(digest) != 40 {
		t.Fatalf("read back %v (digest %q), want %v", got, digest, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	c.mustOK("PUT", "/cluster/ha/resources/ct:200", vals("state", "stopped", "digest", digest))
	if d := c.mustOK("GET", "/cluster/ha/resources/ct:200", nil).obj(t)["digest"]; d == digest {
		t.Fatal("digest did not change with the file")
	}
}

// TestHAPowerCallsGoThroughTheHAStack checks qemu-server's and
// pve-container's HA branches: start becomes a hastart task that sets the
// requested state, shutdown and stop become hastop tasks that queue "stop
// <sid> <timeout>" (0 for stop: a hard stop), and the LRM does the work in
// qmstart/qmshutdown/qmstop (vz...) tasks of root@pam.
func TestHAPowerCallsGoThroughTheHAStack(t *testing.T) {
	for _, tc := range []struct {
		path, sid, vmid, what, prefix string
	}{
		{"/nodes/pve1/qemu/100", "vm:100", "100", "VM", "qm"},
		{"/nodes/pve1/lxc/200", "ct:200", "200", "CT", "vz"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, c := haSim(t, Options{})
			c.mustOK("POST", "/cluster/ha/resources", vals("sid", tc.sid, "state", "stopped"))
			user := testTokenID

			upid := c.mustOK("POST", tc.path+"/status/start", nil).str(t)
			if info, _ := ParseUPID(upid); info.Type != "hastart" {
				t.Fatalf("start made a %s task", info.Type)
			}
			if st := c.waitTask(upid); st != "OK" {
				t.Fatalf("hastart: %s", st)
			}
			if log := haTaskLog(c, upid); log != "Requesting HA start for "+tc.what+" "+tc.vmid+"\nTASK OK" {
				t.Fatalf("hastart log %q", log)
			}
			if st := c.mustOK("GET", "/cluster/ha/resources/"+tc.sid, nil).obj(t)["state"]; st != "started" {
				t.Fatalf("requested state after start: %v", st)
			}
			if guestStatus(c, tc.path) != "running" {
				t.Fatal("the HA stack did not start the guest")
			}
			ha := c.mustOK("GET", tc.path+"/status/current", nil).obj(t)["ha"].(map[string]any)
			if ha["managed"] != float64(1) || ha["state"] != "started" {
				t.Fatalf("status/current ha = %v", ha)
			}

			upid = c.mustOK("POST", tc.path+"/status/shutdown", vals("timeout", "30")).str(t)
			if st := c.waitTask(upid); st != "OK" || !strings.HasPrefix(haTaskLog(c, upid), "Requesting HA stop for "+tc.what+" "+tc.vmid) {
				t.Fatalf("hastop: %s %q", st, haTaskLog(c, upid))
			}
			if guestStatus(c, tc.path) != "stopped" {
				t.Fatal("the HA stack did not shut the guest down")
			}
			if st := c.mustOK("GET", "/cluster/ha/resources/"+tc.sid, nil).obj(t)["state"]; st != "stopped" {
				t.Fatalf("requested state after the HA stop: %v", st)
			}

			c.task("POST", tc.path+"/status/start", nil)
			c.task("POST", tc.path+"/status/stop", nil)
			if guestStatus(c, tc.path) != "stopped" {
				t.Fatal("the HA stack did not stop the guest")
			}
			want := []string{
				"hastart " + user, tc.prefix + "start root@pam",
				"hastop " + user, tc.prefix + "shutdown root@pam",
				"hastart " + user, tc.prefix + "start root@pam",
				"hastop " + user, tc.prefix + "stop root@pam",
			}
			if got := tasksOf(c, "pve1", tc.vmid); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("tasks\n got %v\nwant %v", got, want)
			}
			if r := c.do("POST", tc.path+"/status/stop", vals("overrule-shutdown", "1")); tc.what == "VM" && (r.Status != 400 || r.Errors["overrule-shutdown"] != "Not applicable for HA resources.") {
				t.Fatalf("overrule-shutdown: %d %v", r.Status, r.Errors)
			}
		})
	}
}

// TestHAActsARoundLater follows a start on the simulator's clock: the
// hastart task ends at once with the VM still stopped; the HA manager
// starts it one round (10 s) later.
func TestHAActsARoundLater(t *testing.T) {
	clock := NewFakeClock(time.Unix(1_750_000_000, 0))
	srv, c := haSim(t, Options{TaskSpeed: 1, Clock: clock})
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "100", "state", "stopped"))
	waitSleepers(t, clock, 1, "no HA round scheduled")
	clock.Advance(haRoundDelay)
	waitFor(t, func() bool { return haServiceState(srv, "vm:100") == "stopped" })

	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/status/start", nil).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatalf("hastart: %s", st)
	}
	if guestStatus(c, "/nodes/pve1/qemu/100") != "stopped" {
		t.Fatal("the VM runs before the HA manager's round")
	}
	cur := haServiceEntry(c, "vm:100")
	if cur["request_state"] != "started" || cur["state"] != "starting" || cur["crm_state"] != "stopped" {
		t.Fatalf("ha status before the round: %v", cur)
	}
	waitSleepers(t, clock, 1, "no HA round scheduled")
	clock.Advance(haRoundDelay)
	// The LRM's qmstart sleeps, and the manager has its next round planned.
	waitSleepers(t, clock, 2, "the LRM's start never ran")
	clock.Advance(durStart)
	waitFor(t, func() bool { return guestStatus(c, "/nodes/pve1/qemu/100") == "running" })
	waitFor(t, func() bool { return haServiceEntry(c, "vm:100")["state"] == "started" })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		if cond() {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("condition not reached")
}

func haServiceState(srv *Server, sid string) string {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	if sv := srv.ha().Services[sid]; sv != nil {
		return sv.State
	}
	return ""
}

func haServiceEntry(c *client, sid string) map[string]any {
	c.t.Helper()
	for _, e := range c.mustOK("GET", "/cluster/ha/status/current", nil).list(c.t) {
		if e["id"] == "service:"+sid {
			return e
		}
	}
	return nil
}

// TestHADestroyNeedsPurge checks destroy_vm for an HA resource: refused
// without purge, and with purge the resource leaves the HA configuration.
func TestHADestroyNeedsPurge(t *testing.T) {
	for _, tc := range []struct{ path, sid, what, vmid string }{
		{"/nodes/pve1/qemu/100", "vm:100", "VM", "100"},
		{"/nodes/pve1/lxc/200", "ct:200", "CT", "200"},
	} {
		t.Run(tc.what, func(t *testing.T) {
			_, c := haSim(t, Options{})
			c.mustOK("POST", "/cluster/ha/resources", vals("sid", tc.sid, "state", "stopped"))
			r := c.do("DELETE", tc.path, nil)
			want := "unable to remove " + tc.what + " " + tc.vmid + " - used in HA resources and purge parameter not set.\n"
			if r.Status != 500 || r.Message != want {
				t.Fatalf("destroy without purge: %d %q", r.Status, r.Message)
			}
			upid := c.mustOK("DELETE", tc.path, vals("purge", "1")).str(t)
			if st := c.waitTask(upid); st != "OK" {
				t.Fatalf("destroy: %s", st)
			}
			log := haTaskLog(c, upid)
			if !strings.Contains(log, "purging "+tc.what+" "+tc.vmid+" from related configurations..\nNOTE: removed "+tc.what+" "+tc.vmid+" from HA resource configuration.") {
				t.Fatalf("destroy log %q", log)
			}
			if l := c.mustOK("GET", "/cluster/ha/resources", nil).list(t); len(l) != 0 {
				t.Fatalf("HA resources after the purge: %v", l)
			}
		})
	}
}

// TestHAFailedStartsEndInError checks the recovery policy: a start that
// fails 1+max_restart times puts the service in the error state, where
// only "disabled" is accepted (check_service_state), so a start request
// fails its hastart task.
func TestHAFailedStartsEndInError(t *testing.T) {
	srv, c := haSim(t, Options{})
	if err := srv.MutateGuest(100, func(conf map[string]string) { conf["net0"] = "virtio=BC:24:11:00:00:01,bridge=vmbr7" }); err != nil {
		t.Fatal(err)
	}
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "100", "max_restart", "1"))
	if got := tasksOf(c, "pve1", "100"); strings.Join(got, ",") != "qmstart root@pam,qmstart root@pam" {
		t.Fatalf("LRM tasks %v, want two failed starts", got)
	}
	if e := haServiceEntry(c, "vm:100"); e["state"] != "error" {
		t.Fatalf("service %v, want error", e)
	}
	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/status/start", nil).str(t)
	if st := c.waitTask(upid); st != "command 'ha-manager set vm:100 --state started' failed: exit code 255" {
		t.Fatalf("hastart in error state: %q", st)
	}
	if !strings.Contains(haTaskLog(c, upid), "service 'vm:100' in error state, must be disabled and fixed first") {
		t.Fatalf("hastart log %q", haTaskLog(c, upid))
	}
	r := c.do("PUT", "/cluster/ha/resources/vm:100", vals("state", "stopped"))
	if r.Status != 500 || r.Message != "service 'vm:100' in error state, must be disabled and fixed first\n" {
		t.Fatalf("update in error state: %d %q", r.Status, r.Message)
	}
	c.mustOK("PUT", "/cluster/ha/resources/vm:100", vals("state", "disabled"))
	if e := haServiceEntry(c, "vm:100"); e["crm_state"] != "stopped" || e["state"] != "disabled" {
		t.Fatalf("service after disabling: %v", e)
	}
}

// TestHAIgnoredBypassesTheStack checks state "ignored": API calls act
// directly, as for a guest without HA.
func TestHAIgnoredBypassesTheStack(t *testing.T) {
	_, c := haSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "100", "state", "ignored"))
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)
	if got := tasksOf(c, "pve1", "100"); strings.Join(got, ",") != "qmstart "+testTokenID {
		t.Fatalf("tasks %v", got)
	}
	if ha := c.mustOK("GET", "/nodes/pve1/qemu/100/status/current", nil).obj(t)["ha"].(map[string]any); ha["managed"] != float64(0) {
		t.Fatalf("ha %v", ha)
	}
}

// TestHAManagedCreate checks create's "ha-managed" option: the guest is
// added with the requested state of its start option, and a VM's autostart
// goes through the HA stack.
func TestHAManagedCreate(t *testing.T) {
	srv, c := haSim(t, Options{})
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst", Size: 100 << 20})
	upid := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "101", "memory", "512", "start", "1", "ha-managed", "1")).str(t)
	if st := c.waitTask(upid); st != "OK" || !strings.Contains(haTaskLog(c, upid), "Add as HA resource\nExecute autostart") {
		t.Fatalf("create: %s %q", st, haTaskLog(c, upid))
	}
	c.task("POST", "/nodes/pve1/lxc", vals("vmid", "201", "ostemplate", "local:vztmpl/debian-12-standard_12.7-1_amd64.tar.zst",
		"rootfs", "local-lvm:4", "ha-managed", "1"))
	for sid, want := range map[string]string{"vm:101": "started", "ct:201": "stopped"} {
		if st := c.mustOK("GET", "/cluster/ha/resources/"+sid, nil).obj(t)["state"]; st != want {
			t.Fatalf("%s state %v, want %s", sid, st, want)
		}
	}
	if got := tasksOf(c, "pve1", "101"); strings.Join(got, ",") != "qmcreate "+testTokenID+",hastart "+testTokenID+",qmstart root@pam" {
		t.Fatalf("tasks of 101: %v", got)
	}
}

// TestHAStateIsSaved checks that HA resources and the manager's status survive a restart.
func TestHAStateIsSaved(t *testing.T) {
	srv, c := haSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "100", "comment", "keep"))
	srv2 := reloaded(t, srv)
	c2 := newClient(t, srv2)
	if r := c2.mustOK("GET", "/cluster/ha/resources/vm:100", nil).obj(t); r["comment"] != "keep" {
		t.Fatalf("restored resource %v", r)
	}
	if e := haServiceEntry(c2, "vm:100"); e["state"] != "started" {
		t.Fatalf("restored service %v", e)
	}
}

// TestHAStateInClusterResources checks "hastate" in /cluster/resources
// (API2/Cluster.pm resources): the CRM's service state, or the requested
// state of a resource the CRM does not track (ignored), and nothing for a
// guest outside HA.
func TestHAStateInClusterResources(t *testing.T) {
	_, c := haSim(t, Options{})
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "100", "state", "stopped"))
	c.mustOK("POST", "/cluster/ha/resources", vals("sid", "200", "state", "ignored"))
	got := map[float64]any{}
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(t) {
		got[e["vmid"].(float64)] = e["hastate"]
	}
	if got[100] != "stopped" || got[200] != "ignored" {
		t.Fatalf("hastate %v", got)
	}
	c.mustOK("DELETE", "/cluster/ha/resources/200", nil)
	for _, e := range c.mustOK("GET", "/cluster/resources", vals("type", "vm")).list(t) {
		if _, ok := e["hastate"]; ok && e["vmid"] == float64(200) {
			t.Fatalf("hastate of a guest outside HA: %v", e)
		}
	}
}

// TestHAPrivileges checks who may do what: the HA configuration needs
// Sys.Audit to read and Sys.Console to change (API2/HA/Resources.pm), while
// starting and stopping an HA-managed guest needs only VM.PowerMgmt, as
// the HA request runs as root in the hastart/hastop worker.
func TestHAPrivileges(t *testing.T) {
	srv, c := haSim(t, Options{TokenPrivileges: []string{"VM.PowerMgmt", "VM.Audit"}})
	srv.mu.Lock()
	srv.ha().Resources["vm:100"] = map[string]string{"type": "vm", "state": "stopped"}
	srv.ha().Order = []string{"vm:100"}
	srv.haKick()
	srv.mu.Unlock()
	for _, tc := range []struct{ method, path, priv string }{
		{"GET", "/cluster/ha/resources", "Sys.Audit"},
		{"POST", "/cluster/ha/resources", "Sys.Console"},
		{"PUT", "/cluster/ha/resources/vm:100", "Sys.Console"},
		{"DELETE", "/cluster/ha/resources/vm:100", "Sys.Console"},
	} {
		params := vals("sid", "vm:100")
		if tc.method != "POST" {
			params = nil
		}
		r := c.do(tc.method, tc.path, params)
		if r.Status != 403 || r.Message != "Permission check failed (/, "+tc.priv+")\n" {
			t.Errorf("%s %s: %d %q, want 403 for %s", tc.method, tc.path, r.Status, r.Message, tc.priv)
		}
	}
	c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)
	if guestStatus(c, "/nodes/pve1/qemu/100") != "running" {
		t.Fatal("a token with VM.PowerMgmt could not start an HA-managed VM")
	}
}

// A guest that ignores shutdowns: the HA stack's shutdown of a VM is forced
// at the timeout (PVEVM.pm shutdown: forceStop), that of a container is not
// (PVECT.pm): the container keeps running and its service goes to the error
// state (LRM.pm exec_resource_agent: still running is an error).
func TestHAShutdownOfAGuestThatIgnoresIt(t *testing.T) {
	for _, tc := range []struct {
		path, sid, vmid, task, wantLog, wantStatus, wantState string
	}{
		{"/nodes/pve1/qemu/100", "vm:100", "100", "qmshutdown", "VM still running - terminating now with SIGTERM", "stopped", "stopped"},
		{"/nodes/pve1/lxc/200", "ct:200", "200", "vzshutdown", "command 'lxc-stop -n 200 --nokill --timeout 30' failed: exit code 1", "running", "error"},
	} {
		t.Run(tc.sid, func(t *testing.T) {
			srv, c := haSim(t, Options{})
			c.mustOK("POST", "/cluster/ha/resources", vals("sid", tc.sid, "state", "started"))
			id, _ := strconv.Atoi(tc.vmid)
			if err := srv.SetGuestIgnoresShutdown(id, true); err != nil {
				t.Fatal(err)
			}
			c.task("POST", tc.path+"/status/shutdown", vals("timeout", "30"))
			if got := guestStatus(c, tc.path); got != tc.wantStatus {
				t.Fatalf("after the HA shutdown the guest is %s, want %s", got, tc.wantStatus)
			}
			if st := haServiceState(srv, tc.sid); st != tc.wantState {
				t.Fatalf("service state %s, want %s", st, tc.wantState)
			}
			var upid string
			for _, e := range c.mustOK("GET", "/nodes/pve1/tasks", vals("vmid", tc.vmid, "typefilter", tc.task)).list(t) {
				upid = e["upid"].(string)
			}
			if log := haTaskLog(c, upid); !strings.Contains(log, tc.wantLog) {
				t.Fatalf("%s log %q", tc.task, log)
			}
		})
	}
}

// A rollback stops the guest and rolls the volumes back under lock
// "rollback": the LRM, finding a started service stopped, starts it, and
// that start fails on the lock (AbstractConfig.pm snapshot_rollback, LRM.pm
// exec_resource_agent); start=1 is a request to the HA stack. An ignored
// resource is left alone.
func TestHARollbackRacesTheLRM(t *testing.T) {
	for _, state := range []string{"started", "ignored"} {
		t.Run(state, func(t *testing.T) {
			_, c := haSim(t, Options{})
			c.mustOK("POST", "/cluster/ha/resources", vals("sid", "vm:100", "state", state, "max_restart", "0"))
			if state == "ignored" {
				c.task("POST", "/nodes/pve1/qemu/100/status/start", nil)
			}
			mustTaskOK(t, c, "POST", "/nodes/pve1/qemu/100/snapshot", vals("snapname", "s1"))
			st := c.task("POST", "/nodes/pve1/qemu/100/snapshot/s1/rollback", vals("start", "1"))
			failedStarts := 0
			for _, e := range c.mustOK("GET", "/nodes/pve1/tasks", vals("vmid", "100", "typefilter", "qmstart")).list(t) {
				if e["status"] != "OK" {
					failedStarts++
				}
			}
			switch state {
			case "started":
				if failedStarts != 1 || st != "command 'ha-manager set vm:100 --state started' failed: exit code 255" {
					t.Fatalf("rollback %q with %d failed LRM starts, want the LRM's start to fail on the lock and the service in error", st, failedStarts)
				}
			case "ignored":
				if failedStarts != 0 || st != "OK" || guestStatus(c, "/nodes/pve1/qemu/100") != "running" {
					t.Fatalf("rollback %q with %d failed starts", st, failedStarts)
				}
			}
		})
	}
}
