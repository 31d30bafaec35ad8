package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The firewall configuration files of pve-firewall (src/PVE/Firewall.pm):
// /etc/pve/firewall/cluster.fw, /etc/pve/nodes/NODE/host.fw and
// /etc/pve/firewall/VMID.fw. The simulator keeps them as text, as pmxcfs
// does, and every request parses them again (generic_fw_config_parser) and
// writes them back in Proxmox's layout (save_clusterfw_conf,
// save_hostfw_conf, save_vmfw_conf), so what a GET returns is what a real
// node reads back: rules verified again with their errors, IP sets sorted,
// names of groups and IP sets in lower case, /32 dropped from aliases. A
// guest's [OPTIONS] stay in Firewall (firewall.go); its file here holds
// its aliases, IP sets and rules.

// fwRule is one rule: its fields as parse_fw_rule sets them (enable and
// ipversion are numbers in the API) and the errors verify_rule found.
type fwRule struct {
	F      map[string]string
	Errors map[string]string
}

type fwAlias struct {
	Name, CIDR, Comment string
	IPVersion           int
}

type fwEntry struct {
	CIDR, Comment string
	Nomatch       bool
	Errors        map[string]string
}

// fwConf is a parsed file; env is its rule_env (cluster, host, vm, ct).
type fwConf struct {
	env           string
	Options       map[string]string
	Aliases       map[string]*fwAlias
	IPSets        map[string][]*fwEntry
	IPSetComments map[string]string
	Rules         []*fwRule
	Groups        map[string][]*fwRule
	GroupComments map[string]string
}

func newFWConf(env string) *fwConf {
	return &fwConf{env: env, Options: map[string]string{}, Aliases: map[string]*fwAlias{},
		IPSets: map[string][]*fwEntry{}, IPSetComments: map[string]string{},
		Groups: map[string][]*fwRule{}, GroupComments: map[string]string{}}
}

// fwFile names the text of a firewall file in the state.
func fwClusterFile() string              { return "cluster.fw" }
func fwHostFile(node string) string      { return "nodes/" + node + "/host.fw" }
func fwGuestFile(vmid int) string        { return strconv.Itoa(vmid) + ".fw" }
func (s *Server) fwText(f string) string { return s.state.FirewallFiles[f] }

func (s *Server) fwWrite(f, raw string) {
	if s.state.FirewallFiles == nil {
		s.state.FirewallFiles = map[string]string{}
	}
	if raw == "" {
		delete(s.state.FirewallFiles, f) // the save_* subs unlink an empty file
		return
	}
	s.state.FirewallFiles[f] = raw
}

// loadClusterFW is load_clusterfw_conf.
func (s *Server) loadClusterFW() *fwConf {
	return parseFWConf(s.fwText(fwClusterFile()), nil, "cluster", s.clock.Now())
}

// loadHostFW is load_hostfw_conf of a node.
func (s *Server) loadHostFW(cluster *fwConf, node string) *fwConf {
	return parseFWConf(s.fwText(fwHostFile(node)), cluster, "host", s.clock.Now())
}

// loadGuestFW is load_vmfw_conf (env "vm" or "ct").
func (s *Server) loadGuestFW(cluster *fwConf, env string, vmid int) *fwConf {
	return parseFWConf(s.fwText(fwGuestFile(vmid)), cluster, env, s.clock.Now())
}

var (
	reFWSection  = regexp.MustCompile(`(?i)^\[(options|aliases|rules)\]$`)
	reFWNamedSec = regexp.MustCompile(`(?i)^\[(group|ipset)\s+(\S+)\]\s*(?:#\s*(.*?)\s*)?$`)
	reFWComment  = regexp.MustCompile(`#\s*(.*?)\s*$`)
	reFWIPSetLn  = regexp.MustCompile(`^(!)?\s*(\S+)\s*$`)
)

