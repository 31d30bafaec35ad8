package pvesim

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"regexp/syntax"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/pveschema"
	"github.com/proxmops/proxmops/pvesim/route"
)

// The conformance tests compare the simulator's parameter definitions with
// the official Proxmox VE API schema (the API viewer's apidata). The schema
// files are reference data outside the repository: they are looked up in
// "shared/pve-api" next to the repository (or in $PVESIM_SCHEMA_DIR) and
// read at test time only.

const (
	schemaCurrent = "apidata-pve-9.1.3.json"
	schemaOld     = "apidata-pve-8.4.2.json"
)

// apiSchema maps "METHOD /path" to the method's description.
type apiSchema map[string]map[string]any

type schemaNode struct {
	Path     string                    `json:"path"`
	Info     map[string]map[string]any `json:"info"`
	Children []schemaNode              `json:"children"`
}

var schemaCache = map[string]apiSchema{}

func loadSchema(t *testing.T, file string) apiSchema {
	t.Helper()
	if s, ok := schemaCache[file]; ok {
		return s
	}
	b := pveschema.Read(t, file)
	var roots []schemaNode
	if err := json.Unmarshal(b, &roots); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	out := apiSchema{}
	var walk func([]schemaNode)
	walk = func(ns []schemaNode) {
		for _, n := range ns {
			for m, info := range n.Info {
				out[m+" "+n.Path] = info
			}
			walk(n.Children)
		}
	}
	walk(roots)
	schemaCache[file] = out
	return out
}

// routeKey is "METHOD /path" with the simulator's rest marker removed.
func routeKey(r *route.Route) string { return r.Method + " " + strings.ReplaceAll(r.Path, "*}", "}") }

// notInSchema are served routes the API viewer does not describe.
var notInSchema = map[string]string{
	"GET /": "the API root (PVE::API2 index) is not part of the API viewer's tree",
}

func schemaProps(info map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	params, _ := info["parameters"].(map[string]any)
	props, _ := params["properties"].(map[string]any)
	for k, v := range props {
		if m, ok := v.(map[string]any); ok {
			out[k] = m
		}
	}
	return out
}

// truthy reads the schema's 0/1, "0"/"1" and true/false flags.
func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x != "" && x != "0"
	}
	return false
}

func schemaNum(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// normPattern turns a Perl pattern as the schema prints it into a
// canonical form: "(?^:x)" groups become "(?:x)", Perl's "{,n}" and "\0"
// are spelt out, and the parsed, simplified syntax tree is printed, so
// redundant groups do not count as differences.
func normPattern(p string) string {
	p = strings.ReplaceAll(p, "(?^:", "(?:")
	p = strings.ReplaceAll(p, "(?^i:", "(?i:")
	p = strings.ReplaceAll(p, "{,", "{0,")
	p = strings.ReplaceAll(p, `\0`, `\x00`)
	// Proxmox anchors the whole pattern: anchors and groups around all of
	// it are redundant.
	for {
		q := strings.TrimSuffix(strings.TrimPrefix(p, "^"), "$")
		if strings.HasPrefix(q, "(?:") && strings.HasSuffix(q, ")") && balancedGroup(q) {
			q = q[3 : len(q)-1]
		}
		if q == p {
			break
		}
		p = q
	}
	if p == "" {
		return ""
	}
	re, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return p
	}
	return re.Simplify().String()
}

// balancedGroup says whether the first "(" of p closes at its last byte.
func balancedGroup(p string) bool {
	depth := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '\\':
			i++
		case '(':
			depth++
		case ')':
			depth--
			if depth == 0 && i != len(p)-1 {
				return false
			}
		}
	}
	return depth == 0
}

var reIndexRange = regexp.MustCompile(`\(n is 0 to (\d+)`)

// knownDeviations are differences from the 9.1 schema that are known and
// accepted, each with the reason; the test reports them instead of failing.
// Keys are prefixes of the difference lines.
var knownDeviations = map[string]string{
	"GET /nodes/{node}: proxies to":                                 "the simulator checks the node of every /nodes/{node} path; Proxmox answers this index locally",
	"GET /nodes/{node}/tasks/{upid}: proxies to":                    "the simulator checks the node of every /nodes/{node} path; Proxmox answers this index locally",
	"GET /nodes/{node}/qemu/{vmid}/snapshot/{snapname}: proxies to": "the simulator checks the node of every /nodes/{node} path; Proxmox answers this index locally",
	"GET /nodes/{node}/storage/{storage}: proxies to":               "the simulator checks the node of every /nodes/{node} path; Proxmox answers this index locally",
	"POST /nodes/{node}/storage/{storage}/upload: proxies to":       "Proxmox streams uploads on the receiving node and proxies them itself; the simulator checks the node first",
}

