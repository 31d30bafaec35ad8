package pvefields

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// qemuFields are the managed fields of a VirtualMachine and a Template, in
// the order their changes are listed. Defaults are qemu-server's
// (PVE/QemuServer.pm $confdesc) unless said otherwise.
var qemuFields = []row[*GuestSpec]{
	{param: param{key: "name", path: "metadata.name"}, want: func(gs *GuestSpec) (string, bool) { return gs.Name, true }},
	{param: param{key: "cores", path: "spec.cores", def: "1", takes: takesReboot}, want: func(gs *GuestSpec) (string, bool) { return positive(gs.Cores) }},
	{param: param{key: "sockets", path: "spec.sockets", def: "1", takes: takesReboot}, want: func(gs *GuestSpec) (string, bool) { return positive(gs.Sockets) }},
	// memory is "current=N" since 8.x; 512 MiB when absent.
	{param: param{key: "memory", path: "spec.memory", def: "512", takes: takesHotplug, hotplug: "memory",
		show: PropertyPart("current"), same: func(h, w string) bool { return PropertyPart("current")(h) == w }},
		want: func(gs *GuestSpec) (string, bool) { return positive(gs.Memory) }},
	// CPUConfig.pm get_default_cpu_type: no cpu key runs kvm64 (x86-64-v2-AES
	// is only what the web UI preselects). A change keeps the cpu's flags.
	{param: param{key: "cpu", path: "spec.cpu", def: "kvm64", takes: takesReboot, show: PropertyPart("cputype"),
		same: func(h, w string) bool { return PropertyPart("cputype")(h) == w }, update: func(w, h string) string {
			ps := pve.ParsePropertyString(h, "cputype")
			ps.Set("cputype", w)
			return ps.String("cputype")
		}}, want: func(gs *GuestSpec) (string, bool) { return str(gs.CPU) }},
	{param: param{key: "tags", path: "metadata.tags"}, each: func(gs *GuestSpec, x *fieldCtx) []param { return tagsParam(gs.Tags, x) }},
	{param: param{key: "description", path: "spec.description"}, each: func(gs *GuestSpec, x *fieldCtx) []param { return descParam(gs.Description, x) }},
	{param: param{key: "onboot", path: "spec.onboot", same: SameBool}, want: func(gs *GuestSpec) (string, bool) { return boolPtr(gs.OnBoot) }},
	{param: param{key: "startup", path: "spec.startup"}, want: func(gs *GuestSpec) (string, bool) { return str(gs.Startup) }},
	{param: param{key: "balloon", path: "spec.balloon"}, want: func(gs *GuestSpec) (string, bool) { return intPtr(gs.Balloon) }},
	// A create without ostype or scsihw gets l26 and virtio-scsi-single
	// (what the web UI proposes); an existing guest's are compared only when
	// declared.
	{param: param{key: "ostype", path: "spec.ostype", def: "other", createDef: "l26"}, want: func(gs *GuestSpec) (string, bool) { return str(gs.OSType) }},
	{param: param{key: "bios", path: "spec.bios", def: "seabios", takes: takesReboot}, want: func(gs *GuestSpec) (string, bool) { return str(gs.BIOS) }},
	{param: param{key: "machine", path: "spec.machine", takes: takesReboot}, want: func(gs *GuestSpec) (string, bool) { return str(gs.Machine) }},
	{param: param{key: "scsihw", path: "spec.scsihw", def: "lsi", createDef: "virtio-scsi-single", takes: takesReboot}, want: func(gs *GuestSpec) (string, bool) { return str(gs.SCSIHW) }},
	{param: param{key: "agent", path: "spec.agent", takes: takesReboot,
		same: func(h, w string) bool { return SameBool(PropertyPart("enabled")(h), w) }},
		want: func(gs *GuestSpec) (string, bool) { return boolPtr(gs.Agent) }},
	{param: param{path: "spec.net", takes: takesHotplug, hotplug: "network"}, each: vmNICs, prune: "net"},
	{param: param{path: "spec.disks"}, each: vmDisks},
	{param: param{key: CloudInitSlot, path: "spec.cloudInit"}, each: vmCloudInitDrive},
	{param: param{key: "ciuser", path: "spec.cloudInit.user", takes: takesCloudInit}, want: func(gs *GuestSpec) (string, bool) {
		return ciStr(gs, ciField(gs, func(c *CloudInitSpec) string { return c.User }))
	}},
	// Proxmox reads back a set password as asterisks: a password is
	// written once and then kept.
	{param: param{key: "cipassword", path: "spec.cloudInit.passwordFrom", takes: takesCloudInit,
		same: func(h, _ string) bool { return h != "" }, show: func(v string) string { return orEmpty(v, "(set)") }},
		want: func(gs *GuestSpec) (string, bool) {
			if gs.CloudInit == nil || !gs.CloudInit.PasswordSet {
				return "", false
			}
			return gs.CloudInit.Password, true
		}},
	{param: param{key: "sshkeys", path: "spec.cloudInit.sshKeys", takes: takesCloudInit,
		same: func(h, w string) bool { return slices.Equal(decodeKeys(h), decodeKeys(w)) },
		show: func(v string) string { return KeysSummary(decodeKeys(v)) }},
		want: func(gs *GuestSpec) (string, bool) {
			if gs.CloudInit == nil || len(gs.CloudInit.SSHKeys) == 0 {
				return "", false
			}
			return pve.EncodeSSHKeys(gs.CloudInit.SSHKeys), true
		}},
	{param: param{key: "nameserver", path: "spec.cloudInit.nameserver", takes: takesCloudInit, same: SameSpaced},
		want: func(gs *GuestSpec) (string, bool) {
			return ciStr(gs, Spaced(ciField(gs, func(c *CloudInitSpec) string { return c.Nameserver })))
		}},
	{param: param{key: "searchdomain", path: "spec.cloudInit.searchDomain", takes: takesCloudInit, same: SameSpaced},
		want: func(gs *GuestSpec) (string, bool) {
			return ciStr(gs, Spaced(ciField(gs, func(c *CloudInitSpec) string { return c.Searchdomain })))
		}},
	{param: param{key: "ciupgrade", path: "spec.cloudInit.upgrade", def: "1", takes: takesCloudInit, same: SameBool},
		want: func(gs *GuestSpec) (string, bool) {
			if gs.CloudInit == nil {
				return "", false
			}
			return boolPtr(gs.CloudInit.Upgrade)
		}},
	{param: param{path: "spec.cloudInit.ipConfigs"}, each: vmIPConfigs},
	// An ISO as cdrom: a new IDE drive waits for a restart, a change of
	// medium is live.
	{param: param{key: CdromSlot, path: "spec.iso", takes: takesNewDrive,
		same: func(h, w string) bool { return h != "" && ParseDisk(h).File == ParseDisk(w).File }},
		want: func(gs *GuestSpec) (string, bool) {
			if gs.ISOVolume == "" {
				return "", false
			}
			return gs.ISOVolume + ",media=cdrom", true
		}},
	{param: param{key: CdromSlot, path: "spec.userData"}, each: vmCidata},
	{param: param{key: "boot"}, each: vmBoot},
}

