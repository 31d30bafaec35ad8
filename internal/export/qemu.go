package export

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// qemuExport is the manifest of one VM or template being read.
type qemuExport struct {
	guestRead
	es    *cluster
	g     *engine.Guest
	names map[int]string
	spec  manifest.VirtualMachineSpec
}

// qemuReaders read one row of pvefields' qemuFields each, by the row's manifest path
// (its Proxmox key when it has none).
var qemuReaders = map[string]func(x *qemuExport){
	// The manifest's name is the guest's own: guestNames refuses a guest
	// whose name a manifest would change.
	"metadata.name": func(*qemuExport) {},
	"spec.cores":    func(x *qemuExport) { x.spec.Cores = x.int("cores") },
	"spec.sockets":  func(x *qemuExport) { x.spec.Sockets = x.int("sockets") },
	"spec.memory": func(x *qemuExport) {
		if v, ok := present(x.eff, "memory"); ok {
			x.spec.Memory, _ = atoiOK(pvefields.PropertyPart("current")(v))
		}
	},
	"spec.cpu": func(x *qemuExport) {
		if v, ok := present(x.eff, "cpu"); ok {
			x.spec.CPU = pvefields.PropertyPart("cputype")(v)
		}
	},
	"metadata.tags":    func(x *qemuExport) { x.meta.Tags = exportTags(x.eff["tags"]) },
	"spec.description": func(x *qemuExport) { x.spec.Description = pvefields.TrimDescription(x.eff["description"]) },
	"spec.onboot":      func(x *qemuExport) { x.spec.OnBoot = x.flag("onboot") },
	"spec.startup":     func(x *qemuExport) { x.spec.Startup = x.startup() },
	"spec.balloon":     func(x *qemuExport) { x.spec.Balloon = x.intP("balloon") },
	"spec.ostype":      func(x *qemuExport) { x.spec.OSType = x.eff["ostype"] },
	"spec.bios":        func(x *qemuExport) { x.spec.BIOS = x.eff["bios"] },
	"spec.machine":     func(x *qemuExport) { x.spec.Machine = x.eff["machine"] },
	"spec.scsihw":      func(x *qemuExport) { x.spec.SCSIHW = x.eff["scsihw"] },
	"spec.agent": func(x *qemuExport) {
		if v, ok := present(x.eff, "agent"); ok {
			x.spec.Agent = boolP(pvefields.ParseBool(pvefields.PropertyPart("enabled")(v)))
		}
	},
	"spec.net":       (*qemuExport).nics,
	"spec.disks":     (*qemuExport).disks,
	"spec.cloudInit": (*qemuExport).cloudInitDrive,
	"spec.cloudInit.user": func(x *qemuExport) {
		if x.spec.CloudInit != nil {
			x.spec.CloudInit.User = x.eff["ciuser"]
		}
	},
	// Never the value (Proxmox reads it back as asterisks anyway): a
	// reference for the user to fill in.
	"spec.cloudInit.passwordFrom": func(x *qemuExport) {
		if x.spec.CloudInit != nil && x.eff["cipassword"] != "" {
			x.comments["spec.cloudInit"] = "cipassword is set on the guest; to manage it, add passwordFrom: {env: NAME} or {file: PATH}"
		}
	},
	"spec.cloudInit.sshKeys": func(x *qemuExport) {
		if x.spec.CloudInit != nil {
			x.spec.CloudInit.SSHKeys = pve.DecodeSSHKeys(x.eff["sshkeys"])
		}
	},
	"spec.cloudInit.nameserver": func(x *qemuExport) {
		if x.spec.CloudInit != nil {
			x.spec.CloudInit.Nameserver = pvefields.Spaced(x.eff["nameserver"])
		}
	},
	"spec.cloudInit.searchDomain": func(x *qemuExport) {
		if x.spec.CloudInit != nil {
			x.spec.CloudInit.SearchDomain = pvefields.Spaced(x.eff["searchdomain"])
		}
	},
	"spec.cloudInit.upgrade": func(x *qemuExport) {
		if v, ok := present(x.eff, "ciupgrade"); ok && x.spec.CloudInit != nil {
			x.spec.CloudInit.Upgrade = boolP(pvefields.ParseBool(v))
		}
	},
	"spec.cloudInit.ipConfigs": (*qemuExport).ipConfigs,
	"spec.iso":                 (*qemuExport).iso,
	// The userData seed is proxmops' own upload: a hand-made guest has none.
	"spec.userData": func(x *qemuExport) {
		for _, k := range slices.Sorted(maps.Keys(x.eff)) {
			if pd := pvefields.ParseDisk(x.eff[k]); pvefields.IsDiskKey(k) && pd.IsCdrom() && strings.Contains(pd.File, "proxmops-cidata-") {
				x.note("%s holds a proxmops userData seed (%s): its user-data is not on the cluster, add spec.userData yourself", k, pd.File)
			}
		}
	},
	// The boot order follows the first disk, exported first (disks).
	"boot": func(*qemuExport) {},
}