// parseFWConf is generic_fw_config_parser. cluster is the cluster file
// already read (nil while reading the cluster file itself, which is then
// its own cluster configuration). Lines it cannot read are skipped, as the
// Perl warns and goes on.
func parseFWConf(raw string, cluster *fwConf, env string, now time.Time) *fwConf {
	c := newFWConf(env)
	if cluster == nil && env == "cluster" {
		cluster = c
	}
	section, group := "", ""
	seen := map[string]bool{}
	for _, line := range strings.Split(raw, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if m := reFWSection.FindStringSubmatch(line); m != nil {
			sec := strings.ToLower(m[1])
			if sec == "aliases" && env == "host" {
				section = ""
				continue
			}
			section = sec
			continue
		}
		if m := reFWNamedSec.FindStringSubmatch(line); m != nil {
			kind, name := strings.ToLower(m[1]), strings.ToLower(m[2])
			max := map[string]int{"group": fwMaxGroupName, "ipset": fwMaxIPSetName}[kind]
			if (kind == "group" && env != "cluster") || (kind == "ipset" && env == "host") ||
				len(name) > max || !reFWName.MatchString(name) {
				section = ""
				continue
			}
			section, group = kind, name
			if kind == "group" {
				c.Groups[name] = []*fwRule{}
				if m[3] != "" {
					c.GroupComments[name] = m[3]
				}
			} else {
				c.IPSets[name] = []*fwEntry{}
				seen = map[string]bool{}
				if m[3] != "" {
					c.IPSetComments[name] = m[3]
				}
			}
			continue
		}
		switch section {
		case "options":
			if k, v, ok := parseFWOption(env, line, now); ok {
				c.Options[k] = v
			}
		case "aliases":
			if a := parseFWAlias(line); a != nil {
				c.Aliases[strings.ToLower(a.Name)] = a
			}
		case "rules":
			if r, err := parseFWRule(line, cluster, c, env); err == nil {
				c.Rules = append(c.Rules, r)
			}
		case "group":
			if r, err := parseFWRule(line, cluster, nil, "group"); err == nil {
				c.Groups[group] = append(c.Groups[group], r)
			}
		case "ipset":
			c.IPSets[group] = append(c.IPSets[group], parseFWIPSetEntry(line, cluster, c, seen))
		}
	}
	return c
}

// parseFWIPSetEntry reads one IP set line: "[!]CIDR [# comment]"; an alias
// must exist, a duplicate or a zero prefix is an error of the entry.
func parseFWIPSetEntry(line string, cluster, c *fwConf, seen map[string]bool) *fwEntry {
	e := &fwEntry{}
	if m := reFWComment.FindStringSubmatchIndex(line); m != nil {
		e.Comment = line[m[2]:m[3]]
		line = line[:m[0]]
	}
	m := reFWIPSetLn.FindStringSubmatch(line)
	if m == nil {
		m = []string{"", "", strings.TrimSpace(line)}
	}
	e.Nomatch, e.CIDR = m[1] == "!", m[2]
	errs := map[string]string{}
	if am := reFWAliasRef.FindStringSubmatch(e.CIDR); am != nil {
		if _, _, err := fwResolveAlias(cluster, c, am[2], am[1]); err != nil {
			errs["cidr"] = strings.TrimSuffix(err.Error(), "\n")
		}
	} else if cidr, _, err := fwParseIPOrCIDR(e.CIDR); err != nil {
		errs["cidr"] = strings.TrimSuffix(err.Error(), "\n")
	} else {
		e.CIDR = cidr
	}
	if errs["cidr"] == "" && seen[e.CIDR] {
		errs["cidr"] = "duplicate ipset entry for '" + e.CIDR + "'"
	}
	if regexp.MustCompile(`/0+$`).MatchString(e.CIDR) {
		errs["cidr"] = "a zero prefix is not allowed in ipset entries\n"
	}
	if len(errs) > 0 {
		e.Errors = errs
	}
	seen[e.CIDR] = true
	return e
}

// fwResolveAlias is resolve_alias: a guest's own alias first, unless the
// scope is dc/, then the cluster's, unless it is guest/.
func fwResolveAlias(cluster, local *fwConf, name, scope string) (string, int, error) {
	if cluster == nil || cluster == local {
		cluster, local = local, nil
	}
	key := strings.ToLower(name)
	var e *fwAlias
	if scope != "dc/" && local != nil {
		e = local.Aliases[key]
	}
	if scope != "guest/" && e == nil && cluster != nil {
		e = cluster.Aliases[key]
	}
	if e == nil {
		return "", 0, fmt.Errorf("no such alias '%s'\n", name)
	}
	return e.CIDR, e.IPVersion, nil
}

