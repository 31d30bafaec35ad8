package pvesim

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestBackupJobsAreCreatedReadChangedAndDeletedAsProxmoxDoes(t *testing.T) {
	clock := NewFakeClock(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)) // a Monday
	srv, c := newSim(t, Options{Clock: clock})
	for _, g := range []GuestSpec{{VMID: 100, Node: "pve1", Config: map[string]string{"name": "web"}},
		{VMID: 101, Node: "pve2", Config: map[string]string{"name": "db"}},
		{VMID: 102, Node: "pve1", Type: "lxc", Config: map[string]string{"hostname": "ct"}}} {
		mustAddGuest(t, srv, g)
	}
	c.mustOK("POST", "/cluster/backup", vals("id", "nightly", "schedule", "mon..fri 02:30", "storage", "local", "mode", "snapshot",
		"compress", "zstd", "vmid", "100,101", "prune-backups", "keep-last=3,keep-daily=7", "notes-template", "{{guestname}}",
		"comment", "by proxmops"))
	got := c.mustOK("GET", "/cluster/backup/nightly", nil).obj(t)
	want := map[string]any{"id": "nightly", "type": "vzdump", "enabled": float64(1), "schedule": "mon..fri 02:30", "storage": "local",
		"mode": "snapshot", "compress": "zstd", "vmid": "100,101", "notes-template": "{{guestname}}", "comment": "by proxmops",
		"prune-backups": map[string]any{"keep-daily": "7", "keep-last": "3"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("GET /cluster/backup/nightly = %v, want %v", got, want)
	}
	list := c.mustOK("GET", "/cluster/backup", nil).list(t)
	if len(list) != 1 || list[0]["next-run"] != float64(time.Date(2026, 3, 3, 2, 30, 0, 0, time.UTC).Unix()) {
		t.Fatalf("GET /cluster/backup = %v, want next-run Tuesday 02:30", list)
	}
	notBacked := func() []any {
		var ids []any
		for _, e := range c.mustOK("GET", "/cluster/backup-info/not-backed-up", nil).list(t) {
			ids = append(ids, e["vmid"], e["name"])
		}
		return ids
	}
	if got := notBacked(); !reflect.DeepEqual(got, []any{float64(102), "ct"}) {
		t.Errorf("not backed up = %v, want CT 102", got)
	}
	// all replaces the vmid list; exclude implies all.
	c.mustOK("PUT", "/cluster/backup/nightly", vals("exclude", "101", "delete", "comment,notes-template", "starttime", "3:00", "dow", "sat"))
	got = c.mustOK("GET", "/cluster/backup/nightly", nil).obj(t)
	if got["all"] != float64(1) || got["vmid"] != nil || got["exclude"] != "101" || got["comment"] != nil || got["schedule"] != "sat 3:00" {
		t.Errorf("after PUT exclude=101 starttime=3:00 dow=sat: %v", got)
	}
	if got := notBacked(); !reflect.DeepEqual(got, []any{float64(101), "db"}) {
		t.Errorf("not backed up = %v, want VM 101", got)
	}
	// A job by pool covers the pool's own guests; a pool gone fails the list.
	c.mustOK("POST", "/pools", vals("poolid", "prod"))
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "101"))
	c.mustOK("PUT", "/cluster/backup/nightly", vals("pool", "prod"))
	if got := notBacked(); !reflect.DeepEqual(got, []any{float64(100), "web", float64(102), "ct"}) {
		t.Errorf("not backed up with pool prod = %v, want VM 100 and CT 102", got)
	}
	c.mustOK("PUT", "/pools", vals("poolid", "prod", "vms", "101", "delete", "1"))
	c.mustOK("DELETE", "/pools", vals("poolid", "prod"))
	if r := c.do("GET", "/cluster/backup-info/not-backed-up", nil); r.Status != 500 || r.Reason != "pool 'prod' does not exist" {
		t.Errorf("not-backed-up with a job on a deleted pool: %d %q", r.Status, r.Reason)
	}
	c.mustOK("PUT", "/cluster/backup/nightly", vals("vmid", "100", "enabled", "0", "prune-backups", "keep-last=0"))
	got = c.mustOK("GET", "/cluster/backup/nightly", nil).obj(t)
	if got["all"] != nil || got["exclude"] != nil || got["enabled"] != float64(0) ||
		!reflect.DeepEqual(got["prune-backups"], map[string]any{"keep-all": float64(1)}) {
		t.Errorf("after PUT vmid=100 enabled=0 keep-last=0: %v", got)
	}
	srv2 := reloaded(t, srv)
	if got := newClient(t, srv2).mustOK("GET", "/cluster/backup/nightly", nil).obj(t); got["vmid"] != "100" {
		t.Errorf("job after LoadState: %v", got)
	}
	form := vals("exclude-path", "/tmp/?*")
	form.Add("exclude-path", "/var/cache")
	c.mustOK("PUT", "/cluster/backup/nightly", form)
	if got := c.mustOK("GET", "/cluster/backup/nightly", nil).obj(t)["exclude-path"]; !reflect.DeepEqual(got, []any{"/tmp/?*", "/var/cache"}) {
		t.Errorf("exclude-path read back as %#v", got)
	}
	c.mustOK("DELETE", "/cluster/backup/nightly", nil)
	if got := c.mustOK("GET", "/cluster/backup", nil).list(t); len(got) != 0 {
		t.Errorf("after DELETE: %v", got)
	}
}

