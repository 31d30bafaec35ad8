package pvesim

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/calendarevent"
	"github.com/proxmops/proxmops/pvesim/route"
)

// Backup jobs: /cluster/backup (pve-manager PVE/API2/Backup.pm) over
// jobs.cfg's vzdump sections (pve-common PVE/Job/Registry.pm,
// pve-guest-common PVE/VZDump/JobBase.pm), with the vzdump options of
// pve-guest-common PVE/VZDump/Common.pm and the checks of pve-manager
// PVE/VZDump.pm verify_vzdump_parameters, and
// /cluster/backup-info/not-backed-up (PVE/API2/Cluster/BackupInfo.pm).
// No job runs: the simulator keeps the definitions.

// vzdumpOptionParams are Common.pm's json_config_properties as the 9.1
// schema lists them for POST and PUT /cluster/backup.
func vzdumpOptionParams() []*route.Param {
	return []*route.Param{
		route.Bool("all").Opt().Default("0"),
		route.Int("bwlimit").Opt().Min(0).Default("0"),
		route.Str("compress").Opt().Enum("0", "1", "gzip", "lzo", "zstd").Default("0"),
		route.Str("dumpdir").Opt(),
		route.Str("exclude").Opt().Fmt("pve-vmid-list"),
		route.Arr("exclude-path").Opt(),
		route.Str("fleecing").Opt().Fmt("backup-fleecing"),
		route.Int("ionice").Opt().Min(0).Max(8).Default("7"),
		route.Int("lockwait").Opt().Min(0).Default("180"),
		route.Str("mailnotification").Opt().Enum("always", "failure").Default("always"),
		route.Str("mailto").Opt().Fmt("email-or-username-list"),
		route.Int("maxfiles").Opt().Min(1),
		route.Str("mode").Opt().Enum("snapshot", "suspend", "stop").Default("snapshot"),
		route.Str("node").Opt().Fmt("pve-node"),
		route.Str("notes-template").Opt().MaxLen(1024).Requires("storage"),
		route.Str("notification-mode").Opt().Enum("auto", "legacy-sendmail", "notification-system").Default("auto"),
		route.Str("pbs-change-detection-mode").Opt().Enum("legacy", "data", "metadata"),
		route.Str("performance").Opt().Fmt("backup-performance"),
		route.Int("pigz").Opt().Default("0"),
		route.Str("pool").Opt(),
		route.Bool("protected").Opt().Requires("storage"),
		route.Str("prune-backups").Opt().Fmt("prune-backups").Default("keep-all=1"),
		route.Bool("quiet").Opt().Default("0"),
		route.Bool("remove").Opt().Default("1"),
		route.Str("script").Opt(),
		route.Bool("stdexcludes").Opt().Default("1"),
		route.Bool("stop").Opt().Default("0"),
		route.Int("stopwait").Opt().Min(0).Default("10"),
		route.Str("storage").Opt().Fmt("pve-storage-id"),
		route.Str("tmpdir").Opt(),
		route.Str("vmid").Opt().Fmt("pve-vmid-list"),
		route.Int("zstd").Opt().Default("1"),
		// Backup.pm's own job properties.
		route.Str("schedule").Opt().Fmt("pve-calendar-event").MaxLen(128),
		route.Str("starttime").Opt().Pattern(`\d{1,2}:\d{1,2}`),
		route.Bool("enabled").Opt().Default("1"),
		route.Bool("repeat-missed").Opt().Default("0"),
		route.Str("comment").Opt().MaxLen(512),
	}
}

// backupJobID is the pve-backup-jobid standard option.
func backupJobID() *route.Param { return route.Str("id").MaxLen(50).Pattern(`\S+`) }

var backupCreateParams = route.NewParams(append(vzdumpOptionParams(),
	route.Str("id").Opt().Fmt("pve-configid"),
	route.Str("dow").Opt().Fmt("pve-day-of-week-list").Requires("starttime").Default("mon,tue,wed,thu,fri,sat,sun"))...)