// parseFWAlias is parse_alias: "NAME CIDR [# comment]".
func parseFWAlias(line string) *fwAlias {
	comment := ""
	if m := regexp.MustCompile(`\s*#\s*(.*?)\s*$`).FindStringSubmatchIndex(line); m != nil {
		comment = line[m[2]:m[3]]
		line = line[:m[0]]
	}
	m := regexp.MustCompile(`^(\S+)\s(\S+)$`).FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	cidr, v, err := fwParseIPOrCIDR(m[2])
	if err != nil {
		return nil
	}
	return &fwAlias{Name: m[1], CIDR: cidr, IPVersion: v, Comment: comment}
}

var fwLogLevels = []string{"emerg", "alert", "crit", "err", "warning", "notice", "info", "debug", "nolog"}

var (
	reFWRuleHead  = regexp.MustCompile(`^(\S+)\s+(\S+)\s*`)
	reFWMacroAct  = regexp.MustCompile(`^(\S+)\((ACCEPT|DROP|REJECT)\)$`)
	reFWRuleIface = regexp.MustCompile(`^-i (\S+)\s*`)
	reFWRuleOpts  = []struct {
		re  *regexp.Regexp
		key string
	}{
		{regexp.MustCompile(`^(?:-p|--?proto) (\S+)\s*`), "proto"},
		{regexp.MustCompile(`^--?dport (\S+)\s*`), "dport"},
		{regexp.MustCompile(`^--?sport (\S+)\s*`), "sport"},
		{regexp.MustCompile(`^--?source (\S+)\s*`), "source"},
		{regexp.MustCompile(`^--?dest (\S+)\s*`), "dest"},
		{regexp.MustCompile(`^--?log (` + strings.Join(fwLogLevels, "|") + `)\s*`), "log"},
		{regexp.MustCompile(`^--?icmp-type (\S+)\s*`), "icmp-type"},
	}
)

// parseFWRule is parse_fw_rule: the line, then verify_rule collecting the
// errors instead of failing (a rule it cannot verify at all is dropped).
func parseFWRule(line string, cluster, fw *fwConf, env string) (*fwRule, error) {
	r := &fwRule{F: map[string]string{}}
	if m := reFWComment.FindStringSubmatchIndex(line); m != nil {
		r.F["comment"] = line[m[2]:m[3]]
		line = line[:m[0]]
	}
	r.F["enable"] = "1"
	if strings.HasPrefix(line, "|") {
		r.F["enable"], line = "0", line[1:]
	}
	m := reFWRuleHead.FindStringSubmatch(line)
	if m == nil {
		return nil, fmt.Errorf("unable to parse rule: %s\n", line)
	}
	line = line[len(m[0]):]
	r.F["type"], r.F["action"] = strings.ToLower(m[1]), m[2]
	if t := r.F["type"]; t == "in" || t == "out" || t == "forward" {
		if mm := reFWMacroAct.FindStringSubmatch(r.F["action"]); mm != nil {
			r.F["macro"], r.F["action"] = mm[1], mm[2]
		}
	}
outer:
	for line != "" {
		if mm := reFWRuleIface.FindStringSubmatch(line); mm != nil {
			r.F["iface"], line = mm[1], line[len(mm[0]):]
			continue
		}
		if r.F["type"] == "group" {
			break
		}
		for _, o := range reFWRuleOpts {
			if mm := o.re.FindStringSubmatch(line); mm != nil {
				r.F[o.key], line = mm[1], line[len(mm[0]):]
				continue outer
			}
		}
		break
	}
	if line != "" {
		return nil, fmt.Errorf("unable to parse rule parameters: %s\n", line)
	}
	if err := verifyFWRule(r, cluster, fw, env, true); err != nil {
		return nil, err
	}
	return r, nil
}