func TestBackupJobSchedulesAreCalendarEventsAsProxmoxParsesThem(t *testing.T) {
	_, c := newSim(t, Options{})
	accepted := []string{"02:30", "mon..fri 02:30", "sat,sun 3:00", "*:0/15", "daily", "weekly UTC", "2026-06-01 00:00",
		"mon *-*-01..07 04:00", "hourly", "*-*-* 00:00:00", "fri..mon 22:00", "25:00", "minutely", "0/2:00", " 02:30 "}
	for i, sched := range accepted {
		id := "j" + string(rune('a'+i))
		if r := c.do("POST", "/cluster/backup", vals("id", id, "schedule", sched, "all", "1")); r.Status != 200 {
			t.Errorf("schedule %q refused: %d %v", sched, r.Status, r.Errors)
		}
	}
	refused := map[string]string{
		"foo 02:30":  `unable to parse calendar event at 'foo' - Context("weekday")`,
		"61:00":      `unable to parse calendar event at '61:00' - Context("date or time specification")`,
		"02:30 foo":  `unable to parse calendar event at ' foo' - Nom(Eof)`,
		"mon..xyz":   `unable to parse calendar event at '..xyz' - Nom(Eof)`,
		"   ":        `unable to parse calendar event - event is empty`,
		"10..5:00":   `unable to parse calendar event at '10..5:00' - Context("date or time specification")`,
		"2026-13-01": `unable to parse calendar event at '2026-13-01' - Context("date or time specification")`,
		"1..2/3x":    `unable to parse calendar event at 'x' - Nom(Eof)`,
	}
	for sched, msg := range refused {
		r := c.do("POST", "/cluster/backup", vals("id", "bad", "schedule", sched, "all", "1"))
		want := "invalid format - invalid calendar event '" + sched + "' - " + msg + "\n"
		if r.Status != 400 || r.Errors["schedule"] != want {
			t.Errorf("schedule %q: %d %q, want 400 %q", sched, r.Status, r.Errors["schedule"], want)
		}
	}
}