// vzdumpPropertyStrings is Common.pm's $PROPERTY_STRINGS: read back as
// objects.
var vzdumpPropertyStrings = map[string]string{"fleecing": "backup-fleecing", "performance": "backup-performance", "prune-backups": "prune-backups"}

var (
	reEmail     = regexp.MustCompile(`^[\w+\-~]+(\.[\w+\-~]+)*@[a-zA-Z0-9\-]+(\.[a-zA-Z0-9\-]+)*$`)
	reEmailUser = regexp.MustCompile(`^[\w+\-~]+(\.[\w+\-~]+)*$`)
	// Backup.pm $verify_notes_template.
	reNotesEscape = regexp.MustCompile(`\\(.)`)
	reNotesVar    = regexp.MustCompile(`\{\{([^\s{}]+)\}\}`)
)

func init() {
	// pve-common PVE/CalendarEvent.pm pve_verify_calendar_event.
	route.RegisterFormat("pve-calendar-event", calendarevent.Verify)
	route.RegisterFormat("pve-day-of-week", func(s string) error {
		switch s {
		case "mon", "tue", "wed", "thu", "fri", "sat", "sun":
			return nil
		}
		return fmt.Errorf("invalid day '%s'\n", s)
	})
	route.RegisterFormat("email-or-username", func(s string) error {
		if !reEmail.MatchString(s) && !reEmailUser.MatchString(s) {
			return fmt.Errorf("value does not look like a valid email address or user name\n")
		}
		return nil
	})
	route.RegisterPropFormat("backup-fleecing", route.Props(route.Bool("enabled").Opt().Default("0").DefaultKey(),
		route.Str("storage").Opt().Fmt("pve-storage-id")))
	route.RegisterPropFormat("backup-performance", route.Props(route.Int("max-workers").Opt().Min(1).Max(256).Default("16"),
		route.Int("pbs-entries-max").Opt().Min(1).Default("1048576")))
	registerRoutes(func(s *Server) {
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/backup", Perm: route.PermCheck("/", "Sys.Audit"), Handler: s.backupJobList})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/backup", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: backupCreateParams, Handler: s.backupJobCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/backup/{id}", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(backupJobID()), Handler: s.backupJobRead})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/backup/{id}", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: route.NewParams(append(vzdumpOptionParams(), backupJobID(),
				route.Str("dow").Opt().Fmt("pve-day-of-week-list").Requires("starttime"),
				route.Str("delete").Opt().Fmt("pve-configid-list"))...),
			Handler: s.backupJobUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/backup/{id}", Perm: route.PermCheck("/", "Sys.Modify"),
			Params: route.NewParams(backupJobID()), Handler: s.backupJobDelete})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/backup-info", Handler: func(*route.Request) (any, error) {
			return []map[string]any{{"subdir": "not-backed-up"}}, nil
		}})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/backup-info/not-backed-up", Perm: route.PermCheck("/", "Sys.Audit"),
			Handler: s.backupNotBackedUp})
	})
}

// lockedParamErr is a raise_param_exc inside cfs_lock_file that Backup.pm
// re-dies as a string ('die "$@"'): PVE::Exception's stringify, a 500.
func lockedParamErr(key, msg string) error {
	return route.Fail("400 Parameter verification failed.\n%s: %s", key, strings.TrimSuffix(msg, "\n"))
}

// backupAssertCommon is assert_param_permission_common.
func (s *Server) backupAssertCommon(user string, param map[string]string, isDelete bool) error {
	if user == "root@pam" {
		return nil
	}
	for _, k := range []string{"tmpdir", "dumpdir", "script", "job-id"} {
		if hasKey(param, k) {
			return route.ParamErr(k, "Only root may set this option.")
		}
	}
	for _, k := range []string{"bwlimit", "ionice", "performance"} {
		if hasKey(param, k) {
			if err := s.check(user, "/", "Sys.Modify"); err != nil {
				return err
			}
			break
		}
	}
	if f := param["fleecing"]; f != "" && !isDelete {
		kv, _ := parsePropString(route.NamedProps("backup-fleecing"), f, "fleecing")
		if st := kv["storage"]; st != "" {
			if err := s.check(user, "/storage/"+st, "Datastore.AllocateSpace"); err != nil {
				return err
			}
		}
	}
	return nil
}