func orEmpty(v, shown string) string {
	if v == "" {
		return ""
	}
	return shown
}

func ciField(gs *GuestSpec, f func(*CloudInitSpec) string) string {
	if gs.CloudInit == nil {
		return ""
	}
	return f(gs.CloudInit)
}

func ciStr(gs *GuestSpec, v string) (string, bool) {
	if gs.CloudInit == nil {
		return "", false
	}
	return str(v)
}

func decodeKeys(v string) []string { return NormalKeys(pve.DecodeSSHKeys(v)) }

// vmNICs: one net[n] per declared NIC; a change keeps the MAC and the keys
// the manifest does not declare.
func vmNICs(gs *GuestSpec, _ *fieldCtx) []param {
	var out []param
	for i, n := range gs.NICs {
		out = append(out, param{key: n.Slot, path: fmt.Sprintf("spec.net[%d]", i), want: nicValue(n, nil),
			takes: takesHotplug, hotplug: "network", parts: func(have string) []vocab.Change { return nicParts(n, ParseNIC(have)) },
			update: func(_, have string) string { p := ParseNIC(have); return nicValue(n, &p) }})
	}
	return out
}

// nicParts lists the declared keys of a NIC that differ from p.
func nicParts(n NICSpec, p NIC) []vocab.Change {
	var out []vocab.Change
	cmp := func(k, want string, declared bool, same func(a, b string) bool) {
		if have := p.Get(k); declared && !same(have, want) {
			out = append(out, vocab.Change{Field: n.Slot + "." + k, From: have, To: want})
		}
	}
	eq := func(a, b string) bool { return a == b }
	if n.Model != "" && n.Model != p.Model {
		out = append(out, vocab.Change{Field: n.Slot + ".model", From: p.Model, To: n.Model})
	}
	cmp("bridge", n.Bridge, n.Bridge != "", eq)
	if n.Tag != nil {
		want := ""
		if *n.Tag > 0 {
			want = strconv.Itoa(*n.Tag)
		}
		cmp("tag", want, true, eq)
	}
	if n.Firewall != nil {
		cmp("firewall", FormatBool(*n.Firewall), true, SameBool)
	}
	if n.MAC != "" && !strings.EqualFold(n.MAC, p.MAC) {
		out = append(out, vocab.Change{Field: n.Slot + ".macaddr", From: p.MAC, To: strings.ToUpper(n.MAC)})
	}
	if n.MTU != nil {
		cmp("mtu", strconv.Itoa(*n.MTU), true, eq)
	}
	cmp("rate", n.Rate, n.Rate != "", eq)
	for _, k := range slices.Sorted(maps.Keys(n.Extra)) {
		cmp(k, n.Extra[k], true, eq)
	}
	return out
}