func TestBackupJobRequestsAreRefusedAsProxmoxRefusesThem(t *testing.T) {
	_, c := newSim(t, Options{})
	c.mustOK("POST", "/cluster/backup", vals("id", "nightly", "schedule", "02:30", "all", "1"))
	lockedParam := "400 Parameter verification failed."
	tests := []struct {
		name, method, path string
		params             url.Values
		status             int
		reason             string
		detail             string // in the errors (400) or the message (500)
	}{
		{"no schedule", "POST", "/cluster/backup", vals("id", "x1", "all", "1"), 400, "Parameter verification failed.",
			"neither 'starttime' nor 'schedule' were set"},
		{"schedule and starttime", "POST", "/cluster/backup", vals("id", "x1", "all", "1", "schedule", "1:00", "starttime", "2:00"), 400,
			"Parameter verification failed.", "'starttime' and 'schedule' cannot both be set"},
		{"no guests selected", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00"), 500, lockedParam, "vmid: property is missing"},
		{"all with vmid", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00", "all", "1", "vmid", "100"), 500, lockedParam,
			"all: option conflicts with option 'vmid'"},
		{"pool with vmid", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00", "pool", "p", "vmid", "100"), 403,
			"Permission check failed (pool 'p' does not exist)", ""},
		{"existing id", "POST", "/cluster/backup", vals("id", "nightly", "schedule", "1:00", "all", "1"), 500, "Job 'nightly' already exists", ""},
		{"unknown notes variable", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00", "all", "1", "storage", "local",
			"notes-template", "{{name}} \\t"), 500, lockedParam, "notes-template: found unknown: escape sequence '\\t' at char 9, variable 'name' at char 4"},
		{"notes template without storage", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00", "all", "1", "notes-template", "x"), 400,
			"Parameter verification failed.", "missing property required by 'notes-template'"},
		{"keep-all with other options", "POST", "/cluster/backup", vals("id", "x1", "schedule", "1:00", "all", "1", "prune-backups", "keep-all=1,keep-last=1"), 400,
			"Parameter verification failed.", "invalid format - keep-all cannot be set together with other options.\n"},
		{"bad day of week", "POST", "/cluster/backup", vals("id", "x1", "starttime", "1:00", "dow", "mon,xyz", "all", "1"), 400,
			"Parameter verification failed.", "invalid format - invalid day 'xyz'\n"},
		{"unknown job read", "GET", "/cluster/backup/nope", nil, 400, "Parameter verification failed.", "No such job 'nope'"},
		{"unknown job update", "PUT", "/cluster/backup/nope", vals("all", "1"), 500, "no such vzdump job", ""},
		{"update without options", "PUT", "/cluster/backup/nightly", nil, 500, "no options specified", ""},
		{"deleting an unknown option", "PUT", "/cluster/backup/nightly", vals("delete", "bogus"), 500, lockedParam, "delete: unknown option 'bogus'"},
		{"unknown job delete", "DELETE", "/cluster/backup/nope", nil, 500, lockedParam, "id: No such job 'nope'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := c.do(tt.method, tt.path, tt.params)
			detail := r.Message
			for _, e := range r.Errors {
				detail += e
			}
			if r.Status != tt.status || r.Reason != tt.reason || !strings.Contains(detail, tt.detail) {
				t.Fatalf("%d %q %q, want %d %q with %q", r.Status, r.Reason, detail, tt.status, tt.reason, tt.detail)
			}
		})
	}
}

func TestBackupJobsNeedTheSchemasPrivileges(t *testing.T) {
	wantPrivRefusals(t, []privCase{
		{"creating needs Sys.Modify", []string{"Sys.Modify"}, "POST", "/cluster/backup", vals("id", "jj", "schedule", "1:00", "all", "1"),
			403, "Permission check failed (/, Sys.Modify)"},
		{"creating needs Datastore.Allocate on the storage", []string{"Datastore.Allocate"}, "POST", "/cluster/backup",
			vals("id", "jj", "schedule", "1:00", "all", "1"), 403, "Permission check failed (/storage/local, Datastore.Allocate)"},
		{"reading needs Sys.Audit", []string{"Sys.Audit"}, "GET", "/cluster/backup", nil, 403, "Permission check failed (/, Sys.Audit)"},
		{"deleting needs Sys.Modify", []string{"Sys.Modify"}, "DELETE", "/cluster/backup/jj", nil, 403, "Permission check failed (/, Sys.Modify)"},
	}, func(t *testing.T, privs []string) *client {
		return newClient(t, startSim(t, Options{TokenPrivileges: privs}))
	})
}

func TestDestroyingAGuestWithPurgeTakesItOutOfBackupJobsAndHARules(t *testing.T) {
	_, c := haRuleSim(t, Options{})
	c.mustOK("POST", "/cluster/backup", vals("id", "only-100", "schedule", "1:00", "vmid", "100"))
	c.mustOK("POST", "/cluster/backup", vals("id", "two", "schedule", "1:00", "vmid", "100,101"))
	c.mustOK("POST", "/cluster/backup", vals("id", "all-but", "schedule", "1:00", "exclude", "100"))
	c.mustOK("POST", "/cluster/ha/rules", vals("rule", "apart", "type", "resource-affinity", "resources", "vm:100,vm:101", "affinity", "negative"))
	mustTaskOK(t, c, "DELETE", "/nodes/pve1/qemu/100", vals("purge", "1"))
	var jobs []string
	for _, j := range c.mustOK("GET", "/cluster/backup", nil).list(t) {
		jobs = append(jobs, j["id"].(string)+" "+fmtOr(j["vmid"])+" "+fmtOr(j["exclude"]))
	}
	if want := []string{"two 101 -", "all-but - -"}; !reflect.DeepEqual(jobs, want) {
		t.Errorf("jobs after destroying 100 with purge: %v, want %v", jobs, want)
	}
	if got := c.mustOK("GET", "/cluster/ha/rules/apart", nil).obj(t); got["resources"] != "vm:101" {
		t.Errorf("rule after destroying 100 with purge: %v", got)
	}
}

func fmtOr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "-"
}
