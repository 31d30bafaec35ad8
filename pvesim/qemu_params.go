package pvesim

import (
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Parameter definitions of the QEMU endpoints, written from the official
// schema of Proxmox VE 9.1 (qemu-server's $confdesc and its formats).

// isQemuDiskKey says whether a config key is a drive (ide0-3, sata0-5,
// scsi0-30, virtio0-15, efidisk0, tpmstate0).
func isQemuDiskKey(k string) bool {
	if k == "efidisk0" || k == "tpmstate0" {
		return true
	}
	for _, fam := range []struct {
		prefix string
		max    int
	}{{"ide", 3}, {"sata", 5}, {"scsi", 30}, {"virtio", 15}} {
		if n, ok := route.IndexOf(k, fam.prefix); ok {
			return n <= fam.max
		}
	}
	return false
}

// qemuDiskSlots lists the drive keys in Proxmox's order (the resize/template enum).
func qemuDiskSlots() []string {
	var out []string
	add := func(prefix string, n int) {
		for i := 0; i <= n; i++ {
			out = append(out, prefix+itoa(i))
		}
	}
	add("ide", 3)
	add("scsi", 30)
	add("virtio", 15)
	add("sata", 5)
	return append(out, "efidisk0", "tpmstate0")
}

func itoa(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return itoa(i/10) + string(rune('0'+i%10))
}

var (
	qemuMemoryFormat = route.Props(route.Int("current").DefaultKey().Min(16).Default("512"))

	qemuNetModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

	qemuNetFormat = func() *route.PropFormat {
		keys := []*route.Param{
			route.Str("model").DefaultKey().Enum(qemuNetModels...),
			route.Str("macaddr").Opt().Fmt("mac-addr"),
			route.Str("bridge").Opt().Fmt("pve-bridge-id"),
			route.Bool("firewall").Opt(),
			route.Bool("link_down").Opt(),
			route.Int("mtu").Opt().Min(1).Max(65520),
			route.Int("queues").Opt().Min(0).Max(64),
			route.Num("rate").Opt().Min(0),
			route.Int("tag").Opt().Min(1).Max(4094),
			route.Str("trunks").Opt().Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
		}
		for _, m := range qemuNetModels {
			keys = append(keys, route.Alias(m, "macaddr").KeyAlias("model"))
		}
		return route.Props(keys...)
	}()

	// Keys shared by all disk buses.
	qemuDriveCommon = func() *route.PropFormat {
		return route.Props(
			route.Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
			route.Alias("volume", "file"),
			route.Str("aio").Opt().Enum("native", "threads", "io_uring"),
			route.Bool("backup").Opt(),
			route.Int("bps").Opt(),
			route.Int("bps_max_length").Opt().Min(1),
			route.Int("bps_rd").Opt(),
			route.Alias("bps_rd_length", "bps_rd_max_length"),
			route.Int("bps_rd_max_length").Opt().Min(1),
			route.Int("bps_wr").Opt(),
			route.Alias("bps_wr_length", "bps_wr_max_length"),
			route.Int("bps_wr_max_length").Opt().Min(1),
			route.Str("cache").Opt().Enum("none", "writethrough", "writeback", "unsafe", "directsync"),
			route.Bool("detect_zeroes").Opt(),
			route.Str("discard").Opt().Enum("ignore", "on"),
			route.Str("format").Opt().Enum("raw", "qcow", "qed", "qcow2", "vmdk", "cloop"),
			route.Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
			route.Int("iops").Opt(),
			route.Int("iops_max").Opt(),
			route.Int("iops_max_length").Opt().Min(1),
			route.Int("iops_rd").Opt(),
			route.Alias("iops_rd_length", "iops_rd_max_length"),
			route.Int("iops_rd_max").Opt(),
			route.Int("iops_rd_max_length").Opt().Min(1),
			route.Int("iops_wr").Opt(),
			route.Alias("iops_wr_length", "iops_wr_max_length"),
			route.Int("iops_wr_max").Opt(),
			route.Int("iops_wr_max_length").Opt().Min(1),
			route.Num("mbps").Opt(),
			route.Num("mbps_max").Opt(),
			route.Num("mbps_rd").Opt(),
			route.Num("mbps_rd_max").Opt(),
			route.Num("mbps_wr").Opt(),
			route.Num("mbps_wr_max").Opt(),
			route.Str("media").Opt().Enum("cdrom", "disk").Default("disk"),
			route.Bool("replicate").Opt().Default("1"),
			route.Str("rerror").Opt().Enum("ignore", "report", "stop"),
			route.Str("serial").Opt().MaxLen(60).Fmt("urlencoded"),
			route.Bool("shared").Opt().Default("0"),
			route.Str("size").Opt().Fmt("disk-size"),
			route.Bool("snapshot").Opt(),
			route.Str("werror").Opt().Enum("enospc", "ignore", "report", "stop"),
		)
	}()

	wwnKey      = route.Str("wwn").Opt().Pattern(`^(0x)[0-9a-fA-F]{16}`)
	qemuIDEFmt  = qemuDriveCommon.With(route.Str("model").Opt().MaxLen(120).Fmt("urlencoded"), route.Bool("ssd").Opt(), wwnKey)
	qemuSATAFmt = qemuDriveCommon.With(route.Bool("ssd").Opt(), wwnKey)
	qemuSCSIFmt = qemuDriveCommon.With(
		route.Bool("iothread").Opt(),
		route.Str("product").Opt().Pattern(`[A-Za-z0-9\-_\s]{0,16}`),
		route.Int("queues").Opt().Min(2),
		route.Bool("ro").Opt(),
		route.Bool("scsiblock").Opt().Default("0"),
		route.Bool("ssd").Opt(),
		route.Str("vendor").Opt().Pattern(`[A-Za-z0-9\-_\s]{0,8}`),
		wwnKey,
	)
	qemuVirtIOFmt = qemuDriveCommon.With(route.Bool("iothread").Opt(), route.Bool("ro").Opt())
	qemuEFIFmt    = route.Props(
		route.Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
		route.Alias("volume", "file"),
		route.Str("efitype").Opt().Enum("2m", "4m").Default("2m"),
		route.Str("format").Opt().Enum("raw", "qcow", "qed", "qcow2", "vmdk", "cloop"),
		route.Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
		route.Str("ms-cert").Opt().Enum("2011", "2023", "2023w", "2023k").Default("2011"),
		route.Bool("pre-enrolled-keys").Opt().Default("0"),
		route.Str("size").Opt().Fmt("disk-size"),
	)
	qemuTPMFmt = route.Props(
		route.Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
		route.Alias("volume", "file"),
		route.Str("format").Opt().Enum("raw", "qcow2", "vmdk"),
		route.Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
		route.Str("size").Opt().Fmt("disk-size"),
		route.Str("version").Opt().Enum("v1.2", "v2.0").Default("v1.2"),
	)

	qemuCPUModels = []string{
		"486", "athlon", "Broadwell", "Broadwell-IBRS", "Broadwell-noTSX", "Broadwell-noTSX-IBRS",
		"Cascadelake-Server", "Cascadelake-Server-noTSX", "Cascadelake-Server-v2", "Cascadelake-Server-v4", "Cascadelake-Server-v5",
		"Conroe", "Cooperlake", "Cooperlake-v2", "core2duo", "coreduo", "EPYC", "EPYC-Genoa", "EPYC-IBPB", "EPYC-Milan", "EPYC-Milan-v2",
		"EPYC-Rome", "EPYC-Rome-v2", "EPYC-Rome-v3", "EPYC-Rome-v4", "EPYC-v3", "EPYC-v4", "GraniteRapids", "Haswell", "Haswell-IBRS",
		"Haswell-noTSX", "Haswell-noTSX-IBRS", "host", "Icelake-Client", "Icelake-Client-noTSX", "Icelake-Server", "Icelake-Server-noTSX",
		"Icelake-Server-v3", "Icelake-Server-v4", "Icelake-Server-v5", "Icelake-Server-v6", "IvyBridge", "IvyBridge-IBRS", "KnightsMill",
		"kvm32", "kvm64", "max", "Nehalem", "Nehalem-IBRS", "Opteron_G1", "Opteron_G2", "Opteron_G3", "Opteron_G4", "Opteron_G5",
		"Penryn", "pentium", "pentium2", "pentium3", "phenom", "qemu32", "qemu64", "SandyBridge", "SandyBridge-IBRS",
		"SapphireRapids", "SapphireRapids-v2", "Skylake-Client", "Skylake-Client-IBRS", "Skylake-Client-noTSX-IBRS", "Skylake-Client-v4",
		"Skylake-Server", "Skylake-Server-IBRS", "Skylake-Server-noTSX-IBRS", "Skylake-Server-v4", "Skylake-Server-v5",
		"Westmere", "Westmere-IBRS", "x86-64-v2", "x86-64-v2-AES", "x86-64-v3", "x86-64-v4",
	}
)

func registerQemuFormats() {
	route.RegisterPropFormat("pve-qm-ipconfig", route.Props(
		route.Str("ip").Opt().Fmt("pve-ipv4-config").Default("dhcp"),
		route.Str("gw").Opt().Fmt("ipv4").Requires("ip"),
		route.Str("ip6").Opt().Fmt("pve-ipv6-config").Default("dhcp"),
		route.Str("gw6").Opt().Fmt("ipv6").Requires("ip6"),
	))
	route.RegisterPropFormat("pve-vm-cpu-conf", route.Props(
		route.Str("cputype").Opt().DefaultKey().Default("kvm64"),
		route.Str("reported-model").Opt().Enum(qemuCPUModels...),
		route.Bool("hidden").Opt().Default("0"),
		route.Str("hv-vendor-id").Opt().Pattern(`[a-zA-Z0-9]{1,12}`),
		route.Str("flags").Opt().Pattern(`[+-][a-zA-Z0-9\-_.]+(;[+-][a-zA-Z0-9\-_.]+)*`),
		route.Int("guest-phys-bits").Opt().Min(32).Max(64),
		route.Str("phys-bits").Opt().Fmt("pve-phys-bits"),
		route.Int("level").Opt().Min(0).Max(4294967295),
	))
	route.RegisterPropFormat("pve-qm-boot", route.Props(
		route.Str("legacy").Opt().DefaultKey().Pattern(`[acdn]{1,4}`).Default("cdn"),
		route.Str("order").Opt().Fmt("pve-qm-bootdev-list"),
	))
	b64 := `[A-Za-z0-9+/]+={0,2}`
	route.RegisterPropFormat("pve-qm-smbios1", route.Props(
		route.Str("uuid").Opt().Pattern(`[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}`),
		route.Str("version").Opt().Pattern(b64),
		route.Str("serial").Opt().Pattern(b64),
		route.Str("manufacturer").Opt().Pattern(b64),
		route.Str("product").Opt().Pattern(b64),
		route.Str("sku").Opt().Pattern(b64),
		route.Str("family").Opt().Pattern(b64),
		route.Bool("base64").Opt(),
	))
	route.RegisterPropFormat("pve-qm-watchdog", route.Props(
		route.Str("model").Opt().DefaultKey().Enum("i6300esb", "ib700").Default("i6300esb"),
		route.Str("action").Opt().Enum("reset", "shutdown", "poweroff", "pause", "debug", "none"),
	))
	route.RegisterPropFormat("pve-qm-rng", route.Props(
		route.Str("source").DefaultKey().Enum("/dev/urandom", "/dev/random", "/dev/hwrng"),
		route.Int("max_bytes").Opt().Default("1024"),
		route.Int("period").Opt().Default("1000"),
	))
	route.RegisterPropFormat("pve-qm-cicustom", route.Props(
		route.Str("meta").Opt().Fmt("pve-volume-id"),
		route.Str("network").Opt().Fmt("pve-volume-id"),
		route.Str("user").Opt().Fmt("pve-volume-id"),
		route.Str("vendor").Opt().Fmt("pve-volume-id"),
	))
	route.RegisterPropFormat("pve-qm-ide", qemuIDEFmt)
}

// qemuConfigParams are the VM options shared by create and config update
// ($confdesc plus the drive and device families).
func qemuConfigParams() *route.Params {
	return route.NewParams(
		route.Bool("acpi").Opt().Default("1"),
		route.Str("affinity").Opt().Fmt("pve-cpuset"),
		route.Str("agent").Opt().Props(route.Props(
			route.Bool("enabled").DefaultKey().Default("0"),
			route.Bool("freeze-fs").Opt().Default("1"),
			route.Alias("freeze-fs-on-backup", "freeze-fs"),
			route.Alias("guest-fsfreeze", "freeze-fs"),
			route.Bool("fstrim_cloned_disks").Opt().Default("0"),
			route.Str("type").Opt().Enum("virtio", "isa").Default("virtio"),
		)),
		route.Bool("allow-ksm").Opt().Default("1"),
		route.Str("amd-sev").Opt().Fmt("pve-qemu-sev-fmt"),
		route.Str("arch").Opt().Enum("x86_64", "aarch64"),
		route.Str("args").Opt(),
		route.Str("audio0").Opt().Props(route.Props(
			route.Str("device").Enum("ich9-intel-hda", "intel-hda", "AC97"),
			route.Str("driver").Opt().Enum("spice", "none").Default("spice"),
		)),
		route.Bool("autostart").Opt().Default("0"),
		route.Int("balloon").Opt().Min(0),
		route.Str("bios").Opt().Enum("seabios", "ovmf").Default("seabios"),
		route.Str("boot").Opt().Fmt("pve-qm-boot"),
		route.Str("bootdisk").Opt().Fmt("pve-qm-bootdisk").Pattern(`(ide|sata|scsi|virtio)\d+`),
		route.Str("cdrom").Opt().Fmt("pve-qm-ide"),
		route.Str("cicustom").Opt().Fmt("pve-qm-cicustom"),
		route.Str("cipassword").Opt(),
		route.Str("citype").Opt().Enum("configdrive2", "nocloud", "opennebula"),
		route.Bool("ciupgrade").Opt().Default("1"),
		route.Str("ciuser").Opt(),
		route.Int("cores").Opt().Min(1).Default("1"),
		route.Str("cpu").Opt().Fmt("pve-vm-cpu-conf"),
		route.Num("cpulimit").Opt().Min(0).Max(128).Default("0"),
		route.Int("cpuunits").Opt().Min(1).Max(262144),
		route.Str("description").Opt().MaxLen(8192),
		route.Str("efidisk0").Opt().Props(qemuEFIFmt),
		route.Bool("freeze").Opt(),
		route.Str("hookscript").Opt().Fmt("pve-volume-id"),
		route.Str("hostpci").Opt().Fmt("pve-qm-hostpci").Indexed(15),
		route.Str("hotplug").Opt().Fmt("pve-hotplug-features").Default("network,disk,usb"),
		route.Str("hugepages").Opt().Enum("any", "2", "1024"),
		route.Str("ide").Opt().Props(qemuIDEFmt).Indexed(3),
		route.Str("import-working-storage").Opt().Fmt("pve-storage-id"),
		route.Str("intel-tdx").Opt().Fmt("pve-qemu-tdx-fmt"),
		route.Str("ipconfig").Opt().Fmt("pve-qm-ipconfig").Indexed(31),
		route.Str("ivshmem").Opt().Props(route.Props(
			route.Str("name").Opt().Pattern(`[a-zA-Z0-9\-]+`),
			route.Int("size").Min(1),
		)),
		route.Bool("keephugepages").Opt().Default("0"),
		route.Str("keyboard").Opt().Enum("de", "de-ch", "da", "en-gb", "en-us", "es", "fi", "fr", "fr-be", "fr-ca", "fr-ch", "hu", "is", "it", "ja", "lt", "mk", "nl", "no", "pl", "pt", "pt-br", "sv", "sl", "tr"),
		route.Bool("kvm").Opt().Default("1"),
		route.Bool("localtime").Opt(),
		route.Str("lock").Opt().Enum("backup", "clone", "create", "migrate", "rollback", "snapshot", "snapshot-delete", "suspending", "suspended"),
		route.Str("machine").Opt().Props(route.Props(
			route.Str("type").Opt().DefaultKey().MaxLen(40).Pattern(`(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)`),
			route.Num("aw-bits").Opt().Min(32).Max(64),
			route.Bool("enable-s3").Opt(),
			route.Bool("enable-s4").Opt(),
			route.Str("viommu").Opt().Enum("intel", "virtio"),
		)),
		route.Str("memory").Opt().Props(qemuMemoryFormat),
		route.Num("migrate_downtime").Opt().Min(0).Default("0.1"),
		route.Int("migrate_speed").Opt().Min(0).Default("0"),
		route.Str("name").Opt().Fmt("dns-name"),
		route.Str("nameserver").Opt().Fmt("address-list"),
		route.Str("net").Opt().Props(qemuNetFormat).Indexed(31),
		route.Bool("numa").Opt().Default("0"),
		route.Str("numa").Opt().Props(route.Props(
			route.Str("cpus").Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
			route.Str("hostnodes").Opt().Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
			route.Num("memory").Opt(),
			route.Str("policy").Opt().Enum("preferred", "bind", "interleave"),
		)).Indexed(7),
		route.Bool("onboot").Opt().Default("0"),
		route.Str("ostype").Opt().Enum("other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris").Default("other"),
		route.Str("parallel").Opt().Pattern(`/dev/parport\d+|/dev/usb/lp\d+`).Indexed(2),
		route.Bool("protection").Opt().Default("0"),
		route.Bool("reboot").Opt().Default("1"),
		route.Str("rng0").Opt().Fmt("pve-qm-rng"),
		route.Str("sata").Opt().Props(qemuSATAFmt).Indexed(5),
		route.Str("scsi").Opt().Props(qemuSCSIFmt).Indexed(30),
		route.Str("scsihw").Opt().Enum("lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi").Default("lsi"),
		route.Str("searchdomain").Opt(),
		route.Str("serial").Opt().Pattern(`(/dev/.+|socket)`).Indexed(3),
		route.Int("shares").Opt().Min(0).Max(50000).Default("1000"),
		route.Str("smbios1").Opt().MaxLen(512).Fmt("pve-qm-smbios1"),
		route.Int("smp").Opt().Min(1).Default("1"),
		route.Int("sockets").Opt().Min(1).Default("1"),
		route.Str("spice_enhancements").Opt().Props(route.Props(
			route.Bool("foldersharing").Opt().Default("0"),
			route.Str("videostreaming").Opt().Enum("off", "all", "filter").Default("off"),
		)),
		route.Str("sshkeys").Opt().Fmt("urlencoded"),
		route.Str("startdate").Opt().Pattern(`(now|\d{4}-\d{1,2}-\d{1,2}(T\d{1,2}:\d{1,2}:\d{1,2})?)`).Default("now"),
		route.Str("startup").Opt().Fmt("pve-startup-order"),
		route.Bool("tablet").Opt().Default("1"),
		route.Str("tags").Opt().Fmt("pve-tag-list"),
		route.Bool("tdf").Opt().Default("0"),
		route.Bool("template").Opt().Default("0"),
		route.Str("tpmstate0").Opt().Props(qemuTPMFmt),
		route.Str("unused").Opt().Props(route.Props(route.Str("file").DefaultKey().Fmt("pve-volume-id"), route.Alias("volume", "file"))).Indexed(255),
		route.Str("usb").Opt().Props(route.Props(
			route.Str("host").Opt().DefaultKey().Pattern(`(?:(?:(0x)?([0-9A-Fa-f]{4}):(0x)?([0-9A-Fa-f]{4}))|(?:(\d+)\-(\d+(\.\d+)*))|[Ss][Pp][Ii][Cc][Ee])`),
			route.Str("mapping").Opt().Fmt("pve-configid"),
			route.Bool("usb3").Opt().Default("0"),
		)).Indexed(4),
		route.Int("vcpus").Opt().Min(1).Default("0"),
		route.Str("vga").Opt().Props(route.Props(
			route.Str("type").Opt().DefaultKey().Enum("cirrus", "qxl", "qxl2", "qxl3", "qxl4", "none", "serial0", "serial1", "serial2", "serial3", "std", "virtio", "virtio-gl", "vmware").Default("std"),
			route.Str("clipboard").Opt().Enum("vnc"),
			route.Int("memory").Opt().Min(4).Max(512),
		)),
		route.Str("virtio").Opt().Props(qemuVirtIOFmt).Indexed(15),
		route.Str("virtiofs").Opt().Props(route.Props(
			route.Str("dirid").DefaultKey().Fmt("pve-configid"),
			route.Str("cache").Opt().Enum("auto", "always", "metadata", "never").Default("auto"),
			route.Bool("direct-io").Opt().Default("0"),
			route.Bool("expose-acl").Opt().Default("0"),
			route.Bool("expose-xattr").Opt().Default("0"),
		)).Indexed(9),
		route.Str("vmgenid").Opt().Pattern(`(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])`).Default("1 (autogenerated)"),
		route.Str("vmstatestorage").Opt().Fmt("pve-storage-id"),
		route.Str("watchdog").Opt().Fmt("pve-qm-watchdog"),
	)
}

// qemuCreateParams: POST /nodes/{node}/qemu.
func qemuCreateParams() *route.Params {
	return qemuConfigParams().With(
		pNode(), pVMID(),
		route.Str("archive").Opt().MaxLen(255),
		route.Int("bwlimit").Opt().Min(0),
		route.Bool("force").Opt().Requires("archive"),
		route.Bool("ha-managed").Opt().Default("0"),
		route.Bool("live-restore").Opt(),
		route.Str("pool").Opt().Fmt("pve-poolid"),
		route.Bool("start").Opt().Default("0"),
		route.Str("storage").Opt().Fmt("pve-storage-id"),
		route.Bool("unique").Opt().Requires("archive"),
	)
}

// qemuUpdateParams: PUT (sync) and POST (async) .../config.
func qemuUpdateParams(async bool) *route.Params {
	p := qemuConfigParams().With(
		pNode(), pVMID(),
		route.Str("delete").Opt().Fmt("pve-configid-list"),
		route.Str("digest").Opt().MaxLen(40),
		route.Str("revert").Opt().Fmt("pve-configid-list"),
		route.Bool("skiplock").Opt(),
		route.Bool("force").Opt().Requires("delete"),
	)
	if async {
		p = p.With(route.Int("background_delay").Opt().Min(1).Max(30))
	} else {
		p = p.Without("import-working-storage")
	}
	return p
}

// qemuConfigKeyType returns the schema type of a config key, for read-back.
var qemuConfigTypes = qemuConfigParams()

func qemuKeyType(key string) route.Type {
	if p := qemuConfigTypes.Lookup(key); p != nil {
		return p.Type
	}
	return route.TString
}

// qemuDriveFormat returns the property-string format of a drive key.
func qemuDriveFormat(key string) *route.PropFormat {
	switch {
	case strings.HasPrefix(key, "ide"):
		return qemuIDEFmt
	case strings.HasPrefix(key, "sata"):
		return qemuSATAFmt
	case strings.HasPrefix(key, "scsi"):
		return qemuSCSIFmt
	case strings.HasPrefix(key, "virtio"):
		return qemuVirtIOFmt
	case key == "efidisk0":
		return qemuEFIFmt
	case key == "tpmstate0":
		return qemuTPMFmt
	}
	return nil
}