// vmDisks: one slot per declared disk; the first is the import target of a
// cloud image at create.
func vmDisks(gs *GuestSpec, fx *fieldCtx) []param {
	var out []param
	for i, disk := range resolveDiskSlots(gs.Disks, fx.eff) {
		size := max(gibCeil(disk.Size), 1)
		opts := diskOptions(disk.Options)
		if disk.Format != "" {
			// format= picks the image format vdisk_alloc allocates in
			// (qemu-server API2/Qemu.pm create_disks); Proxmox drops it
			// from the config, the volume name keeps it as extension.
			opts = ",format=" + disk.Format + opts
		}
		p := param{key: disk.Slot, path: fmt.Sprintf("spec.disks[%d]", i), async: true, takes: takesHotplug, hotplug: "disk",
			want: fmt.Sprintf("%s:%d%s", disk.Storage, size, opts),
			to:   fmt.Sprintf("%s:%s", disk.Storage, FormatSize(size*GiB))}
		if bus := strings.TrimRight(disk.Slot, "0123456789"); bus == "ide" || bus == "sata" {
			p.takes = takesReboot
		}
		if i == 0 && fx.importFrom != "" {
			// The image's size, grown to the declared one right after.
			p.want = fmt.Sprintf("%s:0,import-from=%s%s", disk.Storage, fx.importFrom, opts)
			p.to = disk.Storage
			if disk.Size > 0 {
				p.to += ":" + FormatSize(disk.Size)
			}
		}
		p.diff = func(have string, x *diffCtx, d *Diff) { diffDisk(disk, p.path, have, x, d) }
		out = append(out, p)
	}
	return out
}

// diffDisk grows an existing disk, refuses to shrink it and sets the
// declared options.
func diffDisk(disk DiskSpec, path, have string, x *diffCtx, d *Diff) {
	pd := ParseDisk(have)
	if disk.Size > 0 && pd.Size > 0 {
		switch {
		case pd.Size < disk.Size:
			d.Resizes = append(d.Resizes, Resize{Slot: disk.Slot, Path: path + ".size", From: pd.Size, To: disk.Size})
		case pd.Size > disk.Size:
			d.RefuseShrink(disk.Slot, "disk "+disk.Slot, pd.Size, disk.Size, "shrinking disks is not supported")
		}
	}
	if st := StorageOf(pd.File); disk.Storage != "" && st != "" && st != disk.Storage {
		// Where a disk lives is chosen at its allocation; proxmops never
		// moves a disk, so only an adoption says so.
		d.AsIs = append(d.AsIs, fmt.Sprintf("disk %s is on %s, the manifest says %s (accepted as it is, never moved)", disk.Slot, st, disk.Storage))
	}
	if have := VolumeFormat(pd.File); disk.Format != "" && strings.Contains(pd.File, "-disk-") && have != disk.Format {
		// The format is fixed at allocation: reported, never applied.
		d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: disk.Slot + ".format", Path: path + ".format", From: have, To: disk.Format})
	}
	ps := pd.Props
	var parts []vocab.Change
	for _, k := range slices.Sorted(maps.Keys(disk.Options)) {
		if ps.Values[k] != disk.Options[k] {
			parts = append(parts, vocab.Change{Field: disk.Slot + "." + k, From: ps.Values[k], To: disk.Options[k]})
			ps.Set(k, disk.Options[k])
		}
	}
	p := &param{key: disk.Slot, path: path, want: ps.String("file"), takes: takesReboot}
	x.setParts(p, parts, have, d)
}

