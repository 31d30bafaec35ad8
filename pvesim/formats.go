package pvesim

import (
	"errors"
	"fmt"
	"net/netip"
	"regexp"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// splitList is PVE::Tools::split_list.
func splitList(s string) []string {
	if strings.Contains(s, "\x00") {
		return strings.Split(s, "\x00")
	}
	s = strings.NewReplacer(",", " ", ";", " ").Replace(s)
	return strings.Fields(s)
}

// checkFormat is PVE::JSONSchema::check_format.
func checkFormat(name, value, path string) error {
	d, kind, ok := route.LookupFormat(name)
	if !ok {
		return fmt.Errorf("undefined format '%s'\n", name)
	}
	if d.Props != nil {
		_, err := parsePropString(d.Props, value, path)
		return err
	}
	switch kind {
	case "list":
		for _, item := range splitList(value) {
			if err := d.Check(item); err != nil {
				return err
			}
		}
		return nil
	case "opt":
		if value == "" || value == "0" {
			return nil
		}
	}
	return d.Check(value)
}

func matchOr(re *regexp.Regexp, msg string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return errors.New(msg + "\n")
		}
		return nil
	}
}

var (
	// JSONSchema.pm $CONFIGID_RE: qr/[a-z][a-z0-9_-]+/i (snapshot names use it).
	reConfigID   = regexp.MustCompile(`(?i)^[a-z][a-z0-9_-]+$`)
	reID         = regexp.MustCompile(`(?i)^[a-z][a-z0-9\-_.]*[a-z0-9]$`)
	reVMID       = regexp.MustCompile(`^[1-9][0-9]{2,8}$`)
	reNodeName   = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?$`)
	reMAC        = regexp.MustCompile(`(?i)^[a-f0-9][02468ace](?::[a-f0-9]{2}){5}$`)
	reDNSName    = regexp.MustCompile(`^(([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)\.)*([a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)$`)
	reTag        = regexp.MustCompile(`(?i)^[a-z0-9_][a-z0-9_\-+.]*$`)
	reURLEncoded = regexp.MustCompile(`^[-%a-zA-Z0-9_.!~*'()]*$`)
	reVolumeID   = regexp.MustCompile(`(?i)^([a-z][a-z0-9\-_.]*[a-z0-9]):(.+)$`)
	reBridgeID   = regexp.MustCompile(`^[-_.\w\d]+$`)
	rePoolID     = regexp.MustCompile(`^[A-Za-z0-9.\-_]+(?:/[A-Za-z0-9.\-_]+){0,2}$`)
	reSize       = regexp.MustCompile(`^(\d+(\.\d+)?)([KMGT](?:iB)?)?$`)
	reStartup    = regexp.MustCompile(`^(order=)?(\d+)$|^up=(\d+)$|^down=(\d+)$`)
	reCPUSet     = regexp.MustCompile(`^\d+(-\d+)?(,\d+(-\d+)?)*$`)
	reUserID     = regexp.MustCompile(`^[^\s:/]+@[A-Za-z][A-Za-z0-9.\-_]+$`)
	reRealm      = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9.\-_]+$`)
	reBootdisk   = regexp.MustCompile(`^(ide[0-3]|sata[0-5]|scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|efidisk0|tpmstate0)$`)
)

func parseIDFormat(kind string) func(string) error {
	return func(s string) error {
		if len(s) < 2 {
			return fmt.Errorf("%s ID '%s' cannot be shorter than 2 characters\n", kind, s)
		}
		if !reID.MatchString(s) {
			return fmt.Errorf("%s ID '%s' contains illegal characters\n", kind, s)
		}
		return nil
	}
}

func isIPv4(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is4()
}

func isIPv6(s string) bool {
	a, err := netip.ParseAddr(s)
	return err == nil && a.Is6() && !a.Is4In6()
}

func cidrCheck(s string, want4, want6 bool, msg string) error {
	pf, err := netip.ParsePrefix(s)
	if err != nil || (pf.Addr().Is4() && !want4) || (pf.Addr().Is6() && !want6) {
		return errors.New(msg + "\n")
	}
	return nil
}

// ParseSize is PVE::JSONSchema::parse_size: "20G", "512M", "1.5T", bytes.
func ParseSize(s string) (int64, bool) {
	if n, ok := parsePlainSize(s); ok {
		return n, true
	}
	m := reSize.FindStringSubmatch(s)
	if m == nil {
		return 0, false
	}
	f, err := strconv.ParseFloat(m[1], 64)
	if err != nil {
		return 0, false
	}
	switch strings.TrimSuffix(m[3], "iB") {
	case "K":
		f *= 1 << 10
	case "M":
		f *= 1 << 20
	case "G":
		f *= 1 << 30
	case "T":
		f *= 1 << 40
	}
	return int64(f), true
}

// parsePlainSize is ParseSize's fast path for the common forms: up to 15
// digits and an optional unit letter, where the integer product equals
// the floating-point one.
func parsePlainSize(s string) (int64, bool) {
	digits := s
	shift := 0
	if n := len(s); n > 0 {
		switch s[n-1] {
		case 'K':
			shift = 10
		case 'M':
			shift = 20
		case 'G':
			shift = 30
		case 'T':
			shift = 40
		}
		if shift > 0 {
			digits = s[:n-1]
		}
	}
	if digits == "" || len(digits) > 15 {
		return 0, false
	}
	var n int64
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n << shift, true
}

// FormatSize is PVE::JSONSchema::format_size: the largest exact unit.
func FormatSize(size int64) string {
	kb := size / 1024
	if kb*1024 != size {
		return strconv.FormatInt(size, 10)
	}
	mb := kb / 1024
	if mb*1024 != kb {
		return strconv.FormatInt(kb, 10) + "K"
	}
	gb := mb / 1024
	if gb*1024 != mb {
		return strconv.FormatInt(mb, 10) + "M"
	}
	tb := gb / 1024
	if tb*1024 != gb {
		return strconv.FormatInt(gb, 10) + "G"
	}
	return strconv.FormatInt(tb, 10) + "T"
}

// regexFormat is a format that is a pattern: a value that does not match
// it is refused with msg, formatted with the value.
func regexFormat(re *regexp.Regexp, msg string) func(string) error {
	return func(s string) error {
		if !re.MatchString(s) {
			return fmt.Errorf(msg, s)
		}
		return nil
	}
}

func init() {
	route.RegisterFormat("string", func(string) error { return nil })
	route.RegisterFormat("urlencoded", regexFormat(reURLEncoded, "invalid urlencoded string: %s\n"))
	route.RegisterFormat("pve-configid", regexFormat(reConfigID, "invalid configuration ID '%s'\n"))
	route.RegisterFormat("pve-storage-id", parseIDFormat("storage"))
	route.RegisterFormat("pve-sdn-zone-id", parseIDFormat("zone"))
	route.RegisterFormat("pve-bridge-id", regexFormat(reBridgeID, "invalid bridge ID '%s'\n"))
	route.RegisterFormat("pve-vmid", matchOr(reVMID, "value does not look like a valid VM ID"))
	route.RegisterFormat("pve-node", matchOr(reNodeName, "value does not look like a valid node name"))
	route.RegisterFormat("mac-addr", matchOr(reMAC, "value does not look like a valid unicast MAC address"))
	route.RegisterFormat("dns-name", matchOr(reDNSName, "value does not look like a valid DNS name"))
	route.RegisterFormat("ipv4", func(s string) error {
		if !isIPv4(s) {
			return errors.New("value does not look like a valid IPv4 address\n")
		}
		return nil
	})
	route.RegisterFormat("ipv6", func(s string) error {
		if !isIPv6(s) {
			return errors.New("value does not look like a valid IPv6 address\n")
		}
		return nil
	})
	route.RegisterFormat("ip", func(s string) error {
		if _, err := netip.ParseAddr(s); err != nil {
			return errors.New("value does not look like a valid IP address\n")
		}
		return nil
	})
	route.RegisterFormat("address", func(s string) error {
		if _, err := netip.ParseAddr(s); err != nil && !reDNSName.MatchString(s) {
			return fmt.Errorf("value does not look like a valid address: %s\n", s)
		}
		return nil
	})
	route.RegisterFormat("CIDR", func(s string) error {
		return cidrCheck(s, true, true, "value does not look like a valid CIDR network")
	})
	route.RegisterFormat("CIDRv4", func(s string) error {
		return cidrCheck(s, true, false, "value does not look like a valid IPv4 CIDR network")
	})
	route.RegisterFormat("CIDRv6", func(s string) error {
		return cidrCheck(s, false, true, "value does not look like a valid IPv6 CIDR network")
	})
	route.RegisterFormat("pve-ipv4-config", func(s string) error {
		if s == "dhcp" || s == "manual" || cidrCheck(s, true, false, "") == nil {
			return nil
		}
		return errors.New("value does not look like a valid ipv4 network configuration\n")
	})
	route.RegisterFormat("pve-ipv6-config", func(s string) error {
		if s == "dhcp" || s == "auto" || s == "manual" || cidrCheck(s, false, true, "") == nil {
			return nil
		}
		return errors.New("value does not look like a valid ipv6 network configuration\n")
	})
	route.RegisterFormat("disk-size", func(s string) error {
		if _, ok := ParseSize(s); !ok {
			return fmt.Errorf("value does not look like a valid disk size: %s\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-startup-order", func(s string) error {
		ok := false
		for _, part := range strings.Split(s, ",") {
			if strings.TrimSpace(part) == "" {
				continue
			}
			if !reStartup.MatchString(part) {
				return errors.New("unable to parse startup options\n")
			}
			ok = true
		}
		if !ok {
			return errors.New("unable to parse startup options\n")
		}
		return nil
	})
	route.RegisterFormat("pve-tag", matchOr(reTag, "invalid characters in tag"))
	route.RegisterFormat("pve-poolid", func(s string) error {
		if strings.Count(s, "/") > 2 {
			return fmt.Errorf("pool name '%s' nested too deeply (max levels = 3)\n", s)
		}
		if !rePoolID.MatchString(s) {
			return fmt.Errorf("pool name '%s' contains invalid characters\n", s)
		}
		return nil
	})
	volumeID := func(s string) error {
		if !reVolumeID.MatchString(s) {
			return fmt.Errorf("unable to parse volume ID '%s'\n", s)
		}
		return nil
	}
	route.RegisterFormat("pve-volume-id", volumeID)
	route.RegisterFormat("pve-volume-id-or-absolute-path", func(s string) error {
		if strings.HasPrefix(s, "/") {
			return nil
		}
		return volumeID(s)
	})
	route.RegisterFormat("pve-volume-id-or-qm-path", func(s string) error {
		if s == "none" || s == "cdrom" || strings.HasPrefix(s, "/") {
			return nil
		}
		return volumeID(s)
	})
	route.RegisterFormat("pve-cpuset", matchOr(reCPUSet, "unable to parse cpuset option"))
	route.RegisterFormat("pve-hotplug-features", func(s string) error {
		if s == "0" || s == "1" {
			return nil
		}
		for _, f := range splitList(s) {
			switch f {
			case "network", "disk", "cpu", "memory", "usb", "cloudinit":
			default:
				return fmt.Errorf("invalid hotplug feature '%s'\n", f)
			}
		}
		return nil
	})
	route.RegisterFormat("pve-qm-bootdisk", regexFormat(reBootdisk, "invalid drive name '%s'\n"))
	route.RegisterFormat("pve-qm-bootdev", func(s string) error {
		if !reBootdisk.MatchString(s) && !regexp.MustCompile(`^(net\d+|hostpci\d+|usb\d+)$`).MatchString(s) {
			return fmt.Errorf("invalid boot device '%s'\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-userid", func(s string) error {
		if len(s) > 64 {
			return errors.New("user ID is too long (> 64 chars)\n")
		}
		if !reUserID.MatchString(s) {
			return fmt.Errorf("value '%s' does not look like a valid user name\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-realm", matchOr(reRealm, "value does not look like a valid realm"))
	route.RegisterFormat("pve-priv", func(s string) error {
		if !regexp.MustCompile(`^[A-Za-z][A-Za-z.]+$`).MatchString(s) {
			return fmt.Errorf("invalid privilege '%s'\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-storage-content", func(s string) error {
		switch s {
		case "images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import", "none":
			return nil
		}
		return fmt.Errorf("invalid content type '%s'\n", s)
	})
	route.RegisterFormat("pve-storage-format", func(s string) error {
		switch s {
		case "raw", "qcow2", "vmdk", "subvol":
			return nil
		}
		return fmt.Errorf("invalid format '%s'\n", s)
	})
	route.RegisterFormat("pve-task-status-type", func(s string) error {
		switch strings.ToLower(s) {
		case "ok", "error", "warning", "unknown":
			return nil
		}
		return fmt.Errorf("invalid status '%s'\n", s)
	})
	route.RegisterFormat("pve-iface", func(s string) error {
		if len(s) < 2 || len(s) > 20 || !regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_.\-]*[a-zA-Z0-9]$`).MatchString(s) {
			return fmt.Errorf("invalid network interface name '%s'\n", s)
		}
		return nil
	})
	// Formats whose inner rules the simulator does not model: any string is
	// accepted, as a real node would accept every well-formed value.
	for _, name := range []string{"pve-qm-hostpci", "pve-qemu-sev-fmt", "pve-qemu-tdx-fmt", "pve-phys-bits", "storage-pair"} {
		route.RegisterFormat(name, func(string) error { return nil })
	}
	registerQemuFormats()
}