// parseFWOption is parse_clusterfw_option / parse_hostfw_option /
// parse_vmfw_option: the value as the file holds it.
func parseFWOption(env, line string, now time.Time) (string, string, bool) {
	levels := strings.Join(fwLogLevels, "|")
	var pats []string
	switch env {
	case "cluster":
		if m := regexp.MustCompile(`(?i)^(enable):\s*(\d+)\s*$`).FindStringSubmatch(line); m != nil {
			v, _ := strconv.ParseInt(m[2], 10, 64)
			// A timestamp enable (the anti-lockout double call) lapses after 60 s.
			if v > 1 && now.Unix()-v > 60 {
				v = 0
			}
			return "enable", strconv.FormatInt(v, 10), true
		}
		pats = []string{`(ebtables):\s*(0|1)`, `(policy_(?:in|out|forward)):\s*(ACCEPT|DROP|REJECT)`}
		if m := regexp.MustCompile(`^(log_ratelimit):\s*(\S+)\s*$`).FindStringSubmatch(line); m != nil {
			return "log_ratelimit", m[2], true
		}
	case "host":
		pats = []string{
			`(enable|nosmurfs|tcpflags|ndp|log_nf_conntrack|nf_conntrack_allow_invalid|protection_synflood|nftables):\s*(0|1)`,
			`(log_level_(?:in|out|forward)|tcp_flags_log_level|smurf_log_level):\s*((?:` + levels + `)?)`,
			`(nf_conntrack_helpers):\s*((?:\S+[,]?)+)`,
			`(nf_conntrack_max|nf_conntrack_tcp_timeout_established|nf_conntrack_tcp_timeout_syn_recv|protection_synflood_rate|protection_synflood_burst|protection_limit):\s*(\d+)`,
		}
	default:
		return "", "", false
	}
	for _, p := range pats {
		if m := regexp.MustCompile(`(?i)^` + p + `\s*$`).FindStringSubmatch(line); m != nil {
			k, v := strings.ToLower(m[1]), m[2]
			switch {
			case strings.HasPrefix(k, "policy_"):
				v = strings.ToUpper(v)
			case strings.Contains(k, "log_level") || k == "nf_conntrack_helpers":
				v = strings.ToLower(v)
			case regexp.MustCompile(`^\d+$`).MatchString(v):
				n, _ := strconv.ParseInt(v, 10, 64)
				v = strconv.FormatInt(n, 10)
			}
			return k, v, true
		}
	}
	return "", "", false
}