// vmCloudInitDrive adds Proxmox's cloud-init drive when the VM has none:
// on the declared storage, else the first disk's, else (a clone declaring
// no disk) its boot disk's.
func vmCloudInitDrive(gs *GuestSpec, fx *fieldCtx) []param {
	if gs.CloudInit == nil {
		return nil
	}
	for k, v := range fx.eff {
		if IsDiskKey(k) && ParseDisk(v).IsCloudInit() {
			return nil
		}
	}
	stor := gs.CloudInit.Storage
	if disks := resolveDiskSlots(gs.Disks, fx.eff); stor == "" && len(disks) > 0 {
		stor = disks[0].Storage
	}
	if boot := BootDiskSlot(fx.eff); stor == "" && boot != "" {
		stor = StorageOf(ParseDisk(fx.eff[boot]).File)
	}
	if stor == "" {
		return nil
	}
	return []param{{key: CloudInitSlot, label: "cloudinit drive", path: "spec.cloudInit", want: stor + ":cloudinit",
		to: CloudInitSlot + " on " + stor, async: true, same: func(string, string) bool { return false }}}
}

func vmIPConfigs(gs *GuestSpec, _ *fieldCtx) []param {
	if gs.CloudInit == nil {
		return nil
	}
	var out []param
	for _, slot := range slices.Sorted(maps.Keys(gs.CloudInit.IPConfigs)) {
		out = append(out, param{key: "ipconfig" + strings.TrimPrefix(slot, "net"), path: "spec.cloudInit.ipConfigs", want: gs.CloudInit.IPConfigs[slot],
			takes: takesCloudInit, same: func(h, w string) bool { return NormalIPConfig(h) == NormalIPConfig(w) }})
	}
	return out
}

// vmCidata: the userData seed, uploaded and attached by the first converge
// after the create (its file name carries the VMID).
func vmCidata(gs *GuestSpec, fx *fieldCtx) []param {
	if gs.UserData == "" || gs.CidataStorage == "" {
		return nil
	}
	want := gs.CidataVolume(fx.vmid)
	slot, have := CdromSlot, ""
	for k, v := range fx.eff {
		if pd := ParseDisk(v); IsDiskKey(k) && pd.IsCdrom() && strings.Contains(pd.File, "proxmops-cidata-") {
			slot, have = k, pd.File
		}
	}
	check := func(_ string, _ *diffCtx, d *Diff) {
		if have != want {
			d.Cidata = &CidataChange{Slot: slot, OldVolume: have, NewVolume: want}
		}
	}
	return []param{{key: slot, label: "userData", path: "spec.userData", want: want, to: "seed " + gs.Seed().Hash(), noParam: true,
		add: func(x *diffCtx, d *Diff) bool { check("", x, d); return true }, diff: check}}
}

// vmBoot: the boot order follows the first disk and the cdrom; it is sent
// alone after the drives it names.
func vmBoot(gs *GuestSpec, fx *fieldCtx) []param {
	order := wantBootOrder(gs, fx.eff)
	if len(order) == 0 {
		return nil
	}
	p := param{key: "boot", want: FormatBootOrder(order), takes: takesReboot, last: true}
	check := func(_ string, x *diffCtx, d *Diff) {
		if BootDrift(order, x.eff) {
			d.Config = append(d.Config, x.change(&p, BootDisplay(x.eff), p.want, true))
		}
	}
	p.diff = check
	p.add = func(x *diffCtx, d *Diff) bool { check("", x, d); return true }
	return []param{p}
}

// wantBootOrder lists the devices the guest must boot from, in order: its
// boot disk, then the declared ISO's drive. cfg is the guest's effective
// configuration (nil before it exists). Nil means the order is not managed.
func wantBootOrder(gs *GuestSpec, cfg map[string]string) []string {
	var out []string
	if disks := resolveDiskSlots(gs.Disks, cfg); len(disks) > 0 {
		out = append(out, disks[0].Slot)
	} else if cfg != nil {
		if slot := BootDiskSlot(cfg); slot != "" {
			out = append(out, slot)
		}
	}
	if gs.ISOVolume != "" {
		out = append(out, CdromSlot)
	}
	return out
}

