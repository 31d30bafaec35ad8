package manifest

import (
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"strings"
)

// format is a named string format: a check used by the loader and the
// closest JSON Schema pattern for editors (empty when a pattern cannot say it).
type format struct {
	pattern string
	maxLen  int
	check   func(string) error
	// For a regular-expression format: the expression, and, for the formats
	// every manifest uses, a hand-written matcher that accepts exactly what
	// it accepts (TestFastMatchersAgreeWithPatterns), a regular expression
	// match being most of the cost of checking a value.
	re    *regexp.Regexp
	match func(string) bool
	fast  bool // match is hand-written
}

func regexFormat(pattern, what string, maxLen int) format {
	return matcherFormat(pattern, what, maxLen, nil)
}

// matcherFormat is a regexFormat checked by match instead of the pattern.
func matcherFormat(pattern, what string, maxLen int, match func(string) bool) format {
	re := regexp.MustCompile(pattern)
	fast := match != nil
	if !fast {
		match = re.MatchString
	}
	return format{pattern: pattern, maxLen: maxLen, re: re, match: match, fast: fast, check: func(s string) error {
		if maxLen > 0 && len(s) > maxLen {
			return fmt.Errorf("%q is not a valid %s: longer than %d characters", s, what, maxLen)
		}
		if !match(s) {
			return fmt.Errorf("%q is not a valid %s", s, what)
		}
		return nil
	}}
}

// byteClass is a set of bytes, for the hand-written matchers.
type byteClass [4]uint64

// class builds a byteClass from ranges such as "a-z" and single bytes.
func class(parts ...string) *byteClass {
	var c byteClass
	for _, p := range parts {
		lo, hi := p[0], p[0]
		if len(p) == 3 && p[1] == '-' {
			hi = p[2]
		} else if len(p) != 1 {
			panic("manifest: bad byte class part " + p)
		}
		for b := int(lo); b <= int(hi); b++ {
			c[b/64] |= 1 << (b % 64)
		}
	}
	return &c
}

func (c *byteClass) has(b byte) bool { return c[b/64]&(1<<(b%64)) != 0 }

// run matches a string of at least minLen bytes whose first byte is in
// first, last byte in last and bytes between in mid: the shape of
// ^[first]([mid]*[last])?$ (minLen 1) and ^[first][mid]*[last]$ (minLen 2).
// A single byte must be in first only.
func run(first, mid, last *byteClass, minLen int) func(string) bool {
	return func(s string) bool {
		if len(s) < minLen || len(s) == 0 || !first.has(s[0]) {
			return false
		}
		if len(s) == 1 {
			return true
		}
		for i := 1; i < len(s)-1; i++ {
			if !mid.has(s[i]) {
				return false
			}
		}
		return last.has(s[len(s)-1])
	}
}

var (
	lowerDigit     = class("a-z", "0-9")
	lowerDigitDash = class("a-z", "0-9", "-")
	alnum          = class("a-z", "A-Z", "0-9")
	alnumDash      = class("a-z", "A-Z", "0-9", "-")
	storageMid     = class("a-z", "0-9", "-", "_", ".")
	tagFirst       = class("a-z", "A-Z", "0-9", "_")
	tagRest        = class("a-z", "A-Z", "0-9", "_", "-", "+", ".")
	bridgeBytes    = class("a-z", "A-Z", "0-9", "-", "_", ".")
	lowerLetter    = class("a-z")
	hexDigit       = class("0-9", "a-f", "A-F")
	base64Bytes    = class("a-z", "A-Z", "0-9", "+", "/")

	matchDNSLabel = run(lowerDigit, lowerDigitDash, lowerDigit, 1)
	matchNode     = run(alnum, alnumDash, alnum, 1)
	matchStorage  = run(lowerLetter, storageMid, lowerDigit, 2)
)

// matchDNSName matches dnsNamePattern: node-style labels joined by dots.
func matchDNSName(s string) bool {
	for {
		label, rest, more := strings.Cut(s, ".")
		if !matchNode(label) {
			return false
		}
		if !more {
			return true
		}
		s = rest
	}
}