// datacenterOptionsNotServed are the datacenter.cfg options PUT
// /cluster/options does not take: the simulator serves the tag options only.
var datacenterOptionsNotServed = []string{"bwlimit", "consent-text", "console", "crs", "description", "email_from",
	"fencing", "ha", "http_proxy", "keyboard", "language", "mac_prefix", "max_workers", "migration",
	"migration_unsecure", "next-id", "notify", "replication", "u2f", "webauthn"}

func init() {
	for _, k := range datacenterOptionsNotServed {
		knownDeviations["PUT /cluster/options: "+k+": not defined by the simulator"] = "the simulator serves datacenter.cfg's tag options (tag-style, user-tag-access, registered-tags) only"
	}
}

func knownDeviation(line string) (string, bool) {
	for prefix, why := range knownDeviations {
		if strings.HasPrefix(line, prefix) {
			return why, true
		}
	}
	return "", false
}

// indexedRanges are the ranges of indexed families whose schema
// description does not state them (pve-container's $MAX_* constants).
var indexedRanges = map[string]int{}

// compareParam checks one parameter (or property-string key) against the
// schema and returns the differences.
func compareParam(path string, p *route.Param, sp map[string]any) []string {
	var diffs []string
	add := func(format string, args ...any) { diffs = append(diffs, path+": "+fmt.Sprintf(format, args...)) }
	if alias, ok := sp["alias"].(string); ok {
		if p.AliasOf != alias {
			add("alias of %q, schema says %q", p.AliasOf, alias)
		}
		ka, _ := sp["keyAlias"].(string)
		if p.KeyAliasOf != ka {
			add("key alias %q, schema says %q", p.KeyAliasOf, ka)
		}
		return diffs
	}
	if p.AliasOf != "" {
		add("is an alias of %q, schema has a full definition", p.AliasOf)
		return diffs
	}
	if t, ok := sp["type"].(string); ok && t != p.Type.String() {
		add("type %s, schema says %s", p.Type, t)
	}
	if opt := truthy(sp["optional"]); opt != p.Optional {
		add("optional=%v, schema says %v", p.Optional, opt)
	}
	if isDef := truthy(sp["default_key"]); isDef != p.IsDefault {
		add("default_key=%v, schema says %v", p.IsDefault, isDef)
	}
	var enum []string
	if e, ok := sp["enum"].([]any); ok {
		for _, v := range e {
			enum = append(enum, fmt.Sprint(v))
		}
	}
	if strings.Join(enum, ",") != strings.Join(p.EnumValues, ",") {
		add("enum %v, schema says %v", p.EnumValues, enum)
	}
	numCheck := func(name string, mine *float64) {
		want, has := schemaNum(sp[name])
		switch {
		case has && mine == nil:
			add("no %s, schema says %v", name, want)
		case !has && mine != nil:
			add("%s %v, schema has none", name, *mine)
		case has && *mine != want:
			add("%s %v, schema says %v", name, *mine, want)
		}
	}
	numCheck("minimum", p.Minimum)
	numCheck("maximum", p.Maximum)
	if ml, _ := schemaNum(sp["maxLength"]); int(ml) != p.MaxLength {
		add("maxLength %d, schema says %v", p.MaxLength, ml)
	}
	if ml, _ := schemaNum(sp["minLength"]); int(ml) != p.MinLength {
		add("minLength %d, schema says %v", p.MinLength, ml)
	}
	pat, _ := sp["pattern"].(string)
	if normPattern(pat) != normPattern(p.PatternSrc) {
		add("pattern %q, schema says %q", p.PatternSrc, pat)
	}
	req, _ := sp["requires"].(string)
	if req != p.RequiresP {
		add("requires %q, schema says %q", p.RequiresP, req)
	}
	switch f := sp["format"].(type) {
	case string:
		if p.Format != f {
			add("format %q, schema says %q", p.Format, f)
		}
		if p.PropFormat != nil {
			add("has an inline property string, schema names format %q", f)
		}
	case map[string]any:
		if p.PropFormat == nil {
			add("is not a property string (format %q), schema describes one", p.Format)
			break
		}
		diffs = append(diffs, comparePropFormat(path, p.PropFormat, f)...)
	default:
		if p.Format != "" || p.PropFormat != nil {
			add("format %q, schema has none", p.Format)
		}
	}
	return diffs
}

