package engine

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/cloudinit"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Slots for the drives proxmops adds itself.
const (
	cloudInitSlot = "ide2" // Proxmox's cloud-init drive
	cdromSlot     = "ide0" // an ISO or the userData CIDATA seed
)

// guestSpec is the configuration VirtualMachine and Template share.
type guestSpec struct {
	kind, name string
	vmid       int
	node       string
	tags       []string
	cores      int
	sockets    int
	memory     int
	cpu        string
	desc       string
	onboot     *bool
	startup    string
	agent      *bool
	balloon    *int
	ostype     string
	bios       string
	machine    string
	scsihw     string
	disks      []DiskSpec
	nics       []NICSpec
	ci         *CloudInitSpec
	userData   string
	isoVolume  string // volume id attached as cdrom
	cidataStor string // storage for the CIDATA seed
}

func (gs *guestSpec) wantTags() []string {
	return normalTags(append(append([]string(nil), gs.tags...), OwnerTag))
}

func (gs *guestSpec) seed() cloudinit.Seed {
	return cloudinit.Seed{UserData: gs.userData, Hostname: gs.name}
}

// cidataVolume is the volume id the CIDATA seed gets for vmid.
func (gs *guestSpec) cidataVolume(vmid int) string {
	return gs.cidataStor + ":iso/" + cloudinit.FileName(vmid, gs.seed())
}

// configChange is one key to set or delete.
type configChange struct {
	vocab.Change
	key    string
	value  string
	del    bool
	reboot bool // waits for a reboot on a running VM
	async  bool // allocates a volume: POST .../config
	last   bool // sent alone after every other change (the boot order names devices they add)
	ci     bool // cloud-init: the guest sees it at its next boot
}

type resize struct {
	slot     string
	from, to int64
}

// guestDiff is everything that differs between a guestSpec and a guest.
type guestDiff struct {
	config  []configChange
	resizes []resize
	refused []string
	pending []vocab.Change // managed keys whose desired value already waits for a reboot
	cidata  *cidataChange
	managed map[string]bool
}

type cidataChange struct {
	slot, oldVolume, newVolume string
}

func (d *guestDiff) empty() bool {
	return len(d.config) == 0 && len(d.resizes) == 0 && len(d.refused) == 0 && d.cidata == nil
}

// changes lists the field changes for display.
func (d *guestDiff) changes() []vocab.Change {
	var out []vocab.Change
	for _, c := range d.config {
		out = append(out, c.Change)
	}
	for _, r := range d.resizes {
		out = append(out, vocab.Change{Field: r.slot + ".size", From: FormatSize(r.from), To: FormatSize(r.to)})
	}
	if d.cidata != nil {
		out = append(out, vocab.Change{Field: "userData", From: cidataHash(d.cidata.oldVolume), To: cidataHash(d.cidata.newVolume)})
	}
	return out
}

func cidataHash(volid string) string {
	if volid == "" {
		return ""
	}
	_, file, _ := strings.Cut(volid, "/")
	if _, h, ok := cloudinit.ParseFileName(file); ok {
		return "seed " + h
	}
	return volid
}

// needsReboot reports whether a running guest must reboot for the diff (and
// already pending changes) to take effect.
func (d *guestDiff) needsReboot() bool {
	if len(d.pending) > 0 || d.cidata != nil {
		return true
	}
	for _, c := range d.config {
		if c.reboot || c.ci {
			return true
		}
	}
	return false
}

// hotplug reads the VM's hotplug setting.
func hotplug(cfg map[string]string) map[string]bool {
	v, ok := cfg["hotplug"]
	if !ok {
		v = "network,disk,usb"
	}
	switch v {
	case "0":
		return map[string]bool{}
	case "1":
		v = "network,disk,usb"
	}
	out := map[string]bool{}
	for _, p := range strings.Split(v, ",") {
		out[strings.TrimSpace(p)] = true
	}
	return out
}

