package pvesim

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/proxmops/proxmops/pvesim/route"
)

// The HA stack, as pve-ha-manager runs it: resources.cfg (the requested
// state of each HA resource), the CRM's service status, and the queue of CRM
// commands. The API only writes the configuration or queues a command; the
// manager acts on it in its next round, haRoundDelay later (scaled by the
// task speed like task durations: with TaskSpeed 0 it acts before the
// request that asked for it answers). A round combines what the CRM decides
// and what the LRM on the guest's node then runs: qmstart/qmshutdown/qmstop
// (vzstart/vzshutdown/vzstop) tasks by root@pam.

// haRoundDelay is how long the HA stack takes to act on a request: the CRM
// and the LRM each work in 10-second rounds (PVE/HA/CRM.pm and LRM.pm,
// $max_time = 10).
const haRoundDelay = 10 * time.Second

// HAState is the cluster's /etc/pve/ha: resources.cfg and manager_status.
type HAState struct {
	// Resources are the sections of resources.cfg by sid ("vm:100"); each
	// holds the keys written, "type" included.
	Resources map[string]map[string]string `json:"resources"`
	// Order is the order of the sections in the file.
	Order []string `json:"order,omitempty"`
	// Services is the CRM's service_status.
	Services map[string]*HAService `json:"services,omitempty"`
	// Commands are queued CRM commands (ha/crm_commands), e.g. "stop vm:100 0".
	Commands []string `json:"commands,omitempty"`
}

// HAService is one entry of the CRM's service status.
type HAService struct {
	State   string `json:"state"` // request_start, started, request_stop, stopped, error
	Node    string `json:"node"`
	Running bool   `json:"running,omitempty"`
	// Timeout of a requested stop: 0 is a hard stop; nil the LRM's 60 s shutdown.
	Timeout *int `json:"timeout,omitempty"`
	// Cmd is a CRM command waiting for the service ("stop", timeout).
	Cmd []string `json:"cmd,omitempty"`
	// Failures counts failed starts since the last successful one.
	Failures int `json:"failures,omitempty"`
	busy     bool
}

// haTypes maps guest types to HA resource types (PVE::HA::Tools::get_ha_resource_type).
var haTypes = map[string]string{"qemu": "vm", "lxc": "ct"}

func (s *Server) ha() *HAState {
	if s.state.HA == nil {
		s.state.HA = &HAState{}
	}
	h := s.state.HA
	if h.Resources == nil {
		h.Resources = map[string]map[string]string{}
	}
	if h.Services == nil {
		h.Services = map[string]*HAService{}
	}
	return h
}

// haSID is the sid of a guest's HA resource.
func haSID(g *Guest) string { return haTypes[g.Type] + ":" + strconv.Itoa(g.VMID) }

// haRequestState is the requested state with the defaults read_and_check_resources_config applies.
func haRequestState(conf map[string]string) string {
	st := conf["state"]
	if st == "" || st == "enabled" {
		return "started"
	}
	return st
}

// haConfigured is service_is_configured: the sid has a section.
func (s *Server) haConfigured(sid string) bool {
	return s.state.HA != nil && s.state.HA.Resources[sid] != nil
}

// haManaged is vm_is_ha_managed: configured and not ignored (then API
// calls bypass the HA stack).
func (s *Server) haManaged(g *Guest) bool {
	if s.state.HA == nil {
		return false
	}
	conf := s.state.HA.Resources[haSID(g)]
	return conf != nil && conf["state"] != "ignored"
}

// haStatusOf is get_service_status, the "ha" object of status/current.
func (s *Server) haStatusOf(g *Guest) map[string]any {
	if !s.haManaged(g) {
		return map[string]any{"managed": 0}
	}
	out := map[string]any{"managed": 1}
	if sv := s.state.HA.Services[haSID(g)]; sv != nil {
		out["state"] = sv.State
	}
	return out
}

// haParseSID is PVE::HA::Config::parse_sid.
func (s *Server) haParseSID(raw string) (sid, typ, name string, err error) {
	if regexp.MustCompile(`^\d+$`).MatchString(raw) {
		id, _ := strconv.Atoi(raw)
		g := s.state.Guests[id]
		if g == nil {
			return "", "", "", route.Fail("unable to detect SID from VMID - VM/CT %s does not exist", raw)
		}
		return haTypes[g.Type] + ":" + raw, haTypes[g.Type], raw, nil
	}
	if m := regexp.MustCompile(`^(\S+):(\S+)$`).FindStringSubmatch(raw); m != nil {
		return raw, m[1], m[2], nil
	}
	return "", "", "", route.Fail("unable to parse service id '%s'", raw)
}