// vzdumpStorageParam is VZDump::get_storage_param.
func vzdumpStorageParam(p map[string]string) string {
	if p["dumpdir"] != "" {
		return ""
	}
	if p["storage"] != "" {
		return p["storage"]
	}
	return "local"
}

// scheduleParamCheck is Backup.pm $schedule_param_check: starttime and
// dow are turned into a schedule.
func scheduleParamCheck(param map[string]string, required bool) error {
	_, hasSched := param["schedule"]
	_, hasStart := param["starttime"]
	switch {
	case hasSched && hasStart:
		return route.ParamErr("starttime", "'starttime' and 'schedule' cannot both be set")
	case !hasSched && !hasStart:
		if required {
			return route.ParamErr("schedule", "neither 'starttime' nor 'schedule' were set")
		}
	case hasStart:
		sched := param["starttime"]
		if dow := strings.Join(splitList(param["dow"]), ","); dow != "" && dow != "mon,tue,wed,thu,fri,sat,sun" {
			sched = dow + " " + sched
		}
		param["schedule"] = sched
	}
	delete(param, "starttime")
	delete(param, "dow")
	return nil
}

// verifyVzdumpParams is VZDump::verify_vzdump_parameters; inside the
// lock its parameter errors reach the caller as strings.
func verifyVzdumpParams(p map[string]string, checkMissing bool) error {
	set := func(k string) bool { v := p[k]; return v != "" && v != "0" }
	for _, k := range []string{"all", "exclude", "pool"} {
		if set(k) && set("vmid") {
			return lockedParamErr(k, "option conflicts with option 'vmid'")
		}
	}
	if f := p["fleecing"]; f != "" {
		kv, _ := parsePropString(route.NamedProps("backup-fleecing"), f, "fleecing")
		// Common.pm verify_backup_fleecing.
		if kv["storage"] == "" && kv["enabled"] == "1" {
			return lockedParamErr("fleecing", "invalid format - 'storage' parameter is required when 'enabled' is set")
		}
	}
	if t := p["notes-template"]; t != "" {
		if err := verifyNotesTemplate(t); err != nil {
			return lockedParamErr("notes-template", err.Error())
		}
	}
	if hasKey(p, "exclude") && !set("pool") {
		p["all"] = "1"
	}
	if checkMissing && !set("all") && !set("stop") && !set("pool") && !set("vmid") {
		return lockedParamErr("vmid", "property is missing")
	}
	return nil
}

// verifyNotesTemplate is VZDump.pm's $verify_notes_template.
func verifyNotesTemplate(t string) error {
	if strings.Contains(t, "\n") {
		return fmt.Errorf("contains a line feed\n")
	}
	var problems []string
	for _, m := range reNotesEscape.FindAllStringSubmatchIndex(t, -1) {
		if c := t[m[2]:m[3]]; c != "n" && c != "\\" {
			problems = append(problems, fmt.Sprintf("escape sequence '\\%s' at char %d", c, m[1]-2))
		}
	}
	for _, m := range reNotesVar.FindAllStringSubmatchIndex(t, -1) {
		v := t[m[2]:m[3]]
		switch v {
		case "cluster", "guestname", "node", "vmid":
			continue
		}
		problems = append(problems, fmt.Sprintf("variable '%s' at char %d", v, m[1]-len(v)))
	}
	if len(problems) > 0 {
		return fmt.Errorf("found unknown: %s\n", strings.Join(problems, ", "))
	}
	return nil
}

// checkLineFeeds is SectionConfig check_value's line feed refusal.
func checkLineFeeds(p map[string]string) error {
	for _, k := range sortedKeys(p) {
		if strings.ContainsAny(p[k], "\r\n") {
			return route.Fail("property contains a line feed")
		}
	}
	return nil
}

