package pvesim

import (
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestUPIDShapeAndTaskEndpoints(t *testing.T) {
	_, c := newSim(t, Options{})
	upid := c.mustOK("POST", "/nodes/pve2/qemu", vals("vmid", "100")).str(t)
	re := regexp.MustCompile(`^UPID:pve2:[0-9A-F]{8}:[0-9A-F]{8}:[0-9A-F]{8}:qmcreate:100:root@pam!proxmops:$`)
	if !re.MatchString(upid) {
		t.Fatalf("UPID %q", upid)
	}
	st := c.mustOK("GET", "/nodes/pve2/tasks/"+url.PathEscape(upid)+"/status", nil).obj(t)
	if st["status"] != "stopped" || st["exitstatus"] != "OK" || st["type"] != "qmcreate" || st["id"] != "100" || st["node"] != "pve2" {
		t.Fatalf("status %v", st)
	}
	log := c.mustOK("GET", "/nodes/pve2/tasks/"+url.PathEscape(upid)+"/log", nil)
	lines := log.list(t)
	if len(lines) == 0 || lines[len(lines)-1]["t"] != "TASK OK" || lines[0]["n"] != float64(1) {
		t.Fatalf("log %v", lines)
	}
	list := c.mustOK("GET", "/nodes/pve2/tasks", vals("vmid", "100")).list(t)
	if len(list) != 1 || list[0]["upid"] != upid || list[0]["status"] != "OK" {
		t.Fatalf("task list %v", list)
	}
	if r := c.do("GET", "/nodes/pve2/tasks/UPID:bogus/status", nil); r.Status != 500 || r.Reason != "unable to parse worker upid 'UPID:bogus'" {
		t.Fatalf("bad upid: %d %q", r.Status, r.Reason)
	}
	// A failing task: its exit status is the error, its last log line TASK ERROR.
	upid = c.mustOK("PUT", "/nodes/pve2/qemu/100/resize", vals("disk", "scsi0", "size", "+1G")).str(t)
	if st := c.waitTask(upid); st != "disk 'scsi0' does not exist" {
		t.Fatalf("exitstatus %q", st)
	}
	lines = c.mustOK("GET", "/nodes/pve2/tasks/"+url.PathEscape(upid)+"/log", nil).list(t)
	if lines[len(lines)-1]["t"] != "TASK ERROR: disk 'scsi0' does not exist" {
		t.Fatalf("log %v", lines)
	}
}

func TestTaskRunsOnClock(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a", "scsi0": "local-lvm:vm-100-disk-0,size=8G"}})
	upid := c.mustOK("POST", "/nodes/pve1/qemu/100/status/start", nil).str(t)
	waitSleepers(t, clock, 1, "start task never slept")
	st := c.mustOK("GET", "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/status", nil).obj(t)
	if st["status"] != "running" {
		t.Fatalf("status %v", st)
	}
	clock.Advance(durStart)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatal(st)
	}
	if g, _ := srv.Guest(100); !g.Running {
		t.Fatal("guest not running")
	}
}