// exportQemu reads a VM or a template row by row.
func (es *cluster) exportQemu(g *engine.Guest, names map[int]string) Exported {
	x := &qemuExport{guestRead: guestRead{eff: g.Effective, meta: guestMeta(g, names[g.VMID]), comments: map[string]string{}}, es: es, g: g, names: names}
	x.spec.VMID, x.spec.Pool, x.spec.Firewall = g.VMID, g.Pool, engine.GuestFirewallManifest(g.Firewall)
	readRows(engine.KindVirtualMachine, qemuReaders, x)
	if x.spec.CloudInit != nil && len(x.spec.CloudInit.IPConfigs) == 0 {
		x.spec.CloudInit.IPConfigs = nil
	}
	if len(g.Pending) > 0 || len(g.PendingDelete) > 0 {
		x.note("the guest has pending changes (waiting for a reboot): exported as they will be after it")
	}
	obj := manifest.Object{Metadata: x.meta}
	if g.Template {
		return x.exported(manifest.KindTemplate, &manifest.Template{Object: obj, Spec: x.templateSpec()})
	}
	x.source()
	if !g.Running() {
		x.spec.State = manifest.StateStopped
	}
	return x.exported(manifest.KindVirtualMachine, &manifest.VirtualMachine{Object: obj, Spec: x.spec})
}

// templateSpec keeps what a Template declares; its image is its boot
// disk's volume (creation-only: a template is never rebuilt by adoption).
func (x *qemuExport) templateSpec() manifest.TemplateSpec {
	s := x.spec
	t := manifest.TemplateSpec{VMID: s.VMID, QemuHardware: s.QemuHardware, Description: s.Description, Agent: s.Agent,
		Disks: s.Disks, Net: s.Net, CloudInit: s.CloudInit}
	if boot := pvefields.BootDiskSlot(x.eff); boot != "" {
		t.Image = &manifest.Image{Source: pvefields.ParseDisk(x.eff[boot]).File}
	}
	if t.Image == nil || !strings.Contains(t.Image.Source, ":") {
		t.Image = &manifest.Image{Source: "local:import/unknown.qcow2"}
		x.note("the template has no disk proxmops can name: image.source is a placeholder, used only if the template is ever built again")
	}
	for _, f := range []struct {
		set  bool
		name string
	}{{s.OnBoot != nil, "onboot"}, {s.Startup != nil, "startup"}, {s.Balloon != nil, "balloon"}, {s.ISO != "", "iso"}} {
		if f.set {
			x.note("%s is set on the template but a Template does not declare it: left out", f.name)
		}
	}
	return t
}

// baseVolume finds the base image a linked clone's disk stands on, as
// the storage plugins name such a volume (clone_image): on file storages
// BASEVMID/BASENAME/VMID/NAME (local:9000/base-9000-disk-0.qcow2/130/...),
// on ZFS and Ceph BASENAME/NAME (local-zfs:base-9000-disk-0/vm-130-disk-0).
// LVM-thin names a linked clone vm-130-disk-0 alone: it cannot be told.
var baseVolume = regexp.MustCompile(`^([^:]+:(?:[0-9]+/)?base-([0-9]+)-disk-[0-9]+(?:\.[a-z0-9]+)?)/`)

// source names where the VM came from: a linked clone's template when its
// base image belongs to a template on the cluster, else the base image.
func (x *qemuExport) source() {
	boot := pvefields.BootDiskSlot(x.eff)
	if boot == "" {
		return
	}
	m := baseVolume.FindStringSubmatch(pvefields.ParseDisk(x.eff[boot]).File)
	if m == nil {
		return // not a linked clone that says so: a VM of its own
	}
	id, _ := strconv.Atoi(m[2])
	t := x.es.Guests[id]
	if t != nil && t.Type == "qemu" && t.Template && x.names[id] != "" {
		x.spec.FromTemplate = &manifest.FromTemplate{Name: x.names[id], Linked: true}
		return
	}
	x.spec.Image = &manifest.Image{Source: m[1]}
	if t != nil && t.Type == "qemu" && t.Template {
		x.note("linked clone of template %d, whose name no manifest can keep (it is not exported): image.source is its base volume %s", id, m[1])
		return
	}
	x.note("linked clone of %s, which belongs to no template on the cluster: image.source is that volume", m[1])
}

// diskSlotOK says whether the manifest can declare a disk in slot.
var diskSlotOK = regexp.MustCompile(`^(scsi([0-9]|[12][0-9]|30)|virtio([0-9]|1[0-5])|sata[0-5])$`)

