package manifest

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// Cluster-wide firewall objects: aliases (/cluster/firewall/aliases) and IP
// sets (/cluster/firewall/ipset/{name}), named as pve-firewall names them.

// FirewallAlias is a named address of the cluster firewall.
type FirewallAlias struct {
	Object
	Spec FirewallAliasSpec
}

// FirewallAliasSpec is the alias; metadata.name is the alias name.
type FirewallAliasSpec struct {
	CIDR    string `json:"cidr" pm:"required,format=fw-ip-or-cidr" doc:"The address or network the alias names (e.g. 192.168.1.0/24, 10.0.0.5, fd00::/64)."`
	Comment string `json:"comment,omitempty" pm:"format=fw-comment" doc:"Comment; proxmops adds its ownership marker."`
}

// Kind returns KindFirewallAlias.
func (*FirewallAlias) Kind() Kind { return KindFirewallAlias }

// Summary is the address the alias names.
func (a *FirewallAlias) Summary() string { return a.Spec.CIDR }

// MarshalJSON gives back the manifest shape.
func (a *FirewallAlias) MarshalJSON() ([]byte, error) {
	return marshalManifest(a.Kind(), &a.Object, &a.Spec)
}

// FirewallIPSet is a named set of addresses of the cluster firewall.
type FirewallIPSet struct {
	Object
	Spec FirewallIPSetSpec
}

// FirewallIPSetSpec is the set; metadata.name is the IP set name.
type FirewallIPSetSpec struct {
	Comment string               `json:"comment,omitempty" pm:"format=fw-comment" doc:"Comment; proxmops adds its ownership marker."`
	Entries []FirewallIPSetEntry `json:"entries,omitempty" doc:"The set's entries, compared as a set keyed by cidr (Proxmox keeps them sorted)."`
}

// FirewallIPSetEntry is one entry of an IP set.
type FirewallIPSetEntry struct {
	CIDR    string `json:"cidr" pm:"required,format=fw-ipset-cidr" doc:"An address, a network (host bits are cleared, as Proxmox does) or a cluster alias (name or dc/name)."`
	Comment string `json:"comment,omitempty" pm:"format=fw-comment" doc:"Comment of the entry."`
	Nomatch bool   `json:"nomatch,omitempty" doc:"Exclude this entry from the set."`
}

// Summary counts the set's entries.
func (s *FirewallIPSet) Summary() string { return countWord(len(s.Spec.Entries), "entry", "entries") }

// Kind returns KindFirewallIPSet.
func (*FirewallIPSet) Kind() Kind { return KindFirewallIPSet }

// MarshalJSON gives back the manifest shape.
func (s *FirewallIPSet) MarshalJSON() ([]byte, error) {
	return marshalManifest(s.Kind(), &s.Object, &s.Spec)
}

// fwNamePattern is pve-firewall's $ipset_name_pattern and alias name
// pattern (Firewall.pm): a letter, then letters, digits, '-' and '_'.
const fwNamePattern = `^[A-Za-z][A-Za-z0-9_-]+$`

var reFWName = regexp.MustCompile(fwNamePattern)

// fwIPv4 is pve-common's $IPV4RE: four decimal octets.
var reFWIPv4 = regexp.MustCompile(`^(?:(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)\.){3}(?:25[0-5]|2[0-4][0-9]|[01]?[0-9][0-9]?)$`)

// CheckFirewallCIDR is pve_verify_ip_or_cidr: an IPv4 or IPv6 address,
// optionally with a prefix length valid for its family.
func CheckFirewallCIDR(s string) error {
	addr, plen, hasLen := strings.Cut(s, "/")
	a, err := netip.ParseAddr(addr)
	if err != nil || a.Zone() != "" || (a.Is4() && !reFWIPv4.MatchString(addr)) {
		return fmt.Errorf("%q does not look like a valid IP address or CIDR network", s)
	}
	if hasLen {
		p, err := netip.ParsePrefix(s)
		if err != nil || plen != fmt.Sprint(p.Bits()) {
			return fmt.Errorf("%q: invalid prefix length /%s for an IPv%d address", s, plen, map[bool]int{true: 4, false: 6}[a.Is4()])
		}
	}
	return nil
}

// FirewallEntryCIDR is an IP set entry's CIDR as Proxmox keeps it
// (IPSet.pm create_ip, Firewall.pm clean_cidr and parse_ip_or_cidr): the
// host bits cleared, a host prefix (/32, /128) dropped; an alias is kept.
func FirewallEntryCIDR(s string) string {
	if CheckFirewallCIDR(s) != nil {
		return s
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		s = p.Masked().String()
	}
	return FirewallAliasCIDR(s)
}

// FirewallAliasCIDR is an alias's CIDR as Proxmox reads it back
// (parse_alias, parse_ip_or_cidr): a host prefix dropped, the host bits
// kept; an IPv6 address in its canonical form.
func FirewallAliasCIDR(s string) string {
	if CheckFirewallCIDR(s) != nil {
		return s
	}
	if p, err := netip.ParsePrefix(s); err == nil {
		if p.Bits() == p.Addr().BitLen() {
			return p.Addr().String()
		}
		return p.String()
	}
	return netip.MustParseAddr(s).String()
}

func (s *FirewallIPSet) check(c *checker) {
	seen := map[string]int{}
	for i, e := range s.Spec.Entries {
		p := indexPath("spec.entries", i) + ".cidr"
		if e.CIDR == "" {
			continue
		}
		norm := FirewallEntryCIDR(e.CIDR)
		if CheckFirewallCIDR(e.CIDR) == nil && strings.HasSuffix(norm, "/0") {
			c.errorf(p, "a zero prefix is not allowed in IP set entries")
		}
		if first, dup := seen[strings.ToLower(norm)]; dup {
			c.errorf(p, "%s is already entry %d of the set (as %s)", e.CIDR, first, norm)
			continue
		}
		seen[strings.ToLower(norm)] = i
		if CheckFirewallCIDR(e.CIDR) != nil {
			name := strings.TrimPrefix(e.CIDR, "dc/")
			addRef(s, Ref{Kind: KindFirewallAlias, Name: strings.ToLower(name), Path: p})
		}
	}
}

// ValidFirewallName reports whether name can be a FirewallAlias or
// FirewallIPSet manifest's metadata.name.
func ValidFirewallName(name string) bool {
	return reFWName.MatchString(name) && len(name) <= 64 && checkFormat("dns-label", name) == nil
}