// haFile is resources.cfg as SectionConfig writes it (comment first, then
// the options sorted); its SHA-1 is the digest.
func (h *HAState) haFile() string {
	var b strings.Builder
	for _, sid := range h.Order {
		conf := h.Resources[sid]
		if conf == nil {
			continue
		}
		_, name, _ := strings.Cut(sid, ":")
		fmt.Fprintf(&b, "%s: %s\n", conf["type"], name)
		if c := conf["comment"]; c != "" {
			fmt.Fprintf(&b, "\tcomment %s\n", c)
		}
		for _, k := range sortedKeys(conf) {
			if k != "type" && k != "comment" && conf[k] != "" {
				fmt.Fprintf(&b, "\t%s %s\n", k, conf[k])
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (h *HAState) digest() string {
	return sha1Hex(h.haFile())
}

// haKeyTypes are the typed keys of a resource section (check_value turns them into numbers).
var haKeyTypes = map[string]route.Type{"failback": route.TBoolean, "max_restart": route.TInteger, "max_relocate": route.TInteger}

func haOptionParams() []*route.Param {
	return []*route.Param{
		route.Str("comment").Opt().MaxLen(4096),
		route.Bool("failback").Opt().Default("1"),
		route.Str("group").Opt().Fmt("pve-configid"),
		route.Int("max_relocate").Opt().Min(0).Default("1"),
		route.Int("max_restart").Opt().Min(0).Default("1"),
		route.Str("state").Opt().Enum("started", "stopped", "enabled", "disabled", "ignored").Default("started"),
	}
}

var haOptionKeys = []string{"comment", "failback", "group", "max_relocate", "max_restart", "state"}

func init() {
	route.RegisterFormat("pve-ha-resource-or-vm-id", func(v string) error {
		if !regexp.MustCompile(`^([a-z]+:\S+|\d+)$`).MatchString(v) {
			return fmt.Errorf("value does not look like a valid ha resource id")
		}
		return nil
	})
	registerRoutes(func(s *Server) {
		sid := func() *route.Param { return route.Str("sid").Fmt("pve-ha-resource-or-vm-id") }
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha", Perm: route.PermCheck("/", "Sys.Audit"), Handler: func(*route.Request) (any, error) {
			return []map[string]any{{"id": "status"}, {"id": "resources"}, {"id": "groups"}, {"id": "rules"}}, nil
		}})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/resources", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(route.Str("type").Opt().Enum("ct", "vm")), Handler: s.haList})
		s.Handle(&route.Route{Method: "POST", Path: "/cluster/ha/resources", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(append(haOptionParams(), sid(), route.Str("type").Opt().Enum("ct", "vm"))...), Handler: s.haCreate})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/resources/{sid}", Perm: route.PermCheck("/", "Sys.Audit"),
			Params: route.NewParams(sid()), Handler: s.haRead})
		s.Handle(&route.Route{Method: "PUT", Path: "/cluster/ha/resources/{sid}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(append(haOptionParams(), sid(),
				route.Str("delete").Opt().Fmt("pve-configid-list").MaxLen(4096), route.Str("digest").Opt().MaxLen(64))...),
			Handler: s.haUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/cluster/ha/resources/{sid}", Perm: route.PermCheck("/", "Sys.Console"),
			Params: route.NewParams(sid(), route.Bool("purge").Opt().Default("1")), Handler: s.haDelete})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/status", Perm: route.PermUser(), Handler: func(*route.Request) (any, error) {
			return []map[string]any{{"name": "current"}, {"name": "manager_status"}, {"name": "disarm-ha"}, {"name": "arm-ha"}}, nil
		}})
		s.Handle(&route.Route{Method: "GET", Path: "/cluster/ha/status/current", Perm: route.PermCheck("/", "Sys.Audit"), Handler: s.haStatusCurrent})
	})
}

// haCopy is $api_copy_config: the section with sid and the file's digest.
func (s *Server) haCopy(sid string) (map[string]any, error) {
	h := s.ha()
	conf := h.Resources[sid]
	if conf == nil {
		return nil, route.Fail("no such resource '%s'", sid)
	}
	out := map[string]any{"sid": sid, "digest": h.digest()}
	for k, v := range conf {
		out[k] = typedValue(haKeyTypes[k], v)
	}
	return out, nil
}

func (s *Server) haList(r *route.Request) (any, error) {
	h := s.ha()
	out := []map[string]any{}
	for _, sid := range sortedKeys(h.Resources) {
		if t := r.Str("type"); t != "" && h.Resources[sid]["type"] != t {
			continue
		}
		m, _ := s.haCopy(sid)
		out = append(out, m)
	}
	return out, nil
}