// disks reads the data disks by slot, the boot disk first (the boot order
// follows the first declared disk).
func (x *qemuExport) disks() {
	var slots []string
	for _, k := range slices.Sorted(maps.Keys(x.eff)) {
		if !pvefields.IsDiskKey(k) || strings.HasPrefix(k, "efidisk") || strings.HasPrefix(k, "tpmstate") {
			continue
		}
		if pd := pvefields.ParseDisk(x.eff[k]); pd.IsCdrom() || pd.IsCloudInit() || pd.File == "none" {
			continue
		}
		slots = append(slots, k)
	}
	if boot := pvefields.BootDiskSlot(x.eff); boot != "" {
		if i := slices.Index(slots, boot); i > 0 {
			slots = append([]string{boot}, slices.Delete(slots, i, i+1)...)
		}
	}
	for _, k := range slots {
		pd := pvefields.ParseDisk(x.eff[k])
		if !diskSlotOK.MatchString(k) {
			x.note("disk %s (%s) is in a slot a manifest cannot declare: left out, and left alone", k, pd.File)
			continue
		}
		stor := pvefields.StorageOf(pd.File)
		if stor == "" || !strings.Contains(pd.File, ":") {
			x.note("disk %s is not a storage volume (%s): left out, and left alone", k, pd.File)
			continue
		}
		d := manifest.Disk{Slot: k, Storage: stor}
		if s, ok := sizeOf(pd.Size); ok {
			d.Size = s
		}
		if f := pvefields.VolumeFormat(pd.File); strings.Contains(pd.File, ".") && f != "subvol" {
			d.Format = f
		}
		ps := pd.Props
		d.Cache = ps.Values["cache"]
		d.Discard = ps.Values["discard"] == "on"
		d.SSD = ps.Values["ssd"] == "1"
		d.IOThread = ps.Values["iothread"] == "1"
		if b, ok := ps.Values["backup"]; ok && (b == "0" || b == "1") {
			d.Backup = boolP(b == "1")
		}
		for _, o := range []string{"ssd", "iothread"} {
			if v, ok := ps.Values[o]; ok && v != "0" && v != "1" {
				x.note("disk %s has %s=%s: left out (the manifest writes 1)", k, o, v)
			}
		}
		x.spec.Disks = append(x.spec.Disks, d)
	}
}

// nics reads the network devices by slot.
func (x *qemuExport) nics() {
	nets, ns := x.slots("net")
	for i, k := range nets {
		if ns[i] > 31 {
			continue
		}
		p := pvefields.ParseNIC(x.eff[k])
		if p.Props.Values["bridge"] == "" || !pvefields.IsNICModel(p.Model) {
			x.note("%s (%s) has no bridge or an unknown model: the manifest cannot declare it, and the plan deletes an undeclared NIC: declare it by hand", k, x.eff[k])
			continue
		}
		nic := manifest.NIC{Slot: k, Bridge: p.Props.Values["bridge"], Model: p.Model, MACAddr: strings.ToUpper(p.MAC),
			Firewall: pvefields.ParseBool(p.Props.Values["firewall"]), LinkDown: pvefields.ParseBool(p.Props.Values["link_down"])}
		nic.Tag, _ = atoiOK(p.Props.Values["tag"])
		nic.MTU, _ = atoiOK(p.Props.Values["mtu"])
		nic.Queues, _ = atoiOK(p.Props.Values["queues"])
		if r := p.Props.Values["rate"]; r != "" {
			nic.Rate, _ = strconv.ParseFloat(r, 64)
		}
		x.spec.Net = append(x.spec.Net, nic)
	}
}

// cloudInitDrive declares cloudInit when the VM has Proxmox's cloud-init
// drive (declaring it without one would add a drive).
func (x *qemuExport) cloudInitDrive() {
	for k, v := range x.eff {
		if pvefields.IsDiskKey(k) && pvefields.ParseDisk(v).IsCloudInit() {
			x.spec.CloudInit = &manifest.CloudInit{}
			return
		}
	}
	for _, k := range []string{"ciuser", "sshkeys", "ipconfig0", "nameserver", "searchdomain"} {
		if x.eff[k] != "" {
			x.note("cloud-init settings without a cloud-init drive: left out")
			return
		}
	}
}

func (x *qemuExport) ipConfigs() {
	if x.spec.CloudInit == nil {
		return
	}
	ipconfigs, _ := x.slots("ipconfig")
	for _, k := range ipconfigs {
		ic, err := manifest.ParseIPShorthand(x.eff[k])
		if err != nil {
			x.note("%s %q: %v: left out", k, x.eff[k], err)
			continue
		}
		ic.Slot = "net" + strings.TrimPrefix(k, "ipconfig")
		x.spec.CloudInit.IPConfigs = append(x.spec.CloudInit.IPConfigs, ic)
	}
}

// iso declares the ISO in proxmops' cdrom slot; one elsewhere is noted
// (declaring it would add a second drive).
func (x *qemuExport) iso() {
	for _, k := range slices.Sorted(maps.Keys(x.eff)) {
		pd := pvefields.ParseDisk(x.eff[k])
		if !pvefields.IsDiskKey(k) || !pd.IsCdrom() || pd.IsCloudInit() || pd.File == "none" || pd.File == "cdrom" || strings.Contains(pd.File, "proxmops-cidata-") {
			continue
		}
		if k == pvefields.CdromSlot && strings.Contains(pd.File, ":iso/") {
			x.spec.ISO = pd.File
			continue
		}
		x.note("%s holds %s: proxmops declares an ISO on %s only, left out", k, pd.File, pvefields.CdromSlot)
	}
}
