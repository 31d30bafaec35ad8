package pvesim

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"
)

// Parameter definitions of the LXC endpoints, written from the official
// schema of Proxmox VE 9.1 (pve-container's $confdesc and its formats).

// Limits of pve-container's config (PVE::LXC::Config).
const (
	lxcMaxMountPoints = 256
	lxcMaxUnused      = 256
	lxcMaxDevices     = 256
	lxcMaxNetworks    = 32
)

var (
	lxcMountOptionPattern = `(?:(discard|lazytime|noatime|nodev|noexec|nosuid))(;(?:(discard|lazytime|noatime|nodev|noexec|nosuid)))*`

	// lxcRootfsFormat is $rootfs_desc.
	lxcRootfsFormat = Props(
		Str("volume").DefaultKey().Fmt("pve-lxc-mp-string"),
		Str("size").Opt().Fmt("disk-size"),
		Bool("acl").Opt(),
		Str("mountoptions").Opt().Pattern(lxcMountOptionPattern),
		Bool("ro").Opt(),
		Bool("quota").Opt(),
		Bool("replicate").Opt().Default("1"),
		Bool("shared").Opt().Default("0"),
	)

	// lxcMountPointFormat is $mp_desc: the rootfs keys plus the mount path.
	lxcMountPointFormat = lxcRootfsFormat.With(
		Bool("backup").Opt(),
		Str("mp").Fmt("pve-lxc-mp-string"),
		Bool("keepattrs").Opt().Default("0"),
	)

	lxcUnusedFormat = Props(Str("volume").DefaultKey().Fmt("pve-volume-id"))

	// lxcNetFormat is $netconf_desc.
	lxcNetFormat = Props(
		Str("type").Opt().Enum("veth"),
		Str("name").Pattern(`[-_.\w\d]+`),
		Str("bridge").Opt().Pattern(`[-_.\w\d]+`),
		Str("hwaddr").Opt().Fmt("mac-addr"),
		Int("mtu").Opt().Min(64).Max(65535),
		Num("rate").Opt(),
		Int("tag").Opt().Min(1).Max(4094),
		Str("trunks").Opt().Pattern(`(?:\d+(?:;\d+)*)`),
		Bool("firewall").Opt(),
		Str("ip").Opt().Fmt("pve-ipv4-config"),
		Str("gw").Opt().Fmt("ipv4"),
		Str("ip6").Opt().Fmt("pve-ipv6-config"),
		Str("gw6").Opt().Fmt("ipv6"),
		Bool("link_down").Opt(),
		Bool("host-managed").Opt(),
	)

	// lxcFeaturesFormat is $features_desc.
	lxcFeaturesFormat = Props(
		Str("mount").Opt().Pattern(`(?:[a-zA-Z0-9_; ]+)`),
		Bool("nesting").Opt().Default("0"),
		Bool("keyctl").Opt().Default("0"),
		Bool("fuse").Opt().Default("0"),
		Bool("mknod").Opt().Default("0"),
		Bool("force_rw_sys").Opt().Default("0"),
	)

	// lxcDevFormat is $dev_desc.
	lxcDevFormat = Props(
		Str("path").Opt().DefaultKey().Fmt("pve-lxc-dev-string"),
		Str("mode").Opt().Pattern(`0[0-7]{3}`),
		Int("uid").Opt().Min(0),
		Int("gid").Opt().Min(0),
		Bool("deny-write").Opt().Default("0"),
	)

	lxcOSTypes = []string{"debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine", "gentoo", "nixos", "unmanaged"}
)

func init() {
	RegisterFormat("pve-lxc-mp-string", func(s string) error {
		if regexp.MustCompile(`/\.\.?/`).MatchString(s) || regexp.MustCompile(`/\.\.?$`).MatchString(s) || strings.HasPrefix(s, "../") {
			return fmt.Errorf("%s contains illegal character sequences\n", s)
		}
		return nil
	})
	RegisterFormat("pve-lxc-dev-string", func(s string) error {
		if regexp.MustCompile(`/\.\.?(?:/|$)`).MatchString(s) || !strings.HasPrefix(s, "/dev/") {
			return fmt.Errorf("%s is not a valid device path\n", s)
		}
		return nil
	})
	// An IP address, optionally with "%iface" for link-local IPv6.
	RegisterFormat("lxc-ip-with-ll-iface", func(s string) error {
		addr, iface, hasIface := strings.Cut(s, "%")
		a, err := netip.ParseAddr(addr)
		if err != nil || (hasIface && (iface == "" || !a.Is6() || !a.IsLinkLocalUnicast())) {
			return fmt.Errorf("value does not look like a valid IP address\n")
		}
		return nil
	})
	RegisterFormat("pve-ct-timezone", func(s string) error {
		if s == "host" || s == "UTC" || regexp.MustCompile(`^[A-Z][A-Za-z_+\-]*(/[A-Za-z0-9_+\-]+){1,2}$`).MatchString(s) {
			return nil
		}
		return fmt.Errorf("invalid time zone '%s'\n", s)
	})
}