// matchVolume matches volumePattern: a storage ID, a colon, then at least
// one byte that is not white space (RE2's \s: tab, LF, FF, CR, space).
func matchVolume(s string) bool {
	storage, path, ok := strings.Cut(s, ":")
	if !ok || !matchStorage(storage) || path == "" {
		return false
	}
	return !strings.ContainsAny(path, "\t\n\f\r ")
}

// matchSSHKey matches sshKeyPattern: a key type, a space, base64 with at
// most three '=' of padding, and optionally a space and a comment without a
// line break.
func matchSSHKey(s string) bool {
	typ, rest, ok := strings.Cut(s, " ")
	if !ok {
		return false
	}
	switch typ {
	case "ssh-ed25519", "ssh-rsa", "ssh-dss", "ecdsa-sha2-nistp256", "ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521",
		"sk-ssh-ed25519@openssh.com", "sk-ecdsa-sha2-nistp256@openssh.com":
	default:
		return false
	}
	i := 0
	for i < len(rest) && base64Bytes.has(rest[i]) {
		i++
	}
	if i == 0 {
		return false
	}
	pad := 0
	for i < len(rest) && rest[i] == '=' && pad < 3 {
		i, pad = i+1, pad+1
	}
	if i == len(rest) {
		return true
	}
	return rest[i] == ' ' && !strings.Contains(rest[i:], "\n")
}