func comparePropFormat(path string, pf *route.PropFormat, sf map[string]any) []string {
	var diffs []string
	for _, k := range sortedKeys(sf) {
		sk, _ := sf[k].(map[string]any)
		p := pf.Keys[k]
		if p == nil {
			diffs = append(diffs, fmt.Sprintf("%s.%s: missing key", path, k))
			continue
		}
		diffs = append(diffs, compareParam(path+"."+k, p, sk)...)
	}
	for _, k := range pf.KeyNames() {
		if _, ok := sf[k]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s.%s: key not in schema", path, k))
		}
	}
	return diffs
}

// compareRoute checks one served method's parameters against the schema.
func compareRoute(r *route.Route, info map[string]any) []string {
	var diffs []string
	props := schemaProps(info)
	mine := map[string]*route.Param{}
	for _, p := range r.Params.All() {
		mine[p.SchemaName()] = p
	}
	if params, _ := info["parameters"].(map[string]any); truthy(params["additionalProperties"]) {
		diffs = append(diffs, "schema allows additional properties, the simulator does not")
	}
	for _, name := range sortedKeys(props) {
		sp := props[name]
		p := mine[name]
		if p == nil {
			diffs = append(diffs, name+": not defined by the simulator")
			continue
		}
		diffs = append(diffs, compareParam(name, p, sp)...)
		if p.IndexMax >= 0 {
			desc, _ := sp["description"].(string)
			want := -1
			if m := reIndexRange.FindStringSubmatch(desc); m != nil {
				want, _ = strconv.Atoi(m[1])
			} else if n, ok := indexedRanges[r.Path+" "+name]; ok {
				want = n
			}
			if want >= 0 && want != p.IndexMax {
				diffs = append(diffs, fmt.Sprintf("%s: index range 0..%d, schema says 0..%d", name, p.IndexMax, want))
			}
		}
	}
	for _, name := range sortedKeys(mine) {
		if _, ok := props[name]; !ok {
			diffs = append(diffs, name+": not in schema")
		}
	}
	return diffs
}

// sortedRoutes is every method a simulator serves, in routeKey order.
func sortedRoutes() []*route.Route {
	routes := New(Options{}).Routes()
	sort.Slice(routes, func(i, j int) bool { return routeKey(routes[i]) < routeKey(routes[j]) })
	return routes
}

// TestConformanceWithSchema proves that, for every method the simulator
// serves, its parameters (names, types, optionality, enumerations, ranges,
// lengths, patterns, formats, links and property-string keys) are those of
// Proxmox VE 9.1's schema.
func TestConformanceWithSchema(t *testing.T) {
	schema := loadSchema(t, schemaCurrent)
	routes := sortedRoutes()
	checked := 0
	for _, r := range routes {
		key := routeKey(r)
		info, ok := schema[key]
		if !ok {
			if why, known := notInSchema[key]; known {
				t.Logf("%s: not in the schema (%s)", key, why)
				continue
			}
			t.Errorf("%s: served, but the 9.1 schema has no such method", key)
			continue
		}
		checked++
		diffs := compareRoute(r, info)
		if want := proxyTo(info); want != r.ProxyTo {
			diffs = append(diffs, fmt.Sprintf("proxies to %q, schema says %q", r.ProxyTo, want))
		}
		for _, d := range diffs {
			line := key + ": " + d
			if why, ok := knownDeviation(line); ok {
				t.Logf("known deviation: %s (%s)", line, why)
				continue
			}
			t.Errorf("%s", line)
		}
	}
	t.Logf("%d served methods checked against the 9.1 schema", checked)
}

func proxyTo(info map[string]any) string {
	s, _ := info["proxyto"].(string)
	return s
}

// TestSchemaDifferences84 reports how the 8.4 schema differs from 9.1 for
// the methods the simulator serves (docs/pvesim.md summarises it).
func TestSchemaDifferences84(t *testing.T) {
	cur := loadSchema(t, schemaCurrent)
	old := loadSchema(t, schemaOld)
	routes := sortedRoutes()
	var report []string
	for _, r := range routes {
		key := routeKey(r)
		ci, ok := cur[key]
		if !ok {
			continue
		}
		oi, ok := old[key]
		if !ok {
			report = append(report, key+": new in 9.x")
			continue
		}
		for _, d := range diffSchemaMethods(oi, ci) {
			report = append(report, key+": "+d)
		}
	}
	if len(report) == 0 {
		t.Log("8.4 and 9.1 agree on every served method")
	}
	for _, line := range report {
		t.Log(line)
	}
	// The differences docs/pvesim.md names must be there.
	for _, want := range []string{
		"POST /nodes/{node}/lxc: ha-managed: added",
		"POST /nodes/{node}/lxc: env: added",
		"POST /nodes/{node}/qemu: allow-ksm: added",
		"POST /nodes/{node}/qemu: scsi[n].cyls: removed",
		"PUT /nodes/{node}/network: regenerate-frr: added",
		"PUT /cluster/sdn: lock-token: added",
	} {
		found := false
		for _, line := range report {
			if strings.HasPrefix(line, want) {
				found = true
			}
		}
		if !found {
			t.Errorf("expected a difference starting %q between 8.4 and 9.1", want)
		}
	}
	// Both versions answer resize with a task (7.x answered null).
	for _, key := range []string{"PUT /nodes/{node}/qemu/{vmid}/resize", "PUT /nodes/{node}/lxc/{vmid}/resize"} {
		for name, sch := range map[string]apiSchema{"8.4": old, "9.1": cur} {
			if rt := returnsType(sch[key]); rt != "string" {
				t.Errorf("%s %s returns %v, want a UPID string", name, key, rt)
			}
		}
	}
}

