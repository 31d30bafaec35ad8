package pvesim

import (
	"fmt"
	"github.com/proxmops/proxmops/internal/pvefirewall"
	"github.com/proxmops/proxmops/pvesim/route"
	"regexp"
	"sort"
	"strings"
)

// Proxmox's firewall names (services, protocols, ICMP types, macros):
// one copy, shared with the manifest's rule checks.
type fwMacroDef = pvefirewall.Macro

var (
	fwServiceNames = pvefirewall.ServiceNames
	fwProtocols    = pvefirewall.Protocols
	fwICMPTypes    = pvefirewall.ICMPTypes
	fwICMPv6Types  = pvefirewall.ICMPv6Types
	fwMacros       = pvefirewall.Macros
	fwMacrosV6     = pvefirewall.MacrosV6
)

// fieldSet is a set of the words of s.
func fieldSet(s string) map[string]bool {
	out := map[string]bool{}
	for _, f := range strings.Fields(s) {
		out[f] = true
	}
	return out
}

// fwMacroIndex is init_firewall_macros: every macro by name (the IPv6-only
// ones included), its preferred spelling by lower-case name, and the IP
// version a macro is limited to.
var fwMacroIndex = func() (idx struct {
	byName    map[string]fwMacroDef
	v6        map[string]fwMacroDef
	preferred map[string]string
	only      map[string]int
},
) {
	idx.byName, idx.v6 = map[string]fwMacroDef{}, map[string]fwMacroDef{}
	idx.preferred, idx.only = map[string]string{}, map[string]int{}
	for _, m := range fwMacros {
		idx.byName[m.Name] = m
		idx.preferred[strings.ToLower(m.Name)] = m.Name
	}
	for _, m := range fwMacrosV6 {
		idx.v6[m.Name] = m
		if _, ok := idx.byName[m.Name]; !ok {
			idx.byName[m.Name] = m
			idx.preferred[strings.ToLower(m.Name)] = m.Name
			idx.only[m.Name] = 6
		}
	}
	return idx
}()

// fwMacroList is get_macros for GET /cluster/firewall/macros.
func fwMacroList() []map[string]any {
	names := make([]string, 0, len(fwMacroIndex.byName))
	for n := range fwMacroIndex.byName {
		names = append(names, n)
	}
	sort.Strings(names)
	out := []map[string]any{}
	for _, n := range names {
		d := fwMacroIndex.byName[n].Descr
		if d == "" {
			d = n
		}
		out = append(out, map[string]any{"macro": n, "descr": d})
	}
	return out
}

// fwRuleEnvTypes is $rule_env_direction_lookup; fwRuleEnvIface is
// $rule_env_iface_lookup.
var (
	fwRuleEnvTypes = map[string][]string{
		"ct": {"in", "out", "group"}, "vm": {"in", "out", "group"},
		"group": {"in", "out", "forward"}, "cluster": {"in", "out", "forward", "group"},
		"host": {"in", "out", "forward", "group"},
	}
	fwRuleEnvIface = map[string]bool{"ct": true, "vm": true, "cluster": true, "host": true}
	reFWAction     = regexp.MustCompile(`^(ACCEPT|DROP|REJECT)$`)
	reFWNetIface   = regexp.MustCompile(`^net(\d+)$`)
)

// fwVerifyAbort carries verify_rule's raise out of the checks.
type fwVerifyAbort struct{ err error }

