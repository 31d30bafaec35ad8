package pvesim

import (
	"fmt"
	"net/netip"
	"regexp"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
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
	lxcRootfsFormat = route.Props(
		route.Str("volume").DefaultKey().Fmt("pve-lxc-mp-string"),
		route.Str("size").Opt().Fmt("disk-size"),
		route.Bool("acl").Opt(),
		route.Str("mountoptions").Opt().Pattern(lxcMountOptionPattern),
		route.Bool("ro").Opt(),
		route.Bool("quota").Opt(),
		route.Bool("replicate").Opt().Default("1"),
		route.Bool("shared").Opt().Default("0"),
	)

	// lxcMountPointFormat is $mp_desc: the rootfs keys plus the mount path.
	lxcMountPointFormat = lxcRootfsFormat.With(
		route.Bool("backup").Opt(),
		route.Str("mp").Fmt("pve-lxc-mp-string"),
		route.Bool("keepattrs").Opt().Default("0"),
	)

	lxcUnusedFormat = route.Props(route.Str("volume").DefaultKey().Fmt("pve-volume-id"))

	// lxcNetFormat is $netconf_desc.
	lxcNetFormat = route.Props(
		route.Str("type").Opt().Enum("veth"),
		route.Str("name").Pattern(`[-_.\w\d]+`),
		route.Str("bridge").Opt().Pattern(`[-_.\w\d]+`),
		route.Str("hwaddr").Opt().Fmt("mac-addr"),
		route.Int("mtu").Opt().Min(64).Max(65535),
		route.Num("rate").Opt(),
		route.Int("tag").Opt().Min(1).Max(4094),
		route.Str("trunks").Opt().Pattern(`(?:\d+(?:;\d+)*)`),
		route.Bool("firewall").Opt(),
		route.Str("ip").Opt().Fmt("pve-ipv4-config"),
		route.Str("gw").Opt().Fmt("ipv4"),
		route.Str("ip6").Opt().Fmt("pve-ipv6-config"),
		route.Str("gw6").Opt().Fmt("ipv6"),
		route.Bool("link_down").Opt(),
		route.Bool("host-managed").Opt(),
	)

	// lxcFeaturesFormat is $features_desc.
	lxcFeaturesFormat = route.Props(
		route.Str("mount").Opt().Pattern(`(?:[a-zA-Z0-9_; ]+)`),
		route.Bool("nesting").Opt().Default("0"),
		route.Bool("keyctl").Opt().Default("0"),
		route.Bool("fuse").Opt().Default("0"),
		route.Bool("mknod").Opt().Default("0"),
		route.Bool("force_rw_sys").Opt().Default("0"),
	)

	// lxcDevFormat is $dev_desc.
	lxcDevFormat = route.Props(
		route.Str("path").Opt().DefaultKey().Fmt("pve-lxc-dev-string"),
		route.Str("mode").Opt().Pattern(`0[0-7]{3}`),
		route.Int("uid").Opt().Min(0),
		route.Int("gid").Opt().Min(0),
		route.Bool("deny-write").Opt().Default("0"),
	)

	lxcOSTypes = []string{"debian", "devuan", "ubuntu", "centos", "fedora", "opensuse", "archlinux", "alpine", "gentoo", "nixos", "unmanaged"}
)

