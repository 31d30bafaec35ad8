package pvesim

import (
	"strings"
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
		if n, ok := indexOf(k, fam.prefix); ok {
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
	qemuMemoryFormat = Props(Int("current").DefaultKey().Min(16).Default("512"))

	qemuNetModels = []string{"e1000", "e1000-82540em", "e1000-82544gc", "e1000-82545em", "e1000e", "i82551", "i82557b", "i82559er", "ne2k_isa", "ne2k_pci", "pcnet", "rtl8139", "virtio", "vmxnet3"}

	qemuNetFormat = func() *PropFormat {
		keys := []*Param{
			Str("model").DefaultKey().Enum(qemuNetModels...),
			Str("macaddr").Opt().Fmt("mac-addr"),
			Str("bridge").Opt().Fmt("pve-bridge-id"),
			Bool("firewall").Opt(),
			Bool("link_down").Opt(),
			Int("mtu").Opt().Min(1).Max(65520),
			Int("queues").Opt().Min(0).Max(64),
			Num("rate").Opt().Min(0),
			Int("tag").Opt().Min(1).Max(4094),
			Str("trunks").Opt().Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
		}
		for _, m := range qemuNetModels {
			keys = append(keys, Alias(m, "macaddr").KeyAlias("model"))
		}
		return Props(keys...)
	}()

	// Keys shared by all disk buses.
	qemuDriveCommon = func() *PropFormat {
		return Props(
			Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
			Alias("volume", "file"),
			Str("aio").Opt().Enum("native", "threads", "io_uring"),
			Bool("backup").Opt(),
			Int("bps").Opt(),
			Int("bps_max_length").Opt().Min(1),
			Int("bps_rd").Opt(),
			Alias("bps_rd_length", "bps_rd_max_length"),
			Int("bps_rd_max_length").Opt().Min(1),
			Int("bps_wr").Opt(),
			Alias("bps_wr_length", "bps_wr_max_length"),
			Int("bps_wr_max_length").Opt().Min(1),
			Str("cache").Opt().Enum("none", "writethrough", "writeback", "unsafe", "directsync"),
			Bool("detect_zeroes").Opt(),
			Str("discard").Opt().Enum("ignore", "on"),
			Str("format").Opt().Enum("raw", "qcow", "qed", "qcow2", "vmdk", "cloop"),
			Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
			Int("iops").Opt(),
			Int("iops_max").Opt(),
			Int("iops_max_length").Opt().Min(1),
			Int("iops_rd").Opt(),
			Alias("iops_rd_length", "iops_rd_max_length"),
			Int("iops_rd_max").Opt(),
			Int("iops_rd_max_length").Opt().Min(1),
			Int("iops_wr").Opt(),
			Alias("iops_wr_length", "iops_wr_max_length"),
			Int("iops_wr_max").Opt(),
			Int("iops_wr_max_length").Opt().Min(1),
			Num("mbps").Opt(),
			Num("mbps_max").Opt(),
			Num("mbps_rd").Opt(),
			Num("mbps_rd_max").Opt(),
			Num("mbps_wr").Opt(),
			Num("mbps_wr_max").Opt(),
			Str("media").Opt().Enum("cdrom", "disk").Default("disk"),
			Bool("replicate").Opt().Default("1"),
			Str("rerror").Opt().Enum("ignore", "report", "stop"),
			Str("serial").Opt().MaxLen(60).Fmt("urlencoded"),
			Bool("shared").Opt().Default("0"),
			Str("size").Opt().Fmt("disk-size"),
			Bool("snapshot").Opt(),
			Str("werror").Opt().Enum("enospc", "ignore", "report", "stop"),
		)
	}()

	wwnKey      = Str("wwn").Opt().Pattern(`^(0x)[0-9a-fA-F]{16}`)
	qemuIDEFmt  = qemuDriveCommon.With(Str("model").Opt().MaxLen(120).Fmt("urlencoded"), Bool("ssd").Opt(), wwnKey)
	qemuSATAFmt = qemuDriveCommon.With(Bool("ssd").Opt(), wwnKey)
	qemuSCSIFmt = qemuDriveCommon.With(
		Bool("iothread").Opt(),
		Str("product").Opt().Pattern(`[A-Za-z0-9\-_\s]{0,16}`),
		Int("queues").Opt().Min(2),
		Bool("ro").Opt(),
		Bool("scsiblock").Opt().Default("0"),
		Bool("ssd").Opt(),
		Str("vendor").Opt().Pattern(`[A-Za-z0-9\-_\s]{0,8}`),
		wwnKey,
	)
	qemuVirtIOFmt = qemuDriveCommon.With(Bool("iothread").Opt(), Bool("ro").Opt())
	qemuEFIFmt    = Props(
		Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
		Alias("volume", "file"),
		Str("efitype").Opt().Enum("2m", "4m").Default("2m"),
		Str("format").Opt().Enum("raw", "qcow", "qed", "qcow2", "vmdk", "cloop"),
		Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
		Str("ms-cert").Opt().Enum("2011", "2023", "2023w", "2023k").Default("2011"),
		Bool("pre-enrolled-keys").Opt().Default("0"),
		Str("size").Opt().Fmt("disk-size"),
	)
	qemuTPMFmt = Props(
		Str("file").DefaultKey().Fmt("pve-volume-id-or-qm-path"),
		Alias("volume", "file"),
		Str("format").Opt().Enum("raw", "qcow2", "vmdk"),
		Str("import-from").Opt().Fmt("pve-volume-id-or-absolute-path"),
		Str("size").Opt().Fmt("disk-size"),
		Str("version").Opt().Enum("v1.2", "v2.0").Default("v1.2"),
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
	RegisterPropFormat("pve-qm-ipconfig", Props(
		Str("ip").Opt().Fmt("pve-ipv4-config").Default("dhcp"),
		Str("gw").Opt().Fmt("ipv4").Requires("ip"),
		Str("ip6").Opt().Fmt("pve-ipv6-config").Default("dhcp"),
		Str("gw6").Opt().Fmt("ipv6").Requires("ip6"),
	))
	RegisterPropFormat("pve-vm-cpu-conf", Props(
		Str("cputype").Opt().DefaultKey().Default("kvm64"),
		Str("reported-model").Opt().Enum(qemuCPUModels...),
		Bool("hidden").Opt().Default("0"),
		Str("hv-vendor-id").Opt().Pattern(`[a-zA-Z0-9]{1,12}`),
		Str("flags").Opt().Pattern(`[+-][a-zA-Z0-9\-_.]+(;[+-][a-zA-Z0-9\-_.]+)*`),
		Int("guest-phys-bits").Opt().Min(32).Max(64),
		Str("phys-bits").Opt().Fmt("pve-phys-bits"),
		Int("level").Opt().Min(0).Max(4294967295),
	))
	RegisterPropFormat("pve-qm-boot", Props(
		Str("legacy").Opt().DefaultKey().Pattern(`[acdn]{1,4}`).Default("cdn"),
		Str("order").Opt().Fmt("pve-qm-bootdev-list"),
	))
	b64 := `[A-Za-z0-9+/]+={0,2}`
	RegisterPropFormat("pve-qm-smbios1", Props(
		Str("uuid").Opt().Pattern(`[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}`),
		Str("version").Opt().Pattern(b64),
		Str("serial").Opt().Pattern(b64),
		Str("manufacturer").Opt().Pattern(b64),
		Str("product").Opt().Pattern(b64),
		Str("sku").Opt().Pattern(b64),
		Str("family").Opt().Pattern(b64),
		Bool("base64").Opt(),
	))
	RegisterPropFormat("pve-qm-watchdog", Props(
		Str("model").Opt().DefaultKey().Enum("i6300esb", "ib700").Default("i6300esb"),
		Str("action").Opt().Enum("reset", "shutdown", "poweroff", "pause", "debug", "none"),
	))
	RegisterPropFormat("pve-qm-rng", Props(
		Str("source").DefaultKey().Enum("/dev/urandom", "/dev/random", "/dev/hwrng"),
		Int("max_bytes").Opt().Default("1024"),
		Int("period").Opt().Default("1000"),
	))
	RegisterPropFormat("pve-qm-cicustom", Props(
		Str("meta").Opt().Fmt("pve-volume-id"),
		Str("network").Opt().Fmt("pve-volume-id"),
		Str("user").Opt().Fmt("pve-volume-id"),
		Str("vendor").Opt().Fmt("pve-volume-id"),
	))
	RegisterPropFormat("pve-qm-ide", qemuIDEFmt)
}

// qemuConfigParams are the VM options shared by create and config update
// ($confdesc plus the drive and device families).
func qemuConfigParams() *Params {
	return NewParams(
		Bool("acpi").Opt().Default("1"),
		Str("affinity").Opt().Fmt("pve-cpuset"),
		Str("agent").Opt().Props(Props(
			Bool("enabled").DefaultKey().Default("0"),
			Bool("freeze-fs").Opt().Default("1"),
			Alias("freeze-fs-on-backup", "freeze-fs"),
			Alias("guest-fsfreeze", "freeze-fs"),
			Bool("fstrim_cloned_disks").Opt().Default("0"),
			Str("type").Opt().Enum("virtio", "isa").Default("virtio"),
		)),
		Bool("allow-ksm").Opt().Default("1"),
		Str("amd-sev").Opt().Fmt("pve-qemu-sev-fmt"),
		Str("arch").Opt().Enum("x86_64", "aarch64"),
		Str("args").Opt(),
		Str("audio0").Opt().Props(Props(
			Str("device").Enum("ich9-intel-hda", "intel-hda", "AC97"),
			Str("driver").Opt().Enum("spice", "none").Default("spice"),
		)),
		Bool("autostart").Opt().Default("0"),
		Int("balloon").Opt().Min(0),
		Str("bios").Opt().Enum("seabios", "ovmf").Default("seabios"),
		Str("boot").Opt().Fmt("pve-qm-boot"),
		Str("bootdisk").Opt().Fmt("pve-qm-bootdisk").Pattern(`(ide|sata|scsi|virtio)\d+`),
		Str("cdrom").Opt().Fmt("pve-qm-ide"),
		Str("cicustom").Opt().Fmt("pve-qm-cicustom"),
		Str("cipassword").Opt(),
		Str("citype").Opt().Enum("configdrive2", "nocloud", "opennebula"),
		Bool("ciupgrade").Opt().Default("1"),
		Str("ciuser").Opt(),
		Int("cores").Opt().Min(1).Default("1"),
		Str("cpu").Opt().Fmt("pve-vm-cpu-conf"),
		Num("cpulimit").Opt().Min(0).Max(128).Default("0"),
		Int("cpuunits").Opt().Min(1).Max(262144),
		Str("description").Opt().MaxLen(8192),
		Str("efidisk0").Opt().Props(qemuEFIFmt),
		Bool("freeze").Opt(),
		Str("hookscript").Opt().Fmt("pve-volume-id"),
		Str("hostpci").Opt().Fmt("pve-qm-hostpci").Indexed(15),
		Str("hotplug").Opt().Fmt("pve-hotplug-features").Default("network,disk,usb"),
		Str("hugepages").Opt().Enum("any", "2", "1024"),
		Str("ide").Opt().Props(qemuIDEFmt).Indexed(3),
		Str("import-working-storage").Opt().Fmt("pve-storage-id"),
		Str("intel-tdx").Opt().Fmt("pve-qemu-tdx-fmt"),
		Str("ipconfig").Opt().Fmt("pve-qm-ipconfig").Indexed(31),
		Str("ivshmem").Opt().Props(Props(
			Str("name").Opt().Pattern(`[a-zA-Z0-9\-]+`),
			Int("size").Min(1),
		)),
		Bool("keephugepages").Opt().Default("0"),
		Str("keyboard").Opt().Enum("de", "de-ch", "da", "en-gb", "en-us", "es", "fi", "fr", "fr-be", "fr-ca", "fr-ch", "hu", "is", "it", "ja", "lt", "mk", "nl", "no", "pl", "pt", "pt-br", "sv", "sl", "tr"),
		Bool("kvm").Opt().Default("1"),
		Bool("localtime").Opt(),
		Str("lock").Opt().Enum("backup", "clone", "create", "migrate", "rollback", "snapshot", "snapshot-delete", "suspending", "suspended"),
		Str("machine").Opt().Props(Props(
			Str("type").Opt().DefaultKey().MaxLen(40).Pattern(`(pc|pc(-i440fx)?-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|q35|pc-q35-\d+(\.\d+)+(\+pve\d+)?(\.pxe)?|virt(?:-\d+(\.\d+)+)?(\+pve\d+)?)`),
			Num("aw-bits").Opt().Min(32).Max(64),
			Bool("enable-s3").Opt(),
			Bool("enable-s4").Opt(),
			Str("viommu").Opt().Enum("intel", "virtio"),
		)),
		Str("memory").Opt().Props(qemuMemoryFormat),
		Num("migrate_downtime").Opt().Min(0).Default("0.1"),
		Int("migrate_speed").Opt().Min(0).Default("0"),
		Str("name").Opt().Fmt("dns-name"),
		Str("nameserver").Opt().Fmt("address-list"),
		Str("net").Opt().Props(qemuNetFormat).Indexed(31),
		Bool("numa").Opt().Default("0"),
		Str("numa").Opt().Props(Props(
			Str("cpus").Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
			Str("hostnodes").Opt().Pattern(`\d+(?:-\d+)?(?:;\d+(?:-\d+)?)*`),
			Num("memory").Opt(),
			Str("policy").Opt().Enum("preferred", "bind", "interleave"),
		)).Indexed(7),
		Bool("onboot").Opt().Default("0"),
		Str("ostype").Opt().Enum("other", "wxp", "w2k", "w2k3", "w2k8", "wvista", "win7", "win8", "win10", "win11", "l24", "l26", "solaris").Default("other"),
		Str("parallel").Opt().Pattern(`/dev/parport\d+|/dev/usb/lp\d+`).Indexed(2),
		Bool("protection").Opt().Default("0"),
		Bool("reboot").Opt().Default("1"),
		Str("rng0").Opt().Fmt("pve-qm-rng"),
		Str("sata").Opt().Props(qemuSATAFmt).Indexed(5),
		Str("scsi").Opt().Props(qemuSCSIFmt).Indexed(30),
		Str("scsihw").Opt().Enum("lsi", "lsi53c810", "virtio-scsi-pci", "virtio-scsi-single", "megasas", "pvscsi").Default("lsi"),
		Str("searchdomain").Opt(),
		Str("serial").Opt().Pattern(`(/dev/.+|socket)`).Indexed(3),
		Int("shares").Opt().Min(0).Max(50000).Default("1000"),
		Str("smbios1").Opt().MaxLen(512).Fmt("pve-qm-smbios1"),
		Int("smp").Opt().Min(1).Default("1"),
		Int("sockets").Opt().Min(1).Default("1"),
		Str("spice_enhancements").Opt().Props(Props(
			Bool("foldersharing").Opt().Default("0"),
			Str("videostreaming").Opt().Enum("off", "all", "filter").Default("off"),
		)),
		Str("sshkeys").Opt().Fmt("urlencoded"),
		Str("startdate").Opt().Pattern(`(now|\d{4}-\d{1,2}-\d{1,2}(T\d{1,2}:\d{1,2}:\d{1,2})?)`).Default("now"),
		Str("startup").Opt().Fmt("pve-startup-order"),
		Bool("tablet").Opt().Default("1"),
		Str("tags").Opt().Fmt("pve-tag-list"),
		Bool("tdf").Opt().Default("0"),
		Bool("template").Opt().Default("0"),
		Str("tpmstate0").Opt().Props(qemuTPMFmt),
		Str("unused").Opt().Props(Props(Str("file").DefaultKey().Fmt("pve-volume-id"), Alias("volume", "file"))).Indexed(255),
		Str("usb").Opt().Props(Props(
			Str("host").Opt().DefaultKey().Pattern(`(?:(?:(0x)?([0-9A-Fa-f]{4}):(0x)?([0-9A-Fa-f]{4}))|(?:(\d+)\-(\d+(\.\d+)*))|[Ss][Pp][Ii][Cc][Ee])`),
			Str("mapping").Opt().Fmt("pve-configid"),
			Bool("usb3").Opt().Default("0"),
		)).Indexed(4),
		Int("vcpus").Opt().Min(1).Default("0"),
		Str("vga").Opt().Props(Props(
			Str("type").Opt().DefaultKey().Enum("cirrus", "qxl", "qxl2", "qxl3", "qxl4", "none", "serial0", "serial1", "serial2", "serial3", "std", "virtio", "virtio-gl", "vmware").Default("std"),
			Str("clipboard").Opt().Enum("vnc"),
			Int("memory").Opt().Min(4).Max(512),
		)),
		Str("virtio").Opt().Props(qemuVirtIOFmt).Indexed(15),
		Str("virtiofs").Opt().Props(Props(
			Str("dirid").DefaultKey().Fmt("pve-configid"),
			Str("cache").Opt().Enum("auto", "always", "metadata", "never").Default("auto"),
			Bool("direct-io").Opt().Default("0"),
			Bool("expose-acl").Opt().Default("0"),
			Bool("expose-xattr").Opt().Default("0"),
		)).Indexed(9),
		Str("vmgenid").Opt().Pattern(`(?:[a-fA-F0-9]{8}(?:-[a-fA-F0-9]{4}){3}-[a-fA-F0-9]{12}|[01])`).Default("1 (autogenerated)"),
		Str("vmstatestorage").Opt().Fmt("pve-storage-id"),
		Str("watchdog").Opt().Fmt("pve-qm-watchdog"),
	)
}

// qemuCreateParams: POST /nodes/{node}/qemu.
func qemuCreateParams() *Params {
	return qemuConfigParams().With(
		pNode(), pVMID(),
		Str("archive").Opt().MaxLen(255),
		Int("bwlimit").Opt().Min(0),
		Bool("force").Opt().Requires("archive"),
		Bool("ha-managed").Opt().Default("0"),
		Bool("live-restore").Opt(),
		Str("pool").Opt().Fmt("pve-poolid"),
		Bool("start").Opt().Default("0"),
		Str("storage").Opt().Fmt("pve-storage-id"),
		Bool("unique").Opt().Requires("archive"),
	)
}

// qemuUpdateParams: PUT (sync) and POST (async) .../config.
func qemuUpdateParams(async bool) *Params {
	p := qemuConfigParams().With(
		pNode(), pVMID(),
		Str("delete").Opt().Fmt("pve-configid-list"),
		Str("digest").Opt().MaxLen(40),
		Str("revert").Opt().Fmt("pve-configid-list"),
		Bool("skiplock").Opt(),
		Bool("force").Opt().Requires("delete"),
	)
	if async {
		p = p.With(Int("background_delay").Opt().Min(1).Max(30))
	} else {
		p = p.Without("import-working-storage")
	}
	return p
}

// qemuConfigKeyType returns the schema type of a config key, for read-back.
var qemuConfigTypes = qemuConfigParams()

func qemuKeyType(key string) Type {
	if p := qemuConfigTypes.Lookup(key); p != nil {
		return p.Type
	}
	return TString
}

// qemuDriveFormat returns the property-string format of a drive key.
func qemuDriveFormat(key string) *PropFormat {
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