// lxcConfigParams are the container options shared by create and config
// update (PVE::LXC::Config->json_config_properties).
func lxcConfigParams() *Params {
	return NewParams(
		Str("arch").Opt().Enum("amd64", "i386", "arm64", "armhf", "riscv32", "riscv64").Default("amd64"),
		Str("cmode").Opt().Enum("shell", "console", "tty").Default("tty"),
		Bool("console").Opt().Default("1"),
		Int("cores").Opt().Min(1).Max(8192),
		Num("cpulimit").Opt().Min(0).Max(8192).Default("0"),
		Int("cpuunits").Opt().Min(0).Max(500000),
		Bool("debug").Opt().Default("0"),
		Str("description").Opt().MaxLen(8192),
		Str("dev").Opt().Props(lxcDevFormat).Indexed(lxcMaxDevices-1),
		Str("entrypoint").Opt().Pattern(`(?:[^\x00-\x08\x10-\x1F\x7F]+)`).Default("/sbin/init"),
		Str("env").Opt().Pattern(`(?:(?:\w+=[^\x00-\x08\x10-\x1F\x7F]*)(?:\x00\w+=[^\x00-\x08\x10-\x1F\x7F]*)*)`),
		Str("features").Opt().Props(lxcFeaturesFormat),
		Str("hookscript").Opt().Fmt("pve-volume-id"),
		Str("hostname").Opt().Fmt("dns-name").MaxLen(255),
		Str("lock").Opt().Enum("backup", "create", "destroyed", "disk", "fstrim", "migrate", "mounted", "rollback", "snapshot", "snapshot-delete"),
		Int("memory").Opt().Min(16).Default("512"),
		Str("mp").Opt().Props(lxcMountPointFormat).Indexed(lxcMaxMountPoints-1),
		Str("nameserver").Opt().Fmt("lxc-ip-with-ll-iface-list"),
		Str("net").Opt().Props(lxcNetFormat).Indexed(lxcMaxNetworks-1),
		Bool("onboot").Opt().Default("0"),
		Str("ostype").Opt().Enum(lxcOSTypes...),
		Bool("protection").Opt().Default("0"),
		Str("rootfs").Opt().Props(lxcRootfsFormat),
		Str("searchdomain").Opt().Fmt("dns-name-list"),
		Str("startup").Opt().Fmt("pve-startup-order"),
		Int("swap").Opt().Min(0).Default("512"),
		Str("tags").Opt().Fmt("pve-tag-list"),
		Bool("template").Opt().Default("0"),
		Str("timezone").Opt().Fmt("pve-ct-timezone"),
		Int("tty").Opt().Min(0).Max(6).Default("2"),
		Bool("unprivileged").Opt().Default("0"),
		Str("unused").Opt().Props(lxcUnusedFormat).Indexed(lxcMaxUnused-1),
	)
}

// lxcCreateParams: POST /nodes/{node}/lxc.
func lxcCreateParams() *Params {
	return lxcConfigParams().With(
		pNode(), pVMID(),
		Str("ostemplate").MaxLen(255),
		Str("password").Opt().MinLen(5),
		Str("storage").Opt().Fmt("pve-storage-id").Default("local"),
		Bool("force").Opt(),
		Bool("restore").Opt(),
		Bool("unique").Opt().Requires("restore"),
		Str("pool").Opt().Fmt("pve-poolid"),
		Bool("ignore-unpack-errors").Opt(),
		Str("ssh-public-keys").Opt(),
		Num("bwlimit").Opt().Min(0),
		Bool("start").Opt().Default("0"),
		Bool("ha-managed").Opt().Default("0"),
	)
}

// lxcUpdateParams: PUT .../lxc/{vmid}/config.
func lxcUpdateParams() *Params {
	return lxcConfigParams().With(
		pNode(), pVMID(),
		Str("delete").Opt().Fmt("pve-configid-list"),
		Str("revert").Opt().Fmt("pve-configid-list"),
		Str("digest").Opt().MaxLen(40),
	)
}

var lxcConfigTypes = lxcConfigParams()

func lxcKeyType(key string) Type {
	if p := lxcConfigTypes.Lookup(key); p != nil {
		return p.Type
	}
	return TString
}

// lxcVolumeKeys lists rootfs and mp0..mp255: the resize enum.
func lxcVolumeKeys() []string {
	out := []string{"rootfs"}
	for i := 0; i < lxcMaxMountPoints; i++ {
		out = append(out, "mp"+itoa(i))
	}
	return out
}

// isLxcVolumeKey says whether a key holds a mount point.
func isLxcVolumeKey(k string) bool {
	if k == "rootfs" {
		return true
	}
	n, ok := indexOf(k, "mp")
	return ok && n < lxcMaxMountPoints
}

// lxcVolumeFormat is the property-string format of a volume key.
func lxcVolumeFormat(key string) *PropFormat {
	switch {
	case key == "rootfs":
		return lxcRootfsFormat
	case strings.HasPrefix(key, "unused"):
		return lxcUnusedFormat
	}
	return lxcMountPointFormat
}

// printPropStringOrdered is PVE::JSONSchema::print_property_string: the
// default key's bare value first, then the required keys, then the rest,
// each group sorted by name.
func printPropStringOrdered(f *PropFormat, vals map[string]string) string {
	var parts []string
	defKey := f.DefaultKeyName()
	done := map[string]bool{}
	if defKey != "" {
		if v, ok := vals[defKey]; ok {
			parts = append(parts, v)
		}
		done[defKey] = true
	}
	keys := sortedKeys(vals)
	for _, k := range keys {
		if p := f.Keys[k]; p != nil && !p.Optional && p.AliasOf == "" && !done[k] {
			parts = append(parts, k+"="+vals[k])
			done[k] = true
		}
	}
	for _, k := range keys {
		if !done[k] {
			parts = append(parts, k+"="+vals[k])
		}
	}
	return strings.Join(parts, ",")
}