// normalizePrune is how jobs.cfg keeps prune-backups: as
// validate_prune_backups leaves it (keep-all=1 when nothing is kept,
// the other keys without keep-all otherwise), printed with sorted keys.
func normalizePrune(v string) string {
	kv, err := parsePropString(route.NamedProps("prune-backups"), v, "prune-backups")
	if err != nil {
		return v
	}
	delete(kv, "keep-all")
	kept := false
	var parts []string
	for _, k := range sortedKeys(kv) {
		if n, _ := strconv.Atoi(kv[k]); n > 0 {
			kept = true
		}
		parts = append(parts, k+"="+kv[k])
	}
	if !kept {
		return "keep-all=1"
	}
	return strings.Join(parts, ",")
}

func (s *Server) backupJobCreate(r *route.Request) (any, error) {
	param := paramsExcept(r)
	if err := s.storagePruneCheck(param); err != nil {
		return nil, err
	}
	if err := s.backupAssertCommon(r.User, param, false); err != nil {
		return nil, err
	}
	if r.User != "root@pam" {
		if err := s.check(r.User, "/storage/"+vzdumpStorageParam(param), "Datastore.Allocate"); err != nil {
			return nil, err
		}
	}
	if err := s.backupCheckPool(r.User, param["pool"]); err != nil {
		return nil, err
	}
	if err := scheduleParamCheck(param, true); err != nil {
		return nil, err
	}
	if !hasKey(param, "enabled") {
		param["enabled"] = "1"
	}
	id, ok := param["id"]
	if !ok {
		id = s.randomUUID()
	}
	delete(param, "id")
	if s.state.BackupJobs[id] != nil {
		return nil, route.Fail("Job '%s' already exists", id)
	}
	if err := verifyVzdumpParams(param, true); err != nil {
		return nil, err
	}
	if err := checkLineFeeds(param); err != nil {
		return nil, err
	}
	if v, ok := param["prune-backups"]; ok {
		param["prune-backups"] = normalizePrune(v)
	}
	param["type"] = "vzdump"
	if s.state.BackupJobs == nil {
		s.state.BackupJobs = map[string]map[string]string{}
	}
	s.state.BackupJobs[id] = param
	s.state.BackupJobOrder = append(s.state.BackupJobOrder, id)
	return nil, nil
}

// backupCheckPool is check_pool_exist and VM.Backup on the pool, for a
// job that names one (both create_job and update_job check it so).
func (s *Server) backupCheckPool(user, pool string) error {
	if pool == "" {
		return nil
	}
	if s.state.Pools[pool] == nil {
		return permErr("pool '" + pool + "' does not exist")
	}
	return s.check(user, "/pool/"+pool, "VM.Backup")
}

// backupJobJSON is a job as jobs.cfg reads back: booleans and integers
// as numbers, property strings as objects, enabled always, and the id.
func backupJobJSON(id string, job map[string]string) map[string]any {
	out := map[string]any{"id": id, "enabled": int64(1)}
	for k, v := range job {
		if f, ok := vzdumpPropertyStrings[k]; ok {
			kv, _ := parsePropString(route.NamedProps(f), v, k)
			obj := map[string]any{}
			for kk, vv := range kv {
				if p := route.NamedProps(f).Keys[kk]; p != nil && p.Type == route.TBoolean {
					obj[kk] = typedValue(route.TInteger, vv)
					continue
				}
				obj[kk] = vv
			}
			out[k] = obj
			continue
		}
		t := route.TString
		if p := backupCreateParams.Lookup(k); p != nil {
			t = p.Type
		}
		if t == route.TArray {
			// exclude-path: one line per item in jobs.cfg, an array read back.
			out[k] = strings.Split(v, "\x00")
			continue
		}
		out[k] = typedValue(t, v)
	}
	return out
}