func TestGuestLockTimeout(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a", "scsi0": "local-lvm:vm-100-disk-0,size=8G"}})
	const lockErr = "can't lock file '/var/lock/qemu-server/lock-100.conf' - got timeout"

	// A synchronous call waits for the lock, then fails with 500.
	release := srv.HoldGuestLock(100)
	done := make(chan apiResp, 1)
	go func() { done <- c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")) }()
	waitSleepers(t, clock, 1, "PUT never waited for the lock")
	clock.Advance(lockTimeout)
	if r := <-done; r.Status != 500 || r.Reason != lockErr {
		t.Fatalf("PUT: %d %q", r.Status, r.Reason)
	}

	// A task waits for the lock too and fails with the same text.
	upid := c.mustOK("PUT", "/nodes/pve1/qemu/100/resize", vals("disk", "scsi0", "size", "+1G")).str(t)
	waitSleepers(t, clock, 1, "resize never waited for the lock")
	clock.Advance(lockTimeout)
	if st := c.waitTask(upid); st != lockErr {
		t.Fatalf("resize: %q", st)
	}

	// Released in time, the waiting call goes through.
	go func() { done <- c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")) }()
	waitSleepers(t, clock, 1, "PUT never waited for the lock")
	clock.Advance(3 * time.Second)
	release()
	if r := <-done; r.Status != 200 {
		t.Fatalf("PUT after release: %d %q", r.Status, r.Reason)
	}
	if g, _ := srv.Guest(100); g.Config["cores"] != "2" {
		t.Fatalf("config %v", g.Config)
	}
}

func TestCreateWithImportHoldsLock(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddVolume(t, srv, VolumeSpec{Node: "pve1", VolID: "local:import/big.qcow2", Size: 20 << 30})
	create := c.mustOK("POST", "/nodes/pve1/qemu", vals("vmid", "100", "scsi0", "local-lvm:0,import-from=local:import/big.qcow2")).str(t)
	waitSleepers(t, clock, 1, "create never slept")
	// While the create task runs, the config carries lock: create.
	if r := c.do("PUT", "/nodes/pve1/qemu/100/config", vals("cores", "2")); r.Status != 500 || r.Reason != "VM is locked (create)" {
		t.Fatalf("PUT during create: %d %q", r.Status, r.Reason)
	}
	resize := c.mustOK("PUT", "/nodes/pve1/qemu/100/resize", vals("disk", "scsi0", "size", "+1G")).str(t)
	waitSleepers(t, clock, 2, "resize never waited")
	clock.Advance(lockTimeout)
	if st := c.waitTask(resize); !strings.HasPrefix(st, "can't lock file '/var/lock/qemu-server/lock-100.conf'") {
		t.Fatalf("resize during import: %q", st)
	}
	for i := 0; i < 10 && !isDone(srv, create); i++ {
		clock.WaitForWaiters(1, time.Second)
		clock.Advance(30 * time.Second)
	}
	if st := c.waitTask(create); st != "OK" {
		t.Fatalf("create: %q", st)
	}
	if cfg := c.mustOK("GET", "/nodes/pve1/qemu/100/config", nil).obj(t); cfg["scsi0"] != "local-lvm:vm-100-disk-0,size=20G" || cfg["lock"] != nil {
		t.Fatalf("config %v", cfg)
	}
}

func isDone(srv *Server, upid string) bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	t := srv.tasks.byUPID[upid]
	return t != nil && !t.Running
}

func TestConcurrentClonesShareTheSourceLock(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddGuest(t, srv, GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{"name": "tpl", "template": "1", "scsi0": "local-lvm:base-9000-disk-0,size=8G"}})
	a := c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "101")).str(t)
	b := c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "102", "full", "1")).str(t)
	waitSleepers(t, clock, 2, "clones did not run side by side")
	clock.Advance(time.Minute)
	for _, upid := range []string{a, b} {
		if st := c.waitTask(upid); st != "OK" {
			t.Fatalf("clone: %s", st)
		}
	}
	// A running source is locked exclusively: a second clone waits 1 s, then fails.
	mustAddGuest(t, srv, GuestSpec{VMID: 300, Node: "pve1", Running: true, Config: map[string]string{"scsi0": "local-lvm:vm-300-disk-0,size=8G"}})
	first := c.mustOK("POST", "/nodes/pve1/qemu/300/clone", vals("newid", "301")).str(t)
	waitSleepers(t, clock, 1, "first clone did not start")
	second := c.mustOK("POST", "/nodes/pve1/qemu/300/clone", vals("newid", "302")).str(t)
	waitSleepers(t, clock, 2, "second clone did not wait")
	clock.Advance(time.Second)
	if st := c.waitTask(second); st != "can't lock file '/var/lock/qemu-server/lock-300.conf' - got timeout" {
		t.Fatalf("second clone: %q", st)
	}
	clock.Advance(time.Minute)
	if st := c.waitTask(first); st != "OK" {
		t.Fatalf("first clone: %q", st)
	}
}