// bootDiskSlot finds the boot disk of a configuration: the first disk of the
// boot order, else the first non-cdrom disk.
func bootDiskSlot(cfg map[string]string) string {
	if b, ok := cfg["boot"]; ok {
		ps := pve.ParsePropertyString(b, "legacy")
		for _, dev := range strings.Split(ps.Values["order"], ";") {
			dev = strings.TrimSpace(dev)
			if isDiskKey(dev) {
				if v, ok := cfg[dev]; ok && !parseDisk(v).isCdrom() {
					return dev
				}
			}
		}
	}
	var keys []string
	for k, v := range cfg {
		if isDiskKey(k) && !strings.HasPrefix(k, "efidisk") && !strings.HasPrefix(k, "tpmstate") {
			if d := parseDisk(v); !d.isCdrom() && !d.isCloudInit() {
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool { return busPreference.less(keys[i], keys[j]) })
	if len(keys) > 0 {
		return keys[0]
	}
	return ""
}

// slotOrder ranks drive slots by bus, in the order listed, then by index.
type slotOrder []string

var (
	// busPreference is how proxmops orders the drives it lists.
	busPreference = slotOrder{"scsi", "virtio", "sata", "ide"}
	// legacyBootWalk is Proxmox's drive walk for legacy boot letters.
	legacyBootWalk = slotOrder{"ide", "scsi", "virtio", "sata"}
)

func (o slotOrder) less(a, b string) bool {
	rank := func(s string) (int, int) {
		for i, p := range o {
			if rest, ok := strings.CutPrefix(s, p); ok {
				n, _ := strconv.Atoi(rest)
				return i, n
			}
		}
		return len(o), 0
	}
	ra, na := rank(a)
	rb, nb := rank(b)
	if ra != rb {
		return ra < rb
	}
	return na < nb
}

// resolveDiskSlots fills in the slot of a first disk declared without one
// (the boot disk of whatever the guest already has, else scsi0).
func resolveDiskSlots(disks []DiskSpec, cfg map[string]string) []DiskSpec {
	out := append([]DiskSpec(nil), disks...)
	if len(out) > 0 && out[0].Slot == "" {
		slot := ""
		if cfg != nil {
			slot = bootDiskSlot(cfg)
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
func nicValue(n NICSpec, existing *parsedNIC) string {
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
		for _, k := range existing.props.Keys {
			if nicModels[k] || k == "model" || k == "macaddr" {
				continue
			}
			props.Set(k, existing.props.Values[k])
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
	for _, k := range sortedKeys(n.Extra) {
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
	keys := make([]string, 0, len(opts))
	for k := range opts {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString("," + k + "=" + opts[k])
	}
	return b.String()
}

// gibCeil is a size in whole GiB, rounded up (new disks are allocated in GiB).
func gibCeil(b int64) int64 {
	return (b + gib - 1) / gib
}

// diffGuest compares gs with the guest's effective configuration.
func diffGuest(gs *guestSpec, g *Guest) *guestDiff {
	eff, cur := g.Effective, g.Current
	hp := hotplug(eff)
	d := &guestDiff{managed: map[string]bool{}}
	set := func(c configChange) { d.config = append(d.config, c) }
	scalar := func(key, want string, reboot bool, same func(string, bool) bool) {
		d.managed[key] = true
		have, ok := eff[key]
		if same == nil {
			same = func(v string, ok bool) bool { return ok && v == want }
		}
		if !same(have, ok) {
			set(configChange{Change: vocab.Change{Field: key, From: have, To: want}, key: key, value: want, reboot: reboot})
		}
	}
	withDefault := func(def string, want string) func(string, bool) bool {
		return func(v string, ok bool) bool {
			if !ok {
				v = def
			}
			return v == want
		}
	}

	scalar("name", gs.name, false, nil)
	if gs.cores > 0 {
		scalar("cores", strconv.Itoa(gs.cores), true, withDefault("1", strconv.Itoa(gs.cores)))
	}
	if gs.sockets > 0 {
		scalar("sockets", strconv.Itoa(gs.sockets), true, withDefault("1", strconv.Itoa(gs.sockets)))
	}
	if gs.memory > 0 {
		want := strconv.Itoa(gs.memory)
		d.managed["memory"] = true
		have, ok := eff["memory"]
		haveMiB := "512"
		if ok {
			haveMiB = pve.ParsePropertyString(have, "current").Values["current"]
		}
		if haveMiB != want {
			set(configChange{Change: vocab.Change{Field: "memory", From: haveMiB, To: want}, key: "memory", value: want, reboot: !hp["memory"]})
		}
	}
	if gs.cpu != "" {
		d.managed["cpu"] = true
		have, ok := eff["cpu"]
		ps := pve.ParsePropertyString(have, "cputype")
		haveType := ps.Values["cputype"]
		if !ok {
			// CPUConfig.pm get_default_cpu_type: no cpu key runs kvm64
			// (x86-64-v2-AES is only what the web UI preselects).
			haveType = "kvm64"
		}
		if haveType != gs.cpu {
			ps.Set("cputype", gs.cpu)
			set(configChange{Change: vocab.Change{Field: "cpu", From: haveType, To: gs.cpu}, key: "cpu", value: ps.String("cputype"), reboot: true})
		}
	}
	{
		want := gs.wantTags()
		have := normalTags(pve.SplitTags(eff["tags"]))
		d.managed["tags"] = true
		if !sameStrings(want, have) {
			set(configChange{Change: vocab.Change{Field: "tags", From: strings.Join(have, ";"), To: strings.Join(want, ";")}, key: "tags", value: strings.Join(want, ";")})
		}
	}
	if gs.desc != "" {
		d.managed["description"] = true
		have := strings.TrimRight(eff["description"], " \n\r\t")
		want := strings.TrimRight(gs.desc, " \n\r\t")
		if have != want {
			set(configChange{Change: vocab.Change{Field: "description", From: abbreviate(have), To: abbreviate(want)}, key: "description", value: gs.desc})
		}
	}
	if gs.onboot != nil {
		want := boolStr(*gs.onboot)
		scalar("onboot", want, false, func(v string, ok bool) bool { return boolStr(truthy(v)) == want })
	}
	if gs.startup != "" {
		scalar("startup", gs.startup, false, nil)
	}
	if gs.balloon != nil {
		scalar("balloon", strconv.Itoa(*gs.balloon), false, withDefault("", strconv.Itoa(*gs.balloon)))
	}
	if gs.ostype != "" {
		scalar("ostype", gs.ostype, false, withDefault("other", gs.ostype))
	}
	if gs.bios != "" {
		scalar("bios", gs.bios, true, withDefault("seabios", gs.bios))
	}
	if gs.machine != "" {
		scalar("machine", gs.machine, true, nil)
	}
	if gs.scsihw != "" {
		scalar("scsihw", gs.scsihw, true, withDefault("lsi", gs.scsihw))
	}
	if gs.agent != nil {
		want := boolStr(*gs.agent)
		scalar("agent", want, true, func(v string, ok bool) bool {
			return boolStr(truthy(pve.ParsePropertyString(v, "enabled").Values["enabled"])) == want
		})
	}

	// NICs, keyed by slot.
	declaredNIC := map[string]bool{}
	for _, n := range gs.nics {
		declaredNIC[n.Slot] = true
		d.managed[n.Slot] = true
		have, ok := eff[n.Slot]
		if !ok {
			v := nicValue(n, nil)
			set(configChange{Change: vocab.Change{Field: n.Slot, From: "", To: v}, key: n.Slot, value: v, reboot: !hp["network"]})
			continue
		}
		p := parseNIC(have)
		var fields []vocab.Change
		if n.Model != "" && n.Model != p.Model {
			fields = append(fields, vocab.Change{Field: n.Slot + ".model", From: p.Model, To: n.Model})
		}
		if n.Bridge != "" && n.Bridge != p.get("bridge") {
			fields = append(fields, vocab.Change{Field: n.Slot + ".bridge", From: p.get("bridge"), To: n.Bridge})
		}
		if n.Tag != nil {
			want := ""
			if *n.Tag > 0 {
				want = strconv.Itoa(*n.Tag)
			}
			if want != p.get("tag") {
				fields = append(fields, vocab.Change{Field: n.Slot + ".tag", From: p.get("tag"), To: want})
			}
		}
		if n.Firewall != nil && truthy(p.get("firewall")) != *n.Firewall {
			fields = append(fields, vocab.Change{Field: n.Slot + ".firewall", From: boolStr(truthy(p.get("firewall"))), To: boolStr(*n.Firewall)})
		}
		if n.MAC != "" && !strings.EqualFold(n.MAC, p.MAC) {
			fields = append(fields, vocab.Change{Field: n.Slot + ".macaddr", From: p.MAC, To: strings.ToUpper(n.MAC)})
		}
		if n.MTU != nil && strconv.Itoa(*n.MTU) != p.get("mtu") {
			fields = append(fields, vocab.Change{Field: n.Slot + ".mtu", From: p.get("mtu"), To: strconv.Itoa(*n.MTU)})
		}
		if n.Rate != "" && n.Rate != p.get("rate") {
			fields = append(fields, vocab.Change{Field: n.Slot + ".rate", From: p.get("rate"), To: n.Rate})
		}
		for _, k := range sortedKeys(n.Extra) {
			if n.Extra[k] != p.get(k) {
				fields = append(fields, vocab.Change{Field: n.Slot + "." + k, From: p.get(k), To: n.Extra[k]})
			}
		}
		if len(fields) > 0 {
			v := nicValue(n, &p)
			for i, f := range fields {
				c := configChange{Change: f, key: n.Slot, value: v, reboot: !hp["network"]}
				if i > 0 {
					c.key = "" // display only; the first carries the value
				}
				set(c)
			}
		}
	}
	if len(gs.nics) > 0 {
		for k := range eff {
			if strings.HasPrefix(k, "net") && !declaredNIC[k] {
				if _, err := strconv.Atoi(k[3:]); err == nil {
					d.managed[k] = true
					set(configChange{Change: vocab.Change{Field: k, From: eff[k], To: ""}, key: k, del: true, reboot: !hp["network"]})
				}
			}
		}
	}

	// Disks, keyed by slot.
	for _, disk := range resolveDiskSlots(gs.disks, eff) {
		d.managed[disk.Slot] = true
		have, ok := eff[disk.Slot]
		if !ok {
			size := gibCeil(disk.Size)
			if size == 0 {
				size = 1
			}
			v := fmt.Sprintf("%s:%d%s", disk.Storage, size, diskOptions(disk.Options))
			bus := strings.TrimRight(disk.Slot, "0123456789")
			set(configChange{Change: vocab.Change{Field: disk.Slot, From: "", To: fmt.Sprintf("%s:%s", disk.Storage, FormatSize(size*gib))},
				key: disk.Slot, value: v, async: true, reboot: !hp["disk"] || bus == "ide" || bus == "sata"})
			continue
		}
		pd := parseDisk(have)
		if disk.Size > 0 && pd.Size > 0 {
			switch {
			case pd.Size < disk.Size:
				d.resizes = append(d.resizes, resize{slot: disk.Slot, from: pd.Size, to: disk.Size})
			case pd.Size > disk.Size:
				d.refused = append(d.refused, fmt.Sprintf("disk %s is %s on the cluster but %s in the manifest: shrinking disks is not supported, raise the size in the manifest",
					disk.Slot, FormatSize(pd.Size), FormatSize(disk.Size)))
			}
		}
		if len(disk.Options) > 0 {
			ps := pd.props
			changed := false
			keys := make([]string, 0, len(disk.Options))
			for k := range disk.Options {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			var fields []vocab.Change
			for _, k := range keys {
				if ps.Values[k] != disk.Options[k] {
					fields = append(fields, vocab.Change{Field: disk.Slot + "." + k, From: ps.Values[k], To: disk.Options[k]})
					ps.Set(k, disk.Options[k])
					changed = true
				}
			}
			if changed {
				v := ps.String("file")
				for i, f := range fields {
					c := configChange{Change: f, key: disk.Slot, value: v, reboot: true}
					if i > 0 {
						c.key = ""
					}
					set(c)
				}
			}
		}
	}

	// Cloud-init drive and settings.
	if gs.ci != nil {
		ciSlot := ""
		for k, v := range eff {
			if isDiskKey(k) && parseDisk(v).isCloudInit() {
				ciSlot = k
			}
		}
		if ciSlot == "" {
			stor := gs.ci.Storage
			if stor == "" && len(gs.disks) > 0 {
				stor = gs.disks[0].Storage
			}
			if stor == "" {
				// A clone declaring no disk: next to its boot disk.
				if boot := bootDiskSlot(eff); boot != "" {
					stor = storageOf(parseDisk(eff[boot]).File)
				}
			}
			if stor != "" {
				d.managed[cloudInitSlot] = true
				set(configChange{Change: vocab.Change{Field: "cloudinit drive", From: "", To: cloudInitSlot + " on " + stor},
					key: cloudInitSlot, value: stor + ":cloudinit", async: true})
			}
		}
		ci := func(key, want string, same func(string) bool) {
			d.managed[key] = true
			have := eff[key]
			if same == nil {
				same = func(v string) bool { return v == want }
			}
			if !same(have) {
				set(configChange{Change: vocab.Change{Field: key, From: have, To: want}, key: key, value: want, ci: true})
			}
		}
		if gs.ci.User != "" {
			ci("ciuser", gs.ci.User, nil)
		}
		if gs.ci.PasswordSet && eff["cipassword"] == "" {
			d.managed["cipassword"] = true
			set(configChange{Change: vocab.Change{Field: "cipassword", From: "", To: "(set)"}, key: "cipassword", value: gs.ci.Password, ci: true})
		}
		if len(gs.ci.SSHKeys) > 0 {
			want := normalKeys(gs.ci.SSHKeys)
			have := normalKeys(pve.DecodeSSHKeys(eff["sshkeys"]))
			d.managed["sshkeys"] = true
			if !sameStrings(want, have) {
				set(configChange{Change: vocab.Change{Field: "sshkeys", From: keysSummary(have), To: keysSummary(want)},
					key: "sshkeys", value: pve.EncodeSSHKeys(gs.ci.SSHKeys), ci: true})
			}
		}
		if gs.ci.Nameserver != "" {
			want := strings.Join(strings.Fields(gs.ci.Nameserver), " ")
			ci("nameserver", want, func(v string) bool { return strings.Join(strings.Fields(v), " ") == want })
		}
		if gs.ci.Searchdomain != "" {
			want := strings.Join(strings.Fields(gs.ci.Searchdomain), " ")
			ci("searchdomain", want, func(v string) bool { return strings.Join(strings.Fields(v), " ") == want })
		}
		if gs.ci.Upgrade != nil {
			want := boolStr(*gs.ci.Upgrade)
			ci("ciupgrade", want, func(v string) bool {
				if v == "" {
					v = "1"
				}
				return boolStr(truthy(v)) == want
			})
		}
		for _, slot := range sortedKeys(gs.ci.IPConfigs) {
			key := "ipconfig" + strings.TrimPrefix(slot, "net")
			want := gs.ci.IPConfigs[slot]
			ci(key, want, func(v string) bool { return normalIPConfig(v) == normalIPConfig(want) })
		}
	}

	// An ISO or the CIDATA seed as cdrom.
	if gs.isoVolume != "" {
		want := gs.isoVolume + ",media=cdrom"
		// A new IDE drive waits for a restart; a media change is live.
		_, present := eff[cdromSlot]
		scalar(cdromSlot, want, !present, func(v string, ok bool) bool { return ok && parseDisk(v).File == gs.isoVolume })
	}
	if gs.userData != "" && gs.cidataStor != "" {
		vmid := g.VMID
		want := gs.cidataVolume(vmid)
		slot, have := cdromSlot, ""
		for k, v := range eff {
			if pd := parseDisk(v); isDiskKey(k) && pd.isCdrom() && strings.Contains(pd.File, "proxmops-cidata-") {
				slot, have = k, pd.File
			}
		}
		d.managed[slot] = true
		if have != want {
			d.cidata = &cidataChange{slot: slot, oldVolume: have, newVolume: want}
		}
	}

	if want := wantBootOrder(gs, eff); len(want) > 0 {
		d.managed["boot"] = true
		if bootDrift(want, eff) {
			v := printBootOrder(want)
			set(configChange{Change: vocab.Change{Field: "boot", From: bootDisplay(eff), To: v}, key: "boot", value: v, reboot: true, last: true})
		}
	}

	// Managed keys whose desired value waits for a reboot.
	changed := map[string]bool{}
	for _, c := range d.config {
		changed[c.key] = true
	}
	var keys []string
	for k := range d.managed {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if changed[k] {
			continue
		}
		if pv, ok := g.Pending[k]; ok {
			d.pending = append(d.pending, vocab.Change{Field: k, From: displayValue(k, cur[k]), To: displayValue(k, pv)})
		} else if g.PendingDelete[k] {
			d.pending = append(d.pending, vocab.Change{Field: k, From: displayValue(k, cur[k]), To: ""})
		}
	}
	return d
}

func displayValue(key, v string) string {
	if key == "memory" {
		return pve.ParsePropertyString(v, "current").Values["current"]
	}
	if key == "cpu" {
		return pve.ParsePropertyString(v, "cputype").Values["cputype"]
	}
	return v
}

func normalKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if k = strings.Join(strings.Fields(k), " "); k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

func keysSummary(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		f := strings.Fields(k)
		switch {
		case len(f) >= 3:
			names = append(names, f[len(f)-1])
		case len(f) == 2 && len(f[1]) > 12:
			names = append(names, f[0]+" …"+f[1][len(f[1])-8:])
		default:
			names = append(names, k)
		}
	}
	return fmt.Sprintf("%d key(s): %s", len(keys), strings.Join(names, ", "))
}

func abbreviate(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