// backupJobList is Backup.pm "index": the jobs in file order, with the
// next run computed from now.
func (s *Server) backupJobList(r *route.Request) (any, error) {
	out := []map[string]any{}
	now := s.clock.Now().Unix()
	for _, id := range s.state.BackupJobOrder {
		job := s.state.BackupJobs[id]
		if job == nil {
			continue
		}
		m := backupJobJSON(id, job)
		if ev, err := calendarevent.Parse(job["schedule"]); err == nil {
			if next, ok := ev.Next(now, time.UTC); ok {
				m["next-run"] = next
			}
		}
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) backupJobRead(r *route.Request) (any, error) {
	id := r.Str("id")
	job := s.state.BackupJobs[id]
	if job == nil {
		return nil, route.ParamErr("id", fmt.Sprintf("No such job '%s'", id))
	}
	return backupJobJSON(id, job), nil
}

func (s *Server) backupJobDelete(r *route.Request) (any, error) {
	id := r.Str("id")
	if s.state.BackupJobs[id] == nil {
		return nil, lockedParamErr("id", fmt.Sprintf("No such job '%s'", id))
	}
	delete(s.state.BackupJobs, id)
	s.state.BackupJobOrder = slices.DeleteFunc(s.state.BackupJobOrder, func(x string) bool { return x == id })
	return nil, nil
}

// backupAssertUpdate is assert_param_permission_update; current is the
// job once found (nil for the early check).
func (s *Server) backupAssertUpdate(user string, param map[string]string, deletes []string, current map[string]string) error {
	if user == "root@pam" {
		return nil
	}
	delParam := map[string]string{}
	for _, k := range deletes {
		delParam[k] = "1"
	}
	if err := s.backupAssertCommon(user, param, false); err != nil {
		return err
	}
	if err := s.backupAssertCommon(user, delParam, true); err != nil {
		return err
	}
	if st := param["storage"]; st != "" {
		if err := s.check(user, "/storage/"+st, "Datastore.Allocate"); err != nil {
			return err
		}
	} else if hasKey(delParam, "storage") {
		if err := s.check(user, "/storage/local", "Datastore.Allocate"); err != nil {
			return err
		}
	}
	if current == nil {
		return nil
	}
	if current["dumpdir"] != "" {
		return route.Fail("only root@pam may edit jobs with a 'dumpdir' option.")
	}
	if st := vzdumpStorageParam(current); st != "" {
		return s.check(user, "/storage/"+st, "Datastore.Allocate")
	}
	return nil
}

// backupJobUpdate is Backup.pm "update_job".
func (s *Server) backupJobUpdate(r *route.Request) (any, error) {
	id := r.Str("id")
	param := paramsExcept(r, "id", "delete")
	deletes := splitList(r.Str("delete"))
	if err := s.storagePruneCheck(param); err != nil {
		return nil, err
	}
	if err := s.backupAssertUpdate(r.User, param, deletes, nil); err != nil {
		return nil, err
	}
	if err := s.backupCheckPool(r.User, param["pool"]); err != nil {
		return nil, err
	}
	if err := scheduleParamCheck(param, false); err != nil {
		return nil, err
	}
	if len(param) == 0 && len(deletes) == 0 {
		return nil, route.Fail("no options specified")
	}
	if err := verifyVzdumpParams(param, false); err != nil {
		return nil, err
	}
	if err := checkLineFeeds(param); err != nil {
		return nil, err
	}
	old := s.state.BackupJobs[id]
	if old == nil {
		return nil, route.Fail("no such vzdump job")
	}
	if err := s.backupAssertUpdate(r.User, param, deletes, old); err != nil {
		return nil, err
	}
	job := map[string]string{}
	for k, v := range old {
		job[k] = v
	}
	for _, k := range deletes {
		// option_exists, or one of the job's own deletable keys.
		if k != "comment" && k != "repeat-missed" && !slices.Contains(vzdumpOptionKeys(), k) {
			return nil, lockedParamErr("delete", fmt.Sprintf("unknown option '%s'", k))
		}
		delete(job, k)
	}
	for k, v := range param {
		job[k] = v
	}
	if hasKey(job, "exclude") && !hasKey(job, "pool") {
		job["all"] = "1"
	}
	switch {
	case hasKey(param, "vmid"):
		delete(job, "all")
		delete(job, "exclude")
		delete(job, "pool")
	case param["all"] == "1":
		delete(job, "vmid")
		delete(job, "pool")
	case job["pool"] != "":
		delete(job, "vmid")
		delete(job, "all")
		delete(job, "exclude")
	}
	if err := verifyVzdumpParams(job, true); err != nil {
		return nil, err
	}
	if v, ok := job["prune-backups"]; ok {
		job["prune-backups"] = normalizePrune(v)
	}
	s.state.BackupJobs[id] = job
	return nil, nil
}

// vzdumpOptionKeys are Common.pm's $confdesc keys (option_exists).
func vzdumpOptionKeys() []string {
	var out []string
	for _, p := range vzdumpOptionParams() {
		switch p.Name {
		case "schedule", "starttime", "enabled", "repeat-missed", "comment":
			continue
		}
		out = append(out, p.Name)
	}
	return out
}

// backupIncluded is BackupInfo.pm get_included_vmids: the guests every
// vzdump job (enabled or not) includes, as VZDump::get_included_guests
// selects them.
func (s *Server) backupIncluded() (map[int]bool, error) {
	out := map[int]bool{}
	for _, id := range s.state.BackupJobOrder {
		job := s.state.BackupJobs[id]
		var ids []int
		switch {
		case job["pool"] != "":
			// API2Tools.pm get_resource_pool_guest_members: the pool's own
			// guests; a pool gone fails the whole answer.
			p := s.state.Pools[job["pool"]]
			if p == nil {
				return nil, route.Fail("pool '%s' does not exist", job["pool"])
			}
			ids = p.sortedVMIDs()
		case job["vmid"] != "":
			for _, v := range splitList(job["vmid"]) {
				n, _ := strconv.Atoi(v)
				ids = append(ids, n)
			}
		case job["all"] == "1":
			excl := map[string]bool{}
			for _, v := range splitList(job["exclude"]) {
				excl[v] = true
			}
			for id := range s.state.Guests {
				if !excl[strconv.Itoa(id)] {
					ids = append(ids, id)
				}
			}
		}
		for _, id := range ids {
			if g := s.state.Guests[id]; g != nil && job["node"] != "" && g.Node != job["node"] {
				continue
			}
			out[id] = true
		}
	}
	return out, nil
}

// backupNotBackedUp is BackupInfo.pm get_guests_not_in_backup: the guests
// the caller may audit that no job includes, with their name.
func (s *Server) backupNotBackedUp(r *route.Request) (any, error) {
	included, err := s.backupIncluded()
	if err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(s.state.Guests))
	for id := range s.state.Guests {
		ids = append(ids, id)
	}
	sort.Ints(ids)
	out := []map[string]any{}
	for _, id := range ids {
		if included[id] || !s.can(r.User, "/vms/"+strconv.Itoa(id), "VM.Audit") {
			continue
		}
		g := s.state.Guests[id]
		e := map[string]any{"vmid": id, "type": g.Type}
		key := "name"
		if g.Type == "lxc" {
			key = "hostname"
		}
		if name, ok := g.Conf[key]; ok {
			e["name"] = name
		}
		out = append(out, e)
	}
	return out, nil
}

// backupJobsForget is VZDump::Plugin remove_vmid_from_backup_jobs, run by
// a destroy with purge: the guest leaves each job's vmid list (a job
// left with none goes) or its exclude list.
func (s *Server) backupJobsForget(vmid int) {
	drop := func(list string) string {
		return strings.Join(slices.DeleteFunc(splitList(list), func(v string) bool { return v == strconv.Itoa(vmid) }), ",")
	}
	for _, id := range slices.Clone(s.state.BackupJobOrder) {
		job := s.state.BackupJobs[id]
		switch {
		case hasKey(job, "vmid"):
			if l := drop(job["vmid"]); l != "" {
				job["vmid"] = l
			} else {
				delete(s.state.BackupJobs, id)
				s.state.BackupJobOrder = slices.DeleteFunc(s.state.BackupJobOrder, func(x string) bool { return x == id })
			}
		case hasKey(job, "exclude"):
			if l := drop(job["exclude"]); l != "" {
				job["exclude"] = l
			} else {
				delete(job, "exclude")
			}
		}
	}
}