// diffSchemaMethods lists what changed from the old to the new description.
func diffSchemaMethods(old, cur map[string]any) []string {
	var out []string
	op, cp := schemaProps(old), schemaProps(cur)
	for _, k := range sortedKeys(cp) {
		if _, ok := op[k]; !ok {
			out = append(out, k+": added")
		}
	}
	for _, k := range sortedKeys(op) {
		if _, ok := cp[k]; !ok {
			out = append(out, k+": removed")
		}
	}
	for _, k := range sortedKeys(cp) {
		o, ok := op[k]
		if !ok {
			continue
		}
		out = append(out, diffSchemaProp(k, o, cp[k])...)
	}
	ro, _ := json.Marshal(returnsType(old))
	rc, _ := json.Marshal(returnsType(cur))
	if string(ro) != string(rc) {
		out = append(out, fmt.Sprintf("returns %s, was %s", rc, ro))
	}
	return out
}

func returnsType(info map[string]any) any {
	r, _ := info["returns"].(map[string]any)
	if r == nil {
		return nil
	}
	return r["type"]
}

func diffSchemaProp(path string, o, c map[string]any) []string {
	var out []string
	for _, attr := range []string{"type", "optional", "enum", "minimum", "maximum", "maxLength", "minLength", "pattern", "requires", "default_key", "alias"} {
		ob, _ := json.Marshal(o[attr])
		cb, _ := json.Marshal(c[attr])
		if string(ob) != string(cb) {
			out = append(out, fmt.Sprintf("%s %s %s, was %s", path, attr, cb, ob))
		}
	}
	of, oIsMap := o["format"].(map[string]any)
	cf, cIsMap := c["format"].(map[string]any)
	switch {
	case oIsMap && cIsMap:
		for _, k := range sortedKeys(cf) {
			ok, _ := of[k].(map[string]any)
			ck, _ := cf[k].(map[string]any)
			if ok == nil {
				out = append(out, path+"."+k+": added")
				continue
			}
			out = append(out, diffSchemaProp(path+"."+k, ok, ck)...)
		}
		for _, k := range sortedKeys(of) {
			if _, ok := cf[k]; !ok {
				out = append(out, path+"."+k+": removed")
			}
		}
	default:
		ob, _ := json.Marshal(o["format"])
		cb, _ := json.Marshal(c["format"])
		if string(ob) != string(cb) {
			out = append(out, fmt.Sprintf("%s format %s, was %s", path, cb, ob))
		}
	}
	return out
}

// TestUnservedPathsAnswer501 proves that every method the official schema
// lists but the simulator does not serve answers 501 as Proxmox does for
// an unknown method, instead of being half-served.
func TestUnservedPathsAnswer501(t *testing.T) {
	schema := loadSchema(t, schemaCurrent)
	srv, c := newSim(t, Options{})
	served := map[string]bool{}
	for _, r := range srv.Routes() {
		served[routeKey(r)] = true
	}
	reParam := regexp.MustCompile(`\{[^}]+\}`)
	n := 0
	for _, key := range sortedKeys(schema) {
		if served[key] {
			continue
		}
		method, path, _ := strings.Cut(key, " ")
		concrete := reParam.ReplaceAllStringFunc(path, func(p string) string {
			switch p {
			case "{node}":
				return "pve1"
			case "{vmid}":
				return "100"
			}
			return "x1"
		})
		req, err := http.NewRequest(method, srv.APIURL()+concrete, nil)
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range c.header {
			req.Header[k] = v
		}
		r := c.send(req)
		want := fmt.Sprintf("Method '%s %s' not implemented", method, concrete)
		if r.Status != 501 || r.Reason != want {
			t.Errorf("%s (%s): %d %q, want 501 %q", key, concrete, r.Status, r.Reason, want)
		}
		n++
	}
	t.Logf("%d unserved schema methods answer 501", n)
}