// TestTaskListsSplitTheTokenUser checks pve-manager's $convert_token_task:
// listed and read tasks of a token carry the user and the token's name
// apart, userfilter is matched (case-insensitively, as a substring) against
// the user alone, so the full token id matches no archived task, and only
// the UPID keeps it. Running tasks come from the active file unconverted.
func TestTaskListsSplitTheTokenUser(t *testing.T) {
	srv, c, clock := clockedSim(t)
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a"}})
	done := c.mustOK("POST", "/nodes/pve1/qemu/100/status/start", nil).str(t)
	clock.WaitForWaiters(1, 5*time.Second)
	clock.Advance(durStart)
	if st := c.waitTask(done); st != "OK" {
		t.Fatal(st)
	}
	running := c.mustOK("POST", "/nodes/pve1/qemu/100/status/stop", nil).str(t)
	waitSleepers(t, clock, 1, "stop task never slept")
	upids := func(q url.Values) []string {
		var out []string
		for _, e := range c.mustOK("GET", "/nodes/pve1/tasks", q).list(t) {
			out = append(out, e["upid"].(string))
		}
		return out
	}
	for _, tc := range []struct {
		name string
		q    url.Values
		want []string
	}{
		{"full token id matches no archived task", vals("userfilter", "root@pam!proxmops"), nil},
		{"the user part matches", vals("userfilter", "root@pam"), []string{done}},
		{"matched case-insensitively as a substring", vals("userfilter", "ROOT@"), []string{done}},
		{"running tasks are matched unconverted", vals("source", "active", "userfilter", "root@pam!proxmops"), []string{running}},
	} {
		if got := upids(tc.q); strings.Join(got, ",") != strings.Join(tc.want, ",") {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
	listed := c.mustOK("GET", "/nodes/pve1/tasks", nil).list(t)
	if len(listed) != 1 || listed[0]["user"] != "root@pam" || listed[0]["tokenid"] != "proxmops" {
		t.Fatalf("node task list %v", listed)
	}
	st := c.mustOK("GET", "/nodes/pve1/tasks/"+url.PathEscape(done)+"/status", nil).obj(t)
	if st["user"] != "root@pam" || st["tokenid"] != "proxmops" || !strings.HasSuffix(st["upid"].(string), ":root@pam!proxmops:") {
		t.Fatalf("task status %v", st)
	}
	for _, e := range c.mustOK("GET", "/cluster/tasks", nil).list(t) {
		if e["user"] != "root@pam" || e["tokenid"] != "proxmops" {
			t.Fatalf("cluster task list entry %v", e)
		}
	}
	clock.Advance(time.Minute)
	c.waitTask(running)
}

// TestCloneTaskLogNamesTheNewGuest checks qemu-server's clone_vm: the
// qmclone task's id is the source VMID, and only its log names the new one
// ("creating a clone of VM 9000 with ID 120"), as pve-container's vzclone
// does for containers.
func TestCloneTaskLogNamesTheNewGuest(t *testing.T) {
	srv, c := newSim(t, Options{})
	mustAddGuest(t, srv, GuestSpec{VMID: 9000, Node: "pve1", Config: map[string]string{"name": "tpl", "template": "1"}})
	upid := c.mustOK("POST", "/nodes/pve1/qemu/9000/clone", vals("newid", "120", "name", "app")).str(t)
	if st := c.waitTask(upid); st != "OK" {
		t.Fatal(st)
	}
	if info, _ := ParseUPID(upid); info.Type != "qmclone" || info.ID != "9000" {
		t.Fatalf("UPID %s", upid)
	}
	found := false
	for _, l := range c.mustOK("GET", "/nodes/pve1/tasks/"+url.PathEscape(upid)+"/log", nil).list(t) {
		found = found || l["t"] == "creating a clone of VM 9000 with ID 120"
	}
	if !found {
		t.Fatal("the clone's log does not name the new VMID")
	}
}

// TestTaskIndexRotates checks the node task list against pve-common's
// index rotation: once the index file passes TaskIndexBytes it becomes
// index.1, the previous index.1 is gone from the list, while the tasks'
// status and logs stay readable.
func TestTaskIndexRotates(t *testing.T) {
	srv, c := newSim(t, Options{TaskIndexBytes: 500})
	mustAddGuest(t, srv, GuestSpec{VMID: 100, Node: "pve1", Config: map[string]string{"name": "a"}})
	var upids []string
	for i := 0; i < 20; i++ {
		path := "/nodes/pve1/qemu/100/status/start"
		if i%2 == 1 {
			path = "/nodes/pve1/qemu/100/status/stop"
		}
		upid := c.mustOK("POST", path, nil).str(t)
		if st := c.waitTask(upid); st != "OK" {
			t.Fatal(st)
		}
		upids = append(upids, upid)
	}
	// Each line is len(UPID)+13 bytes ("UPID 0000ABCD OK\n"): 500 bytes hold
	// 6 of them, the 7th rotates the index.
	line := len(upids[0]) + 13
	perFile := 500/line + 1
	listed := c.mustOK("GET", "/nodes/pve1/tasks", vals("limit", "100")).list(t)
	want := 20%perFile + perFile // what index holds, and index.1 (full)
	if len(listed) != want || listed[0]["upid"] != upids[19] {
		t.Fatalf("listed %d tasks, want %d (index and index.1)", len(listed), want)
	}
	if st := c.mustOK("GET", "/nodes/pve1/tasks/"+url.PathEscape(upids[0])+"/status", nil).obj(t); st["exitstatus"] != "OK" {
		t.Fatalf("rotated task status %v", st)
	}
}

// An empty task log reads as one "no content" line, total 1, whatever the
// start (pve-common Tools.pm dump_logfile_by_filehandle); a written log
// past its end reads as no line.
func TestAnEmptyTaskLogReadsAsNoContent(t *testing.T) {
	srv := startSim(t, Options{TaskSpeed: 1}) // the start waits up to 10 s for the held lock
	c := newClient(t, srv)
	createVM(t, c, "150")
	release := srv.HoldGuestLock(150)
	upid := c.mustOK("POST", "/nodes/pve1/qemu/150/status/start", nil).str(t)
	logPath := "/nodes/pve1/tasks/" + url.PathEscape(upid) + "/log"
	for _, start := range []string{"0", "5"} {
		r := c.mustOK("GET", logPath, vals("start", start))
		lines := r.list(t)
		if len(lines) != 1 || lines[0]["n"] != float64(1) || lines[0]["t"] != "no content" || r.Total == nil || *r.Total != 1 {
			t.Fatalf("empty log from %s: %v", start, lines)
		}
	}
	release()
	if st := c.waitTask(upid); st != "OK" {
		t.Fatal(st)
	}
	if lines := c.mustOK("GET", logPath, vals("start", "50")).list(t); len(lines) != 0 {
		t.Fatalf("a written log past its end: %v", lines)
	}
}