// resolveDiskSlots fills in the slot of a first disk declared without one
// (the boot disk of whatever the guest already has, else scsi0).
func resolveDiskSlots(disks []DiskSpec, cfg map[string]string) []DiskSpec {
	out := append([]DiskSpec(nil), disks...)
	if len(out) > 0 && out[0].Slot == "" {
		slot := ""
		if cfg != nil {
			slot = BootDiskSlot(cfg)
		}
		if slot == "" {
			slot = "scsi0"
		}
		out[0].Slot = slot
	}
	used := map[string]bool{}
	for _, d := range out {
		used[d.Slot] = true
	}
	next := 1
	for i := range out {
		if out[i].Slot != "" {
			continue
		}
		for used["scsi"+strconv.Itoa(next)] || cfg != nil && cfg["scsi"+strconv.Itoa(next)] != "" && !declaredSlot(disks, "scsi"+strconv.Itoa(next)) {
			next++
		}
		out[i].Slot = "scsi" + strconv.Itoa(next)
		used[out[i].Slot] = true
	}
	return out
}

func declaredSlot(disks []DiskSpec, slot string) bool {
	for _, d := range disks {
		if d.Slot == slot {
			return true
		}
	}
	return false
}

// nicValue renders a NIC for a create or a change, keeping the MAC of an
// existing one unless a MAC is declared.
func nicValue(n NICSpec, existing *NIC) string {
	model := n.Model
	if model == "" {
		model = "virtio"
		if existing != nil && existing.Model != "" {
			model = existing.Model
		}
	}
	mac := n.MAC
	if mac == "" && existing != nil {
		mac = existing.MAC
	}
	first := model
	if mac != "" {
		first = model + "=" + strings.ToUpper(mac)
	}
	props := pve.PropertyString{}
	if existing != nil {
		for _, k := range existing.Props.Keys {
			if IsNICModel(k) || k == "model" || k == "macaddr" {
				continue
			}
			props.Set(k, existing.Props.Values[k])
		}
	}
	if n.Bridge != "" {
		props.Set("bridge", n.Bridge)
	}
	if n.Tag != nil {
		if *n.Tag > 0 {
			props.Set("tag", strconv.Itoa(*n.Tag))
		} else {
			props.Del("tag")
		}
	}
	if n.Firewall != nil {
		// firewall=0 is Proxmox's default: write the key only to turn it on.
		if *n.Firewall {
			props.Set("firewall", "1")
		} else {
			props.Del("firewall")
		}
	}
	if n.MTU != nil {
		props.Set("mtu", strconv.Itoa(*n.MTU))
	}
	if n.Rate != "" {
		props.Set("rate", n.Rate)
	}
	for _, k := range slices.Sorted(maps.Keys(n.Extra)) {
		props.Set(k, n.Extra[k])
	}
	rest := props.String("")
	if rest == "" {
		return first
	}
	return first + "," + rest
}

// diskOptions renders extra property-string keys in a stable order.
func diskOptions(opts map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(opts)) {
		b.WriteString("," + k + "=" + opts[k])
	}
	return b.String()
}

// gibCeil is a size in whole GiB, rounded up (new disks are allocated in GiB).
func gibCeil(b int64) int64 {
	return (b + GiB - 1) / GiB
}

// DiffQemu compares gs with a VM's or a Template's effective
// configuration, row by row of qemuFields.
func DiffQemu(gs *GuestSpec, o Observed) *Diff {
	d := &Diff{managed: map[string]*param{}}
	x := &diffCtx{eff: o.Effective, hp: hotplug(o.Effective), gate: true}
	diffTable(qemuFields, gs, o.fieldCtx(), x, d)
	d.Pending = pendingOf(&o, d)
	return d
}

// QemuCreateParams renders gs into the parameters of POST /qemu, from
// qemuFields. importFrom is the boot disk's import source ("" for a blank
// boot disk).
func QemuCreateParams(gs *GuestSpec, vmid int, importFrom string, p *pve.Params) {
	createParamsOf(params(qemuFields, gs, &fieldCtx{vmid: vmid, importFrom: importFrom}), p)
}

// QemuPreview lists gs's declared fields for the preview of its create.
func QemuPreview(gs *GuestSpec, importFrom string) []vocab.Change {
	return previewOf(params(qemuFields, gs, &fieldCtx{vmid: gs.VMID, importFrom: importFrom}))
}