// verifyFWRule is verify_rule. Without noerr the first problem is a
// parameter error (raise_param_exc), as for the API; with noerr they are
// collected in r.Errors, as parse_fw_rule does. Mixed IP versions found
// outside the address checks die in both cases.
func verifyFWRule(r *fwRule, cluster, fw *fwConf, env string, noerr bool) (err error) {
	defer func() {
		if p := recover(); p != nil {
			a, ok := p.(fwVerifyAbort)
			if !ok {
				panic(p)
			}
			err = a.err
		}
	}()
	errs := r.Errors
	if errs == nil {
		errs = map[string]string{}
	}
	count := 0
	add := func(param, msg string) {
		msg = strings.TrimSuffix(msg, "\n")
		if !noerr {
			panic(fwVerifyAbort{route.ParamErr(param, msg)})
		}
		count++
		if errs[param] == "" {
			errs[param] = msg
		}
	}
	ipversion := 0
	setVersion := func(v int) error {
		if v != 0 {
			if ipversion != 0 && v != ipversion {
				return fmt.Errorf("detected mixed ipv4/ipv6 addresses in rule\n")
			}
			ipversion = v
		}
		return nil
	}
	mustVersion := func(v int) {
		if err := setVersion(v); err != nil {
			panic(fwVerifyAbort{route.Fail("%s", strings.TrimSuffix(err.Error(), "\n"))})
		}
	}
	f := r.F
	verifyFWRuleKind(f, env, add)
	if f["iface"] != "" {
		if !fwRuleEnvIface[env] {
			add("type", "parameter -i not allowed for this rule type")
		}
		if err := checkFormat("pve-iface", f["iface"], "iface"); err != nil {
			add("iface", err.Error())
		}
		if (env == "vm" || env == "ct") && !reFWNetIface.MatchString(f["iface"]) {
			add("iface", `value does not match the regex pattern 'net\d+'`)
		}
	}
	if f["macro"] != "" {
		if p, ok := fwMacroIndex.preferred[strings.ToLower(f["macro"])]; ok {
			f["macro"] = p
		} else {
			add("macro", "unknown macro '"+f["macro"]+"'")
		}
	}
	proto := f["proto"]
	isICMP := false
	if proto != "" {
		if err := fwVerifyProtocol(proto); err != nil {
			add("proto", err.Error())
		}
		mustVersion(map[string]int{"icmp": 4, "icmpv6": 6, "ipv6-icmp": 6}[proto])
		isICMP = fwIsICMP(proto)
	}
	verifyFWRulePorts(f, isICMP, add)
	for _, name := range []string{"source", "dest"} {
		if f[name] == "" {
			continue
		}
		if v, err := fwParseAddressList(f[name]); err != nil {
			add(name, err.Error())
		} else if err := setVersion(v); err != nil {
			add(name, err.Error())
		}
		mustVersion(fwCheckRef(f[name], name, cluster, fw, add))
	}
	if ipversion != 0 {
		f["ipversion"] = fmt.Sprint(ipversion)
	}
	if f["macro"] != "" && count == 0 {
		if p, msg := fwApplyMacro(f["macro"], f, ipversion); p != "" {
			add(p, msg)
		}
	}
	if count > 0 {
		r.Errors = errs
	}
	return nil
}

// verifyFWRuleKind checks the type and action for the rule environment.
func verifyFWRuleKind(f map[string]string, env string, add func(string, string)) {
	typ, action := f["type"], f["action"]
	if typ == "" {
		add("type", "missing property")
	}
	if action == "" {
		add("action", "missing property")
	}
	if typ == "" {
		return
	}
	valid := false
	for _, t := range fwRuleEnvTypes[env] {
		valid = valid || t == typ
	}
	if !valid {
		add("type", fmt.Sprintf("invalid rule type '%s' for rule_env '%s'", typ, env))
	}
	switch typ {
	case "in", "out", "forward":
		if typ == "forward" && action == "REJECT" {
			add("action", "cannot define REJECT rules on forward chain")
		}
		if action != "" && !reFWAction.MatchString(action) {
			add("action", "unknown action '"+action+"'")
		}
	case "group":
		if env == "group" {
			add("type", "security groups not allowed")
		}
		if action != "" && !reFWName.MatchString(action) {
			add("action", "invalid characters in security group name")
		}
	default:
		add("type", "unknown rule type '"+typ+"'")
	}
}

