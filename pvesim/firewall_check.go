package pvesim

import (
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// The checks of pve-firewall's src/PVE/Firewall.pm: the schema formats it
// registers (IPorCIDR, IPorCIDRorAlias, pve-fw-addr-spec, pve-fw-dport-spec,
// pve-fw-sport-spec, pve-fw-protocol-spec, pve-fw-icmp-type-spec,
// pve-fw-conntrack-helper), the name patterns, and the parts of Net::IP
// (libnet-ip-perl) whose error texts reach the API.

// Name patterns and lengths of Firewall.pm.
const fwNamePattern = `[A-Za-z][A-Za-z0-9\-\_]+`

var (
	reFWName       = regexp.MustCompile(`^` + fwNamePattern + `$`)
	reFWAliasRef   = regexp.MustCompile(`^(dc/|guest/)?(` + fwNamePattern + `)$`)
	reFWIPSetRef   = regexp.MustCompile(`^\+(guest/|dc/|sdn/)?(` + fwNamePattern + `)$`)
	reFWPortRange  = regexp.MustCompile(`^([0-9]+):([0-9]+)$`)
	reFWPortNumber = regexp.MustCompile(`^[0-9]+$`)
	reIPv4Strict   = regexp.MustCompile(`^(?:(?:25[0-5]|(?:2[0-4]|1[0-9]|[1-9])?[0-9])\.){3}(?:25[0-5]|(?:2[0-4]|1[0-9]|[1-9])?[0-9])$`)
)

const (
	fwMaxAliasName = 64
	fwMaxIPSetName = 64
	fwMaxGroupName = 18
)

// fwPortProtocols is $PROTOCOLS_WITH_PORTS.
var fwPortProtocols = fieldSet("udp 17 udplite 136 tcp 6 dccp 33 sctp 132")

// fwConntrackHelpers are the keys of $pve_fw_helpers.
var fwConntrackHelpers = fieldSet("amanda ftp irc netbios-ns pptp sane sip snmp tftp")

func init() {
	route.RegisterFormat("IPorCIDR", func(s string) error { _, err := fwVerifyIPOrCIDR(s); return err })
	route.RegisterFormat("IPorCIDRorAlias", func(s string) error {
		if reFWAliasRef.MatchString(s) {
			return nil
		}
		_, err := fwVerifyIPOrCIDR(s)
		return err
	})
	route.RegisterFormat("pve-fw-addr-spec", func(s string) error { _, err := fwParseAddressList(s); return err })
	route.RegisterFormat("pve-fw-dport-spec", func(s string) error { return fwParsePorts(s, true) })
	route.RegisterFormat("pve-fw-sport-spec", func(s string) error { return fwParsePorts(s, false) })
	route.RegisterFormat("pve-fw-protocol-spec", fwVerifyProtocol)
	route.RegisterFormat("pve-fw-icmp-type-spec", func(s string) error {
		if fwICMPTypes[s] || fwICMPv6Types[s] || s == "" {
			return nil
		}
		return fmt.Errorf("invalid icmp-type value '%s'\n", s)
	})
	route.RegisterFormat("pve-fw-conntrack-helper", func(s string) error {
		items := nonEmpty(strings.Split(s, ","))
		if s != strings.Join(items, ",") {
			return errors.New("extraneous commas in list\n")
		}
		for _, h := range items {
			if !fwConntrackHelpers[h] {
				// pve_fw_verify_conntrack_helper's die has no newline.
				return fmt.Errorf("unknown helper %s", h)
			}
		}
		return nil
	})
}

// nonEmpty is what Perl's split(/,/, $str) keeps: trailing empty fields go,
// so an empty string is an empty list.
func nonEmpty(items []string) []string {
	for len(items) > 0 && items[len(items)-1] == "" {
		items = items[:len(items)-1]
	}
	return items
}

// fwIPVersionRE is the $IPV4RE / $IPV6RE match of pve-common's Tools.pm.
func fwIPVersionRE(s string) int {
	if reIPv4Strict.MatchString(s) {
		return 4
	}
	if a, err := netip.ParseAddr(s); err == nil && a.Is6() && a.Zone() == "" {
		return 6
	}
	return 0
}

// fwVerifyIPOrCIDR is pve_verify_ip_or_cidr: the regex, then Net::IP on the
// cleaned CIDR (clean_cidr clears the host bits).
func fwVerifyIPOrCIDR(s string) (int, error) {
	addr, plen, hasLen := strings.Cut(s, "/")
	v := fwIPVersionRE(addr)
	if v == 0 || (hasLen && !reFWPortNumber.MatchString(plen)) {
		return 0, errors.New("value does not look like a valid IP address or CIDR network\n")
	}
	if _, err := netIPNew(fwCleanCIDR(s)); err != nil {
		return 0, fmt.Errorf("%v\n", err)
	}
	return v, nil
}

// fwParseIPOrCIDR is parse_ip_or_cidr: a host prefix (/32, /128) is dropped.
func fwParseIPOrCIDR(s string) (string, int, error) {
	addr, _, _ := strings.Cut(s, "/")
	switch fwIPVersionRE(addr) {
	case 6:
		return strings.TrimSuffix(s, "/128"), 6, nil
	case 4:
		return strings.TrimSuffix(s, "/32"), 4, nil
	}
	return "", 0, errors.New("value does not look like a valid IP address or CIDR network\n")
}

// fwCleanCIDR is clean_cidr: the address with its host bits cleared.
func fwCleanCIDR(s string) string {
	addr, plen, ok := strings.Cut(s, "/")
	if !ok || plen == "" || plen == "0" {
		return s
	}
	n, err := strconv.Atoi(plen)
	a, perr := netip.ParseAddr(addr)
	if err != nil || perr != nil {
		return s
	}
	p, err := a.Prefix(n)
	if err != nil {
		return s
	}
	return p.Addr().String() + "/" + plen
}

// netIPNew is Net::IP->new for the forms pve-firewall passes it (an
// address, a prefix, a range), returning the IP version or Net::IP::Error.
func netIPNew(s string) (int, error) {
	if begin, end, ok := strings.Cut(s, "-"); ok {
		begin, end = strings.TrimSpace(begin), strings.TrimSpace(end)
		v1, b1, err := netIPAddr(begin)
		if err != nil {
			return 0, err
		}
		v2, b2, err := netIPAddr(end)
		if err != nil {
			return 0, err
		}
		if v1 != v2 {
			if v1 == 4 {
				return 0, fmt.Errorf("Not a valid IPv4 address %s", end)
			}
			return 0, fmt.Errorf("Begin and End addresses have different IP versions - %s - %s", begin, end)
		}
		if b1.Cmp(b2) > 0 {
			return 0, fmt.Errorf("Begin address is greater than End address %s - %s", begin, end)
		}
		return v1, nil
	}
	addr, plen, hasLen := strings.Cut(s, "/")
	v, bits, err := netIPAddr(addr)
	if err != nil || !hasLen {
		return v, err
	}
	width := map[int]int{4: 32, 6: 128}[v]
	n, perr := strconv.Atoi(plen)
	if perr != nil || n < 0 {
		return 0, fmt.Errorf("Invalid prefix length /%s", plen)
	}
	if n > width {
		return 0, fmt.Errorf("Prefix length %d is longer than IP address (%d)", n, width)
	}
	bin := fmt.Sprintf("%0*s", width, bits.Text(2))
	if strings.Contains(bin[n:], "1") {
		return 0, fmt.Errorf("Invalid prefix %s/%s", bin, plen)
	}
	return v, nil
}

// netIPAddr checks one address as ip_is_ipv4 / ip_is_ipv6 do (an IPv4
// address may have fewer than four quads: ip_expand_address pads them).
func netIPAddr(s string) (int, *big.Int, error) {
	if !strings.Contains(s, ":") {
		switch {
		case !regexp.MustCompile(`^[\d.]+$`).MatchString(s):
			return 0, nil, fmt.Errorf("Invalid chars in IP %s", s)
		case strings.HasPrefix(s, "."):
			return 0, nil, fmt.Errorf("Invalid IP %s - starts with a dot", s)
		case strings.HasSuffix(s, "."):
			return 0, nil, fmt.Errorf("Invalid IP %s - ends with a dot", s)
		case strings.Count(s, ".") > 3:
			return 0, nil, fmt.Errorf("Invalid IP address %s", s)
		case strings.Contains(s, ".."):
			return 0, nil, fmt.Errorf("Empty quad in IP address %s", s)
		}
		quads := strings.Split(s, ".")
		val := new(big.Int)
		for i := 0; i < 4; i++ {
			q := 0
			if i < len(quads) {
				q, _ = strconv.Atoi(quads[i])
				if len(quads[i]) > 3 || q > 255 {
					return 0, nil, fmt.Errorf("Invalid quad in IP address %s - %s", s, quads[i])
				}
			}
			val.Lsh(val, 8).Or(val, big.NewInt(int64(q)))
		}
		return 4, val, nil
	}
	if err := netIPv6Check(s); err != nil {
		return 0, nil, err
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() || a.Zone() != "" {
		return 0, nil, fmt.Errorf("Invalid IP address %s", s)
	}
	b := a.As16()
	return 6, new(big.Int).SetBytes(b[:]), nil
}

// netIPv6Check is ip_is_ipv6's checks, in its order.
func netIPv6Check(s string) error {
	n := strings.Count(s, ":")
	if n < 1 || n > 7 {
		return fmt.Errorf("Invalid IP address %s", s)
	}
	parts := strings.Split(s, ":")
	for k, p := range parts {
		switch {
		case p == "" || regexp.MustCompile(`^[a-fA-F\d]{1,4}$`).MatchString(p):
		case k == len(parts)-1 && !strings.Contains(p, ":") && reIPv4Strict.MatchString(p):
			n++ // an IPv4 tail counts as two groups
		default:
			return fmt.Errorf("Invalid IP address %s", s)
		}
	}
	switch {
	case regexp.MustCompile(`^:[^:]`).MatchString(s):
		return fmt.Errorf("Invalid address %s (starts with :)", s)
	case regexp.MustCompile(`[^:]:$`).MatchString(s):
		return fmt.Errorf("Invalid address %s (ends with :)", s)
	case strings.Count(s, "::") > 1 || strings.Contains(s, ":::"):
		return fmt.Errorf("Invalid address %s (More than one :: pattern)", s)
	case n != 7 && !strings.Contains(s, "::"):
		return fmt.Errorf("Invalid number of octets %s", s)
	}
	return nil
}

// fwParseAddressList is parse_address_list: an IP set or alias reference,
// or a list of addresses, prefixes or one range of a single IP version.
func fwParseAddressList(s string) (int, error) {
	if strings.HasPrefix(s, "+") && len(s) > 1 && !strings.ContainsAny(s, " \t\n") {
		if len(s) > fwMaxIPSetName+1 {
			return 0, errors.New("ipset name too long\n")
		}
		return 0, nil
	}
	if reFWAliasRef.MatchString(s) {
		if len(s) > fwMaxAliasName {
			return 0, errors.New("alias name too long\n")
		}
		return 0, nil
	}
	elems := nonEmpty(strings.Split(s, ","))
	if s != strings.Join(elems, ",") {
		return 0, errors.New("extraneous commas in list\n")
	}
	version, isRange := 0, false
	for _, e := range elems {
		v, err := netIPNew(e)
		if err != nil {
			return 0, fmt.Errorf("invalid IP address: %v\n", err)
		}
		if strings.Contains(e, "-") {
			isRange = true
		}
		if version != 0 && v != version {
			return 0, fmt.Errorf("detected mixed ipv4/ipv6 addresses in address list '%s'\n", s)
		}
		version = v
	}
	if isRange && len(elems) > 1 {
		return 0, errors.New("you can't use a range in a list\n")
	}
	return version, nil
}

// fwParsePorts is parse_port_name_number_or_range; dport allows ICMP type
// names (they used to be stored in dport).
func fwParsePorts(s string, dport bool) error {
	items := nonEmpty(strings.Split(s, ","))
	if s != strings.Join(items, ",") {
		return errors.New("extraneous commas in list\n")
	}
	count, icmp := 0, false
	for _, item := range items {
		if m := reFWPortRange.FindStringSubmatch(item); m != nil {
			count += 2
			p1, p2 := fwPortNum(m[1]), fwPortNum(m[2])
			if p1 > 65535 {
				return fmt.Errorf("invalid port '%s'\n", m[1])
			}
			if p2 > 65535 {
				return fmt.Errorf("invalid port '%s'\n", m[2])
			}
			if p1 > p2 {
				return fmt.Errorf("backwards range '%s:%s' not allowed, did you mean '%s:%s'?\n", m[1], m[2], m[2], m[1])
			}
		} else if reFWPortNumber.MatchString(item) {
			count++
			if fwPortNum(item) > 65535 {
				return fmt.Errorf("invalid port '%s'\n", item)
			}
		} else if dport && (fwICMPTypes[item] || fwICMPv6Types[item]) {
			icmp = true
		} else if !fwServiceNames[item] {
			return fmt.Errorf("invalid port '%s'\n", item)
		}
	}
	if icmp && count > 0 {
		return errors.New("ICMP ports not allowed in port range\n")
	}
	if count > 15 {
		return errors.New("too many entries in port list (> 15 numbers)\n")
	}
	return nil
}

// fwPortNum compares a port as Perl compares a numeric string (digits
// only, so no overflow worries beyond "large").
func fwPortNum(s string) int {
	s = strings.TrimLeft(s, "0")
	if len(s) > 6 {
		return 1 << 30
	}
	n, _ := strconv.Atoi(s)
	return n
}

// fwVerifyProtocol is pve_fw_verify_protocol_spec.
func fwVerifyProtocol(s string) error {
	if s != "" && !fwProtocols[s] {
		return fmt.Errorf("unknown protocol '%s'\n", s)
	}
	return nil
}

func fwIsICMP(proto string) bool {
	return proto == "icmp" || proto == "icmpv6" || proto == "ipv6-icmp"
}