func (s *Server) haRead(r *route.Request) (any, error) {
	sid, _, _, err := s.haParseSID(r.Str("sid"))
	if err != nil {
		return nil, err
	}
	return s.haCopy(sid)
}

// haCheckName is the VM/CT plugins' verify_name and exists.
func (s *Server) haCheckName(typ, name string) error {
	if typ != "vm" && typ != "ct" {
		return route.Fail("unknown section type '%s'", typ)
	}
	if !regexp.MustCompile(`^[1-9][0-9]+$`).MatchString(name) {
		return route.Fail("invalid VMID")
	}
	id, _ := strconv.Atoi(name)
	g := s.state.Guests[id]
	if g == nil {
		return route.Fail("resource '%s:%s' does not exist in cluster", typ, name)
	}
	if haTypes[g.Type] != typ {
		if typ == "vm" {
			return route.Fail("resource 'vm:%s' - guest with ID %s is not a VM", name, name)
		}
		return route.Fail("resource 'ct:%s' - guest with ID %s is not a container", name, name)
	}
	return nil
}

// haCreate is API2::HA::Resources create.
func (s *Server) haCreate(r *route.Request) (any, error) {
	sid, typ, name, err := s.haParseSID(r.Str("sid"))
	if err != nil {
		return nil, err
	}
	if t := r.Str("type"); t != "" && t != typ {
		return nil, route.Fail("types does not match")
	}
	if r.Has("group") {
		// Without HA groups (this simulator has none) they count as migrated to rules.
		return nil, route.Fail("invalid parameter 'group': ha groups have been migrated to rules")
	}
	if err := s.haCheckName(typ, name); err != nil {
		return nil, err
	}
	h := s.ha()
	if h.Resources[sid] != nil {
		return nil, route.Fail("create resource failed: resource ID '%s' already defined", sid)
	}
	conf := map[string]string{"type": typ}
	for _, k := range haOptionKeys {
		if r.Has(k) {
			conf[k] = r.Str(k)
		}
	}
	h.Resources[sid] = conf
	h.Order = append(h.Order, sid)
	s.haKick()
	return nil, nil
}

// haCheckServiceState is check_service_state: a service in error state
// takes no request but "disabled".
func (s *Server) haCheckServiceState(sid, reqState string) error {
	if sv := s.ha().Services[sid]; sv != nil && sv.State == "error" && s.haManagedSID(sid) {
		if reqState == "disabled" {
			return nil
		}
		return route.Fail("service '%s' in error state, must be disabled and fixed first", sid)
	}
	return nil
}

func (s *Server) haManagedSID(sid string) bool {
	conf := s.ha().Resources[sid]
	return conf != nil && conf["state"] != "ignored"
}

// haUpdate is API2::HA::Resources update (ha-manager set).
func (s *Server) haUpdate(r *route.Request) (any, error) {
	sid, _, _, err := s.haParseSID(r.Str("sid"))
	if err != nil {
		return nil, err
	}
	if r.Has("group") && r.Str("group") != "" {
		return nil, route.Fail("invalid parameter 'group': ha groups have been migrated to rules")
	}
	params := map[string]string{}
	for _, k := range haOptionKeys {
		if r.Has(k) {
			params[k] = r.Str(k)
		}
	}
	if err := s.haCheckServiceState(sid, params["state"]); err != nil {
		return nil, err
	}
	var deletes []string
	if r.Has("delete") {
		deletes = splitList(r.Str("delete"))
	}
	if err := s.haSet(sid, params, deletes, r.Str("digest")); err != nil {
		return nil, err
	}
	return nil, nil
}

// haSet is update_resources_config for one resource.
func (s *Server) haSet(sid string, params map[string]string, deletes []string, digest string) error {
	h := s.ha()
	const prefix = "update resources config failed: "
	if digest != "" && digest != h.digest() {
		return route.Fail(prefix + "detected modified configuration - file changed by other user? Try again.")
	}
	conf := h.Resources[sid]
	if conf == nil {
		return route.Fail(prefix+"no such resource '%s'", sid)
	}
	for _, k := range deletes {
		if !slices.Contains(haOptionKeys, k) {
			return route.Fail(prefix+"no such option '%s'", k)
		}
	}
	for k, v := range params {
		conf[k] = v
	}
	for _, k := range deletes {
		delete(conf, k)
	}
	s.haKick()
	return nil
}

// haDelete is API2::HA::Resources delete; purge (the default) takes the
// resource out of every rule (haRulesForget).
func (s *Server) haDelete(r *route.Request) (any, error) {
	sid, _, _, err := s.haParseSID(r.Str("sid"))
	if err != nil {
		return nil, err
	}
	if !s.haConfigured(sid) {
		return nil, route.Fail("cannot delete service '%s', not HA managed!", sid)
	}
	s.haRemove(sid)
	if r.BoolOr("purge", true) {
		s.haRulesForget(sid)
	}
	return nil, nil
}