func init() {
	route.RegisterFormat("pve-lxc-mp-string", func(s string) error {
		if regexp.MustCompile(`/\.\.?/`).MatchString(s) || regexp.MustCompile(`/\.\.?$`).MatchString(s) || strings.HasPrefix(s, "../") {
			return fmt.Errorf("%s contains illegal character sequences\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-lxc-dev-string", func(s string) error {
		if regexp.MustCompile(`/\.\.?(?:/|$)`).MatchString(s) || !strings.HasPrefix(s, "/dev/") {
			return fmt.Errorf("%s is not a valid device path\n", s)
		}
		return nil
	})
	// An IP address, optionally with "%iface" for link-local IPv6.
	route.RegisterFormat("lxc-ip-with-ll-iface", func(s string) error {
		addr, iface, hasIface := strings.Cut(s, "%")
		a, err := netip.ParseAddr(addr)
		if err != nil || (hasIface && (iface == "" || !a.Is6() || !a.IsLinkLocalUnicast())) {
			return fmt.Errorf("value does not look like a valid IP address\n")
		}
		return nil
	})
	route.RegisterFormat("pve-ct-timezone", func(s string) error {
		if s == "host" || s == "UTC" || regexp.MustCompile(`^[A-Z][A-Za-z_+\-]*(/[A-Za-z0-9_+\-]+){1,2}$`).MatchString(s) {
			return nil
		}
		return fmt.Errorf("invalid time zone '%s'\n", s)
	})
}

// lxcConfigParams are the container options shared by create and config
// update (PVE::LXC::Config->json_config_properties).
func lxcConfigParams() *route.Params {
	return route.NewParams(
		route.Str("arch").Opt().Enum("amd64", "i386", "arm64", "armhf", "riscv32", "riscv64").Default("amd64"),
		route.Str("cmode").Opt().Enum("shell", "console", "tty").Default("tty"),
		route.Bool("console").Opt().Default("1"),
		route.Int("cores").Opt().Min(1).Max(8192),
		route.Num("cpulimit").Opt().Min(0).Max(8192).Default("0"),
		route.Int("cpuunits").Opt().Min(0).Max(500000),
		route.Bool("debug").Opt().Default("0"),
		route.Str("description").Opt().MaxLen(8192),
		route.Str("dev").Opt().Props(lxcDevFormat).Indexed(lxcMaxDevices-1),
		route.Str("entrypoint").Opt().Pattern(`(?:[^\x00-\x08\x10-\x1F\x7F]+)`).Default("/sbin/init"),
		route.Str("env").Opt().Pattern(`(?:(?:\w+=[^\x00-\x08\x10-\x1F\x7F]*)(?:\x00\w+=[^\x00-\x08\x10-\x1F\x7F]*)*)`),
		route.Str("features").Opt().Props(lxcFeaturesFormat),
		route.Str("hookscript").Opt().Fmt("pve-volume-id"),
		route.Str("hostname").Opt().Fmt("dns-name").MaxLen(255),
		route.Str("lock").Opt().Enum("backup", "create", "destroyed", "disk", "fstrim", "migrate", "mounted", "rollback", "snapshot", "snapshot-delete"),
		route.Int("memory").Opt().Min(16).Default("512"),
		route.Str("mp").Opt().Props(lxcMountPointFormat).Indexed(lxcMaxMountPoints-1),
		route.Str("nameserver").Opt().Fmt("lxc-ip-with-ll-iface-list"),
		route.Str("net").Opt().Props(lxcNetFormat).Indexed(lxcMaxNetworks-1),
		route.Bool("onboot").Opt().Default("0"),
		route.Str("ostype").Opt().Enum(lxcOSTypes...),
		route.Bool("protection").Opt().Default("0"),
		route.Str("rootfs").Opt().Props(lxcRootfsFormat),
		route.Str("searchdomain").Opt().Fmt("dns-name-list"),
		route.Str("startup").Opt().Fmt("pve-startup-order"),
		route.Int("swap").Opt().Min(0).Default("512"),
		route.Str("tags").Opt().Fmt("pve-tag-list"),
		route.Bool("template").Opt().Default("0"),
		route.Str("timezone").Opt().Fmt("pve-ct-timezone"),
		route.Int("tty").Opt().Min(0).Max(6).Default("2"),
		route.Bool("unprivileged").Opt().Default("0"),
		route.Str("unused").Opt().Props(lxcUnusedFormat).Indexed(lxcMaxUnused-1),
	)
}

// lxcCreateParams: POST /nodes/{node}/lxc.
func lxcCreateParams() *route.Params {
	return lxcConfigParams().With(
		pNode(), pVMID(),
		route.Str("ostemplate").MaxLen(255),
		route.Str("password").Opt().MinLen(5),
		route.Str("storage").Opt().Fmt("pve-storage-id").Default("local"),
		route.Bool("force").Opt(),
		route.Bool("restore").Opt(),
		route.Bool("unique").Opt().Requires("restore"),
		route.Str("pool").Opt().Fmt("pve-poolid"),
		route.Bool("ignore-unpack-errors").Opt(),
		route.Str("ssh-public-keys").Opt(),
		route.Num("bwlimit").Opt().Min(0),
		route.Bool("start").Opt().Default("0"),
		route.Bool("ha-managed").Opt().Default("0"),
	)
}

// lxcUpdateParams: PUT .../lxc/{vmid}/config.
func lxcUpdateParams() *route.Params {
	return lxcConfigParams().With(
		pNode(), pVMID(),
		route.Str("delete").Opt().Fmt("pve-configid-list"),
		route.Str("revert").Opt().Fmt("pve-configid-list"),
		route.Str("digest").Opt().MaxLen(40),
	)
}

var lxcConfigTypes = lxcConfigParams()

func lxcKeyType(key string) route.Type {
	if p := lxcConfigTypes.Lookup(key); p != nil {
		return p.Type
	}
	return route.TString
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
	n, ok := route.IndexOf(k, "mp")
	return ok && n < lxcMaxMountPoints
}

// lxcVolumeFormat is the property-string format of a volume key.
func lxcVolumeFormat(key string) *route.PropFormat {
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
func printPropStringOrdered(f *route.PropFormat, vals map[string]string) string {
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