// Patterns follow Proxmox VE's own formats (PVE::JSONSchema and friends).
const (
	dnsLabelPattern  = `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	nodePattern      = `^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`
	storagePattern   = `^[a-z][a-z0-9\-_.]*[a-z0-9]$`
	tagPattern       = `^[a-zA-Z0-9_][a-zA-Z0-9_\-+.]*$`
	bridgePattern    = `^[-_.a-zA-Z0-9]+$`
	ifacePattern     = `^[a-zA-Z][a-zA-Z0-9_]{1,20}([:.][0-9]+)?$`
	sdnIDPattern     = `^[a-z][a-z0-9]*[a-z0-9]$`
	macPattern       = `^[0-9a-fA-F][02468aceACE](:[0-9a-fA-F]{2}){5}$`
	volumePattern    = `^[a-z][a-z0-9\-_.]*[a-z0-9]:[^\s]+$`
	dnsNamePattern   = `^([a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?\.)*[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?$`
	envNamePattern   = `^[A-Za-z_][A-Za-z0-9_]*$`
	sshKeyPattern    = `^(ssh-(ed25519|rsa|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com) [A-Za-z0-9+/]+={0,3}( .*)?$`
	httpURLPattern   = `^https?://[^\s]+$`
	absPathPattern   = `^/[^\x00]*$`
	filenamePattern  = `^[^/\x00]+$`
	cpuTypePattern   = `^([A-Za-z0-9][A-Za-z0-9_.-]*|custom-[A-Za-z0-9_.-]+)$`
	hexPattern       = `^[0-9a-fA-F]+$`
	mountTypePattern = `^[a-zA-Z0-9_]+$`
	machinePattern   = `^(pc|pc(-i440fx)?-[0-9]+(\.[0-9]+)+(\+pve[0-9]+)?(\.pxe)?|q35|pc-q35-[0-9]+(\.[0-9]+)+(\+pve[0-9]+)?(\.pxe)?|virt(-[0-9]+(\.[0-9]+)+)?(\+pve[0-9]+)?)$`
	vlanListPattern  = `^[0-9]{1,4}(-[0-9]{1,4})?([ ,;][0-9]{1,4}(-[0-9]{1,4})?)*$`
	diskSlotPattern  = `^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5])$`
	netSlotPattern   = `^net([0-9]|[12][0-9]|3[01])$`
	mpSlotPattern    = `^mp([0-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-5])$`
	packagePattern   = `^[a-zA-Z0-9][a-zA-Z0-9+._:@/=~-]*$`
	fileModePattern  = `^0?[0-7]{3,4}$`
	userPattern      = `^[a-z_][a-z0-9_.-]*[$]?$`
	relPathPattern   = `^[^/\x00][^\x00]*$`
	hostPattern      = `^[0-9A-Za-z.:-]+$`
	ownerPattern     = `^[a-z_][a-z0-9_-]*[$]?(:[a-z_][a-z0-9_-]*[$]?)?$|^[0-9]+(:[0-9]+)?$`
)

var formats = map[string]format{
	"dns-label":  matcherFormat(dnsLabelPattern, "name (lower-case letters, digits and '-', starting and ending with a letter or digit)", 63, matchDNSLabel),
	"node":       matcherFormat(nodePattern, "node name", 63, matchNode),
	"storage-id": matcherFormat(storagePattern, "storage ID (lower-case, e.g. local-lvm)", 0, matchStorage),
	"tag":        matcherFormat(tagPattern, "Proxmox tag (letters, digits, _ - + .)", 0, run(tagFirst, tagRest, tagRest, 1)),
	"bridge":     matcherFormat(bridgePattern, "bridge name", 15, run(bridgeBytes, bridgeBytes, bridgeBytes, 1)),
	"iface":      regexFormat(ifacePattern, "network interface name (e.g. vmbr1, bond0, vmbr0.20)", 20),
	"sdn-id":     matcherFormat(sdnIDPattern, "SDN ID (lower-case letters and digits, starting with a letter, at most 8 characters)", 8, run(lowerLetter, lowerDigit, lowerDigit, 2)),
	"mac":        regexFormat(macPattern, "unicast MAC address (XX:XX:XX:XX:XX:XX)", 0),
	"volume-id":  matcherFormat(volumePattern, "volume ID (storage:path, e.g. local:iso/debian.iso)", 0, matchVolume),
	"dns-name":   matcherFormat(dnsNamePattern, "DNS name", 253, matchDNSName),
	"env-name":   regexFormat(envNamePattern, "environment variable name", 0),
	"ssh-key":    matcherFormat(sshKeyPattern, "OpenSSH public key (type, base64 key, optional comment)", 16384, matchSSHKey),
	"abs-path":   regexFormat(absPathPattern, "absolute path", 4096),
	"filename":   regexFormat(filenamePattern, "file name (no '/')", 255),
	"cpu-type":   regexFormat(cpuTypePattern, "CPU type", 64),
	"hex":        matcherFormat(hexPattern, "hexadecimal string", 256, run(hexDigit, hexDigit, hexDigit, 1)),
	"mount-type": regexFormat(mountTypePattern, "file system type", 32),
	// pve-access-control AccessControl.pm verify_poolname: at most three
	// levels ("a/b/c") of letters, digits, '.', '-' and '_'.
	"pve-poolid": regexFormat(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`, "pool name (letters, digits, '.', '-', '_'; at most three levels joined by '/')", 0),
	"machine":    regexFormat(machinePattern, "QEMU machine type (e.g. q35, pc-i440fx-9.0)", 40),
	"vlan-list":  regexFormat(vlanListPattern, "VLAN ID list (e.g. 2-4094 or \"10 20 30-40\")", 0),
	"disk-slot":  regexFormat(diskSlotPattern, "disk slot (scsi0-30, virtio0-15, sata0-5)", 0),
	"net-slot":   regexFormat(netSlotPattern, "NIC slot (net0-net31)", 0),
	"mp-slot":    regexFormat(mpSlotPattern, "mount point slot (mp0-mp255)", 0),
	"package":    regexFormat(packagePattern, "package name", 200),
	"file-mode":  regexFormat(fileModePattern, "octal file mode (e.g. \"0644\")", 0),
	"owner":      regexFormat(ownerPattern, "owner (user or user:group)", 65),
	"user":       regexFormat(userPattern, "user name", 32),
	"rel-path":   {pattern: relPathPattern, check: checkRelPath},
	"host": {pattern: hostPattern, check: func(s string) error {
		if a, err := netip.ParseAddr(s); err == nil && a.Zone() == "" {
			return nil
		}
		if len(s) <= 253 && matchDNSName(s) {
			return nil
		}
		return fmt.Errorf("%q is neither an IP address nor a DNS name", s)
	}},
	"http-url": {pattern: httpURLPattern, check: func(s string) error {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || strings.ContainsAny(s, " \t\n") {
			return fmt.Errorf("%q is not an http or https URL", s)
		}
		return nil
	}},
	"duration": {pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, check: checkDuration},
	"ipv4": {pattern: `^[0-9.]+$`, check: func(s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is4() {
			return fmt.Errorf("%q is not an IPv4 address", s)
		}
		return nil
	}},
	"ipv6": {pattern: `^[0-9a-fA-F:.]+$`, check: func(s string) error {
		a, err := netip.ParseAddr(s)
		if err != nil || !a.Is6() || a.Zone() != "" {
			return fmt.Errorf("%q is not an IPv6 address", s)
		}
		return nil
	}},
	"ip": {pattern: `^[0-9a-fA-F:.]+$`, check: func(s string) error {
		if a, err := netip.ParseAddr(s); err != nil || a.Zone() != "" {
			return fmt.Errorf("%q is not an IP address", s)
		}
		return nil
	}},
	"cidr4": {pattern: `^[0-9.]+/[0-9]{1,2}$`, check: func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is4() {
			return fmt.Errorf("%q is not an IPv4 address with prefix length (e.g. 10.0.0.5/24)", s)
		}
		return nil
	}},
	"cidr6": {pattern: `^[0-9a-fA-F:.]+/[0-9]{1,3}$`, check: func(s string) error {
		p, err := netip.ParsePrefix(s)
		if err != nil || !p.Addr().Is6() {
			return fmt.Errorf("%q is not an IPv6 address with prefix length (e.g. fd00::5/64)", s)
		}
		return nil
	}},
	"cidr": {pattern: `^[0-9a-fA-F:.]+/[0-9]{1,3}$`, check: func(s string) error {
		if _, err := netip.ParsePrefix(s); err != nil {
			return fmt.Errorf("%q is not an IP address with prefix length (e.g. 10.0.0.0/24)", s)
		}
		return nil
	}},
	"ip4-config": {pattern: `^(dhcp|manual|[0-9.]+/[0-9]{1,2})$`, check: func(s string) error {
		if s == "dhcp" || s == "manual" {
			return nil
		}
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is4() {
			return nil
		}
		return fmt.Errorf("%q is not dhcp, manual or an IPv4 address with prefix length (e.g. 10.0.0.5/24)", s)
	}},
	"ip6-config": {pattern: `^(dhcp|auto|manual|[0-9a-fA-F:.]+/[0-9]{1,3})$`, check: func(s string) error {
		if s == "dhcp" || s == "auto" || s == "manual" {
			return nil
		}
		if p, err := netip.ParsePrefix(s); err == nil && p.Addr().Is6() {
			return nil
		}
		return fmt.Errorf("%q is not dhcp, auto, manual or an IPv6 address with prefix length", s)
	}},
	"fw-ip-or-cidr": {pattern: `^[0-9a-fA-F:.]+(/[0-9]{1,3})?$`, check: CheckFirewallCIDR},
	"fw-ipset-cidr": {pattern: `^([0-9a-fA-F:.]+(/[0-9]{1,3})?|(dc/)?[A-Za-z][A-Za-z0-9\-_]+)$`, check: func(s string) error {
		if reFWName.MatchString(strings.TrimPrefix(s, "dc/")) && !strings.Contains(s, ":") && !strings.Contains(s, ".") {
			return nil
		}
		return CheckFirewallCIDR(s)
	}},
	"fw-comment": {pattern: `^[^\n\r]*$`, check: func(s string) error {
		if strings.ContainsAny(s, "\n\r") {
			return errors.New("a firewall comment is one line (Proxmox writes it after '#' on the object's line)")
		}
		return nil
	}},
	"not-empty": {pattern: `\S`, check: func(s string) error {
		if strings.TrimSpace(s) == "" {
			return errors.New("must not be empty")
		}
		return nil
	}},
}

// checkFormat runs a named format's check.
func checkFormat(name, value string) error {
	return formats[name].check(value)
}

// checkRelPath accepts a relative, slash-separated path: no leading '/',
// no empty, "." or backslash tricks; ".." is allowed (the loader checks the
// result stays inside the repository).
func checkRelPath(s string) error {
	switch {
	case s == "" || strings.HasPrefix(s, "/"):
		return fmt.Errorf("%q is not a relative path", s)
	case strings.ContainsRune(s, 0) || strings.Contains(s, "\\"):
		return fmt.Errorf("%q is not a slash-separated relative path", s)
	case len(s) > 4096:
		return errors.New("longer than 4096 characters")
	}
	return nil
}