// haRemove is delete_service_from_config.
func (s *Server) haRemove(sid string) {
	h := s.ha()
	delete(h.Resources, sid)
	for i, x := range h.Order {
		if x == sid {
			h.Order = append(h.Order[:i], h.Order[i+1:]...)
			break
		}
	}
	s.haKick()
}

// haStatusCurrent is API2::HA::Status status: quorum, master, fencing,
// one entry per LRM and one per service.
func (s *Server) haStatusCurrent(r *route.Request) (any, error) {
	h := s.ha()
	now := s.clock.Now().Unix()
	local := s.state.Nodes[0].Name
	out := []map[string]any{{"id": "quorum", "type": "quorum", "node": local, "status": "OK", "quorate": 1}}
	if len(h.Resources) == 0 && len(h.Services) == 0 {
		// A cluster that never had HA resources has no CRM master.
		return append(out, map[string]any{"id": "fencing", "type": "fencing", "node": local,
			"status": "standby (CRM watchdog standby)", "armed-state": "standby"}), nil
	}
	stamp := time.Unix(now, 0).UTC().Format("Mon Jan _2 15:04:05 2006")
	out = append(out,
		map[string]any{"id": "master", "type": "master", "node": local, "status": fmt.Sprintf("%s (active, %s)", local, stamp), "timestamp": now},
		map[string]any{"id": "fencing", "type": "fencing", "node": local, "status": "armed (CRM watchdog active)", "armed-state": "armed"})
	for _, n := range s.state.Nodes {
		state := "idle"
		wd := "watchdog standby"
		for _, sv := range h.Services {
			if sv.Node == n.Name && sv.State != "stopped" && sv.State != "error" && sv.State != "request_start" {
				state, wd = "active", "watchdog active"
			}
		}
		out = append(out, map[string]any{"id": "lrm:" + n.Name, "type": "lrm", "node": n.Name,
			"status": fmt.Sprintf("%s (%s, %s, %s)", n.Name, state, wd, stamp), "timestamp": now})
	}
	add := func(sid string, conf map[string]string, sv *HAService) {
		d := map[string]any{"id": "service:" + sid, "type": "service", "sid": sid}
		node := ""
		if sv != nil {
			node = sv.Node
			d["crm_state"] = sv.State
		} else if g := s.haGuest(sid); g != nil {
			node = g.Node
		}
		if node != "" {
			d["node"] = node
		} else {
			node = "---"
		}
		d["state"] = s.haVerboseState(sid, conf, sv)
		d["status"] = fmt.Sprintf("%s (%s, %s)", sid, node, d["state"])
		if conf != nil {
			d["request_state"] = haRequestState(conf)
			for _, k := range []string{"group", "max_restart", "max_relocate", "failback", "comment"} {
				if v, ok := conf[k]; ok {
					d[k] = typedValue(haKeyTypes[k], v)
				}
			}
		}
		out = append(out, d)
	}
	for _, sid := range sortedKeys(h.Services) {
		add(sid, h.Resources[sid], h.Services[sid])
	}
	for _, sid := range sortedKeys(h.Resources) {
		if h.Services[sid] == nil {
			add(sid, h.Resources[sid], nil)
		}
	}
	return out, nil
}

// haVerboseState is PVE::HA::Tools::get_verbose_service_state.
func (s *Server) haVerboseState(sid string, conf map[string]string, sv *HAService) string {
	if conf == nil {
		return "deleting"
	}
	req := haRequestState(conf)
	if req == "ignored" {
		return "ignored"
	}
	if s.haGuest(sid) == nil {
		return "not found"
	}
	if sv == nil {
		return "queued"
	}
	switch sv.State {
	case "stopped":
		switch req {
		case "started":
			return "starting"
		case "disabled":
			return "disabled"
		}
	case "started":
		if !sv.Running {
			return "starting"
		}
		if req == "stopped" || req == "disabled" {
			return "stopping"
		}
	case "error":
		if req == "disabled" {
			return "clearing error flag"
		}
	}
	return sv.State
}

// haGuest is the guest of a vm:/ct: sid, if it exists with that type.
func (s *Server) haGuest(sid string) *Guest {
	typ, name, _ := strings.Cut(sid, ":")
	id, err := strconv.Atoi(name)
	if err != nil {
		return nil
	}
	g := s.state.Guests[id]
	if g == nil || haTypes[g.Type] != typ {
		return nil
	}
	return g
}