// format writes the file as save_clusterfw_conf, save_hostfw_conf or
// save_vmfw_conf do (a guest's options are kept apart, see above).
func (c *fwConf) format() string {
	var b strings.Builder
	if len(c.Options) > 0 && c.env != "vm" && c.env != "ct" {
		b.WriteString("[OPTIONS]\n\n")
		for _, k := range sortedKeys(c.Options) {
			fmt.Fprintf(&b, "%s: %s\n", k, c.Options[k])
		}
		b.WriteString("\n")
	}
	if c.env != "host" {
		if len(c.Aliases) > 0 {
			b.WriteString("[ALIASES]\n\n")
			for _, k := range sortedKeys(c.Aliases) {
				a := c.Aliases[k]
				b.WriteString(a.Name + " " + a.CIDR + fwCommentSuffix(a.Comment) + "\n")
			}
			b.WriteString("\n")
		}
		c.formatIPSets(&b)
	}
	if len(c.Rules) > 0 {
		b.WriteString("[RULES]\n\n")
		formatFWRules(&b, c.Rules, true)
		b.WriteString("\n")
	}
	if c.env == "cluster" {
		for _, g := range sortedKeys(c.Groups) {
			if cm := c.GroupComments[g]; cm != "" {
				fmt.Fprintf(&b, "[group %s] # %s\n\n", g, cm)
			} else {
				fmt.Fprintf(&b, "[group %s]\n\n", g)
			}
			formatFWRules(&b, c.Groups[g], false)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// formatIPSets is $format_ipsets: entries sorted by CIDR, duplicates dropped.
func (c *fwConf) formatIPSets(b *strings.Builder) {
	for _, name := range sortedKeys(c.IPSets) {
		if cm := c.IPSetComments[name]; cm != "" {
			fmt.Fprintf(b, "[IPSET %s] # %s\n\n", name, cm)
		} else {
			fmt.Fprintf(b, "[IPSET %s]\n\n", name)
		}
		byCIDR := map[string]*fwEntry{}
		for _, e := range c.IPSets[name] {
			if _, dup := byCIDR[e.CIDR]; !dup {
				byCIDR[e.CIDR] = e
			}
		}
		for _, cidr := range sortedKeys(byCIDR) {
			e := byCIDR[cidr]
			line := e.CIDR
			if e.Nomatch {
				line = "!" + line
			}
			b.WriteString(line + fwCommentSuffix(e.Comment) + "\n")
		}
		b.WriteString("\n")
	}
}

// formatFWRules is $format_rules: a group rule keeps only its interface.
func formatFWRules(b *strings.Builder, rules []*fwRule, allowIface bool) {
	for _, r := range rules {
		f := r.F
		if v, ok := f["enable"]; ok && (v == "0" || v == "") {
			b.WriteString("|")
		}
		b.WriteString(strings.ToUpper(f["type"]))
		if f["macro"] != "" {
			b.WriteString(" " + f["macro"] + "(" + f["action"] + ")")
		} else {
			b.WriteString(" " + f["action"])
		}
		if allowIface && f["iface"] != "" {
			b.WriteString(" -i " + f["iface"])
		}
		if f["type"] != "group" {
			for _, k := range []string{"source", "dest", "proto", "dport", "sport", "log", "icmp-type"} {
				flag := map[string]string{"proto": "p"}[k]
				if flag == "" {
					flag = k
				}
				// A field is written when Perl takes it as true ("0" is
				// not), icmp-type whenever it is not empty.
				if v := f[k]; (v != "" && v != "0") || (k == "icmp-type" && v != "") {
					b.WriteString(" -" + flag + " " + v)
				}
			}
		}
		b.WriteString(fwCommentSuffix(f["comment"]) + "\n")
	}
}

// fwCommentSuffix is the " # comment" the formatters add for a comment
// Perl takes as true and not blank.
func fwCommentSuffix(c string) string {
	if strings.TrimSpace(c) == "" || c == "0" {
		return ""
	}
	return " # " + c
}

// fwDigestOf is a Digest::SHA1 over "key:value\n" lines, as
// copy_opject_with_digest and copy_list_with_digest compute it.
func fwDigestOf(lines []string) string {
	h := sha1.New()
	for _, l := range lines {
		h.Write([]byte(l))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// fwObjectDigest is copy_opject_with_digest's digest of an options map.
func fwObjectDigest(opts map[string]string) string {
	var lines []string
	for _, k := range sortedKeys(opts) {
		lines = append(lines, k+":"+opts[k]+"\n")
	}
	return fwDigestOf(lines)
}

// fwListDigest is copy_list_with_digest: each entry's keys sorted, values
// that are references (errors) left out; every entry then carries it (so
// a list is given to it once).
func fwListDigest(list []map[string]any) string {
	var lines []string
	for _, e := range list {
		for _, k := range sortedKeys(e) {
			switch v := e[k].(type) {
			case string:
				lines = append(lines, k+":"+v+"\n")
			case int:
				lines = append(lines, k+":"+strconv.Itoa(v)+"\n")
			}
		}
	}
	d := fwDigestOf(lines)
	for _, e := range list {
		e["digest"] = d
	}
	return d
}

// fwRuleNumeric are the rule fields parse_fw_rule and verify_rule set as
// numbers, which JSON shows as numbers.
var fwRuleNumeric = map[string]bool{"enable": true, "ipversion": true}

// fwRulesList is the rules as the API lists them (without pos yet).
func fwRulesList(rules []*fwRule) []map[string]any {
	out := make([]map[string]any, 0, len(rules))
	for _, r := range rules {
		m := map[string]any{}
		for k, v := range r.F {
			if fwRuleNumeric[k] {
				n, err := strconv.Atoi(v)
				if err == nil {
					m[k] = n
					continue
				}
			}
			m[k] = v
		}
		if len(r.Errors) > 0 {
			m["errors"] = r.Errors
		}
		out = append(out, m)
	}
	return out
}