// verifyFWRulePorts checks dport, icmp-type and sport against the protocol.
func verifyFWRulePorts(f map[string]string, isICMP bool, add func(string, string)) {
	proto := f["proto"]
	if f["dport"] != "" {
		if err := fwParsePorts(f["dport"], isICMP); err != nil {
			add("dport", err.Error())
		}
		if proto == "" {
			add("proto", "missing property - 'dport' requires this property")
		}
		if !fwPortProtocols[proto] && !isICMP {
			add("dport", "protocol '"+proto+"' does not support ports")
		}
	}
	if t := f["icmp-type"]; t != "" && t != "0" {
		if !isICMP {
			add("proto", "missing property - 'icmp-type' requires this property")
		}
		if f["dport"] != "" {
			add("icmp-type", "'icmp-type' cannot be specified together with 'dport'")
		}
		if proto == "icmp" && !fwICMPTypes[t] {
			add("icmp-type", "invalid icmp-type '"+t+"' for proto 'icmp'")
		} else if (proto == "icmpv6" || proto == "ipv6-icmp") && !fwICMPv6Types[t] {
			add("icmp-type", "invalid icmp-type '"+t+"' for proto '"+proto+"'")
		}
	}
	if f["sport"] != "" {
		if err := fwParsePorts(f["sport"], false); err != nil {
			add("sport", err.Error())
		}
		if proto == "" {
			add("proto", "missing property - 'sport' requires this property")
		}
		if !fwPortProtocols[proto] {
			add("sport", "protocol '"+proto+"' does not support ports")
		}
	}
}

// fwCheckRef is verify_rule's check_ipset_or_alias_property: an IP set or
// alias named in source or dest must exist (the scope prefix is not
// checked against where it lives); it returns the alias's IP version.
func fwCheckRef(value, name string, cluster, fw *fwConf, add func(string, string)) int {
	has := func(get func(*fwConf) bool) bool {
		return (cluster != nil && get(cluster)) || (fw != nil && get(fw))
	}
	if strings.HasPrefix(value, "+") {
		m := reFWIPSetRef.FindStringSubmatch(value)
		if m == nil {
			add(name, "invalid ipset name '"+value+"'")
		} else if !has(func(c *fwConf) bool { _, ok := c.IPSets[m[2]]; return ok }) {
			add(name, "no such ipset '"+m[2]+"'")
		}
		return 0
	}
	m := reFWAliasRef.FindStringSubmatch(value)
	if m == nil {
		return 0
	}
	alias := strings.ToLower(m[2])
	if !has(func(c *fwConf) bool { _, ok := c.Aliases[alias]; return ok }) {
		add(name, "no such alias '"+value+"'")
	}
	var e *fwAlias
	if m[1] != "dc/" && fw != nil {
		e = fw.Aliases[alias]
	}
	if m[1] != "guest/" && e == nil && cluster != nil {
		e = cluster.Aliases[alias]
	}
	if e == nil {
		return 0
	}
	return e.IPVersion
}

// fwApplyMacro is $apply_macro with verify set: the macro's templates
// against the rule's own fields; it returns the parameter in error.
func fwApplyMacro(name string, f map[string]string, ipversion int) (string, string) {
	def, ok := fwMacroIndex.byName[name]
	if !ok {
		return "macro", "unknown macro '" + name + "'"
	}
	if v6, ok := fwMacroIndex.v6[name]; ok && ipversion == 6 {
		def = v6
	}
	if req := fwMacroIndex.only[name]; ipversion != 0 && req != 0 && ipversion != req {
		return "", ""
	}
	for _, t := range def.Templates() {
		if f["action"] == "" {
			return "macro", "missing parameter 'action' in macro '" + name + "'"
		}
		for _, k := range []string{"proto", "dport", "sport"} {
			if v, in := t[k]; in && f[k] != "" && f[k] != v {
				return k, fmt.Sprintf("parameter '%s' already define in macro (value = '%s')", k, v)
			}
		}
	}
	return "", ""
}
