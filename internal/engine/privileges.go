package engine

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// Privileges the plan checks before anything is applied. Each action that
// would call the cluster lists the privileges Proxmox checks for those
// calls (pve-access-control RPCEnvironment.pm check/check_any, and the
// methods' own checks: qemu-server API2/Qemu.pm create_vm, update_vm,
// clone_vm and check_vm_modify_config_perm, pve-container API2/LXC.pm
// create_vm with Sys.Modify on / for a privileged container, pve-storage
// download_url and check_volume_access, pve-manager Network.pm, pve-network
// SDN). The token's privileges on those paths are read with GET
// /access/permissions; an action needing one the token lacks is planned
// as Failed with the missing privilege named, and never applied.

// privCheck is one ACL path and privileges on it: all of them, or one (any).
type privCheck struct {
	path  string
	privs []string
	any   bool
}

// privNeed is what one call needs: one of the alternatives (Proxmox's
// "or"), each a list of checks that must all pass.
type privNeed struct {
	alts [][]privCheck
	why  string
}

func needAll(why, path string, privs ...string) privNeed {
	return privNeed{alts: [][]privCheck{{{path: path, privs: privs}}}, why: why}
}

func needAny(why, path string, privs ...string) privNeed {
	return privNeed{alts: [][]privCheck{{{path: path, privs: privs, any: true}}}, why: why}
}

// downloadNeed is download_url's permission: Datastore.AllocateTemplate on
// the storage, and Sys.Audit with Sys.Modify on / or Sys.AccessNetwork on
// the node.
func downloadNeed(why, node, storage string) []privNeed {
	st := privCheck{path: "/storage/" + storage, privs: []string{"Datastore.AllocateTemplate"}}
	return []privNeed{
		{alts: [][]privCheck{{st}}, why: why},
		{alts: [][]privCheck{
			{{path: "/", privs: []string{"Sys.Audit", "Sys.Modify"}}},
			{{path: "/nodes/" + node, privs: []string{"Sys.AccessNetwork"}}},
		}, why: why},
	}
}

// vmPath is the ACL path of a guest ("/vms" while its VMID is not known).
func vmPath(vmid int) string {
	if vmid <= 0 {
		return "/vms"
	}
	return "/vms/" + strconv.Itoa(vmid)
}

// bridgeNeed is check_vnet_access: SDN.Use on the bridge in its zone (the
// VNet's zone, "localnetwork" for a Linux bridge), on the VLAN when tagged.
func bridgeNeed(d *Desired, why, bridge string, tag int) privNeed {
	zone := "localnetwork"
	for _, v := range specsOf[*SdnVnetSpec](d, KindSdnVnet) {
		if v.Name == bridge && v.Zone != "" {
			zone = v.Zone
		}
	}
	path := "/sdn/zones/" + zone + "/" + bridge
	if tag > 0 {
		path += "/" + strconv.Itoa(tag)
	}
	return needAll(why, path, "SDN.Use")
}

// guestConfigNeeds are check_vm_modify_config_perm's privileges for the
// settings proxmops writes on a VM (name, tags, description and the other
// options; CPU; memory; hardware types; boot; NICs; cloud-init).
func guestConfigNeeds(d *Desired, vmid int, gs vmSettings, why string) []privNeed {
	p := vmPath(vmid)
	needs := []privNeed{
		needAll(why+" (name, tags, options)", p, "VM.Config.Options"),
		needAll(why+" (cores, sockets, cpu)", p, "VM.Config.CPU"),
		needAll(why+" (memory)", p, "VM.Config.Memory"),
		needAll(why+" (boot order, disks)", p, "VM.Config.Disk"),
	}
	if gs.hwType {
		needs = append(needs, needAll(why+" (machine, BIOS type, SCSI controller, serial console)", p, "VM.Config.HWType"))
	}
	if gs.startup {
		needs = append(needs, needAll(why+" (startup order changes host behaviour)", "/", "Sys.Modify"))
	}
	for _, n := range gs.nics {
		needs = append(needs, needAll(why+" ("+n.Slot+")", p, "VM.Config.Network"))
		tag := 0
		if n.Tag != nil {
			tag = *n.Tag
		}
		needs = append(needs, bridgeNeed(d, why+" ("+n.Slot+" on "+n.Bridge+")", n.Bridge, tag))
	}
	if gs.cloudInit {
		needs = append(needs, needAny(why+" (cloud-init)", p, "VM.Config.Cloudinit", "VM.Config.Network"),
			needAll(why+" (cloud-init drive)", p, "VM.Config.Cloudinit", "VM.Config.CDROM"))
	}
	for _, s := range gs.storages {
		needs = append(needs, needAll(why+" (disk on "+s+")", "/storage/"+s, "Datastore.AllocateSpace"))
	}
	if gs.iso != "" {
		needs = append(needs, needAny(why+" (ISO "+gs.iso+")", "/storage/"+pvefields.StorageOf(gs.iso), "Datastore.AllocateSpace", "Datastore.Audit"),
			needAll(why+" (CD-ROM)", p, "VM.Config.CDROM"))
	}
	if gs.cidataStor != "" {
		needs = append(needs, needAll(why+" (upload of the cloud-init seed ISO)", "/storage/"+gs.cidataStor, "Datastore.AllocateTemplate"),
			needAll(why+" (CD-ROM with the seed)", p, "VM.Config.CDROM"))
	}
	if gs.running {
		needs = append(needs, needAll(why+" (start)", p, "VM.PowerMgmt"))
	}
	return needs
}

// vmSettings is what a VM or template declares, for guestConfigNeeds.
type vmSettings struct {
	hwType, startup, cloudInit, running bool
	nics                                []NICSpec
	storages                            []string
	iso, cidataStor                     string
}

func vmSettingsOf(s *VMSpec, isos map[string]*IsoSpec) vmSettings {
	// createParams always sends scsihw (and serial0 for cloud images).
	gs := vmSettings{hwType: true, startup: s.Startup != "",
		cloudInit: s.CloudInit != nil, running: s.State != "stopped", nics: s.NICs}
	for _, d := range s.Disks {
		gs.storages = append(gs.storages, d.Storage)
	}
	if s.CloudInit != nil && s.CloudInit.Storage != "" {
		gs.storages = append(gs.storages, s.CloudInit.Storage)
	}
	if s.Iso != "" {
		if iso := isos[s.Iso]; iso != nil {
			gs.iso = iso.Storage + ":iso/" + iso.FileName
		} else if strings.Contains(s.Iso, ":") {
			gs.iso = s.Iso
		}
	}
	if s.UserData != "" && len(s.Disks) > 0 {
		gs.cidataStor = "local"
		if gs.iso != "" {
			gs.cidataStor = pvefields.StorageOf(gs.iso)
		}
	}
	return gs
}

// imageNeeds are the privileges a boot image needs: its download, and
// read access to the imported volume (check_volume_access).
func imageNeeds(node string, img *ImageSpec, why string) []privNeed {
	if img == nil {
		return nil
	}
	stor := img.Storage
	if img.Volume != "" {
		stor = pvefields.StorageOf(img.Volume)
	}
	var needs []privNeed
	if img.URL != "" && stor != "" {
		needs = append(needs, downloadNeed(why+" (download of the boot image)", node, stor)...)
	}
	if stor != "" {
		needs = append(needs, needAny(why+" (import of the boot image)", "/storage/"+stor, "Datastore.AllocateSpace", "Datastore.Audit"))
	}
	return needs
}

// privContext is what the privilege rules of the kinds read besides the
// action and its spec.
type privContext struct {
	d       *Desired
	isos    map[string]*IsoSpec
	tplVMID map[string]int // a template's VMID by name, as planned
	snap    *Observation   // nil outside a plan
	byKey   map[string]Spec
}

func newPrivContext(d *Desired, snap *Observation) *privContext {
	pv := &privContext{d: d, isos: map[string]*IsoSpec{}, tplVMID: map[string]int{}, snap: snap, byKey: map[string]Spec{}}
	for _, row := range kinds {
		for _, s := range d.Specs(row.kind) {
			pv.byKey[vocab.Key(row.kind, s.meta().Name)] = s
		}
	}
	for _, s := range specsOf[*IsoSpec](d, KindIso) {
		pv.isos[s.Name] = s
	}
	for _, s := range specsOf[*TemplateSpec](d, KindTemplate) {
		pv.tplVMID[s.Name] = s.VMID
	}
	return pv
}

// actionNeeds lists what an action's calls need, from its manifest and
// its kind's rules (the registry's needs).
func actionNeeds(pv *privContext, a *Action) []privNeed {
	var needs []privNeed
	if a.HA != "" && a.Action == vocab.ActionDelete {
		// A guest leaves HA before it is deleted: pve-ha-manager
		// API2/HA/Resources.pm delete needs Sys.Console on /. Power goes
		// through status/start and shutdown (VM.PowerMgmt).
		needs = []privNeed{needAll("remove the guest from HA ("+a.HA+")", "/", "Sys.Console")}
	}
	// API2/Qemu.pm and API2/LXC/Snapshot.pm snapshot and delsnapshot; the
	// settings' list of needs (no snapshot of the cluster) names it for
	// every guest that asks for snapshots.
	if a.snapshot != nil || pv.snap == nil && wantsSnapshots(pv.byKey[a.Key()]) {
		needs = append(needs, needAll("take and prune snapshots before the change (spec.snapshots)", vmPath(a.VMID), "VM.Snapshot"))
	}
	if a.Action == vocab.ActionReboot {
		return append(needs, needAll("reboot the guest", vmPath(a.VMID), "VM.PowerMgmt"))
	}
	if row := rowOf(a.Kind); row != nil && row.needs != nil {
		needs = append(needs, row.needs(pv, a, pv.byKey[a.Key()])...)
	}
	return needs
}

// guestNeeds are a guest kind's privileges: its deletion stops and
// destroys the guest; an action without a spec (a prune) needs nothing
// else; the others need what f says.
func guestNeeds[S Spec](f func(pv *privContext, a *Action, s S) []privNeed) func(*privContext, *Action, Spec) []privNeed {
	return func(pv *privContext, a *Action, s Spec) []privNeed {
		if a.Action == vocab.ActionDelete {
			p := vmPath(a.VMID)
			return []privNeed{needAll("stop the guest before deleting it", p, "VM.PowerMgmt"), needAll("delete the guest", p, "VM.Allocate")}
		}
		spec, ok := s.(S)
		if !ok {
			return nil
		}
		return append(append(append(f(pv, a, spec), guestPoolNeeds(a)...), guestHANeeds(a)...), guestFirewallNeeds(a)...)
	}
}

func vmSpecNeeds(pv *privContext, a *Action, s *VMSpec) []privNeed {
	return vmNeeds(a, pv.d, s, pv.isos, pv.tplVMID, pv.snap)
}

func templateNeeds(pv *privContext, a *Action, s *TemplateSpec) []privNeed {
	p := vmPath(a.VMID)
	if a.Action != vocab.ActionCreate {
		return updateNeeds(a, pv.d, p, diskStorages(s.Disks))
	}
	vs := &VMSpec{Meta: s.Meta, QemuHW: QemuHW{Machine: s.Machine, BIOS: s.BIOS, SCSIHW: s.SCSIHW}, Disks: s.Disks, NICs: s.NICs,
		CloudInit: s.CloudInit, State: "stopped"}
	needs := []privNeed{needAll("create the template", p, "VM.Allocate")}
	needs = append(needs, imageNeeds(a.Node, s.Image, "create the template")...)
	return append(needs, guestConfigNeeds(pv.d, a.VMID, vmSettingsOf(vs, pv.isos), "create the template")...)
}

func containerSpecNeeds(pv *privContext, a *Action, s *ContainerSpec) []privNeed {
	return containerNeeds(a, pv.d, s)
}

// isoNeeds are an Iso's privileges.
func isoNeeds(_ *privContext, a *Action, sp Spec) []privNeed {
	s, ok := sp.(*IsoSpec)
	switch {
	case !ok:
		return nil
	case a.Action == vocab.ActionDelete:
		return []privNeed{needAll("delete the ISO", "/storage/"+s.Storage, "Datastore.Allocate")}
	}
	return downloadNeed("download the ISO", a.Node, s.Storage)
}

// ctemplateNeeds are a ContainerTemplate's privileges.
func ctemplateNeeds(_ *privContext, a *Action, sp Spec) []privNeed {
	s, ok := sp.(*CTemplateSpec)
	switch {
	case !ok:
		return nil
	case a.Action == vocab.ActionDelete:
		return []privNeed{needAll("delete the container template", "/storage/"+s.Storage, "Datastore.Allocate")}
	case s.Appliance != "":
		return []privNeed{needAll("download the appliance", "/storage/"+s.Storage, "Datastore.AllocateTemplate")}
	}
	return downloadNeed("download the container template", a.Node, s.Storage)
}

// networkNeeds are a Network's privileges.
func networkNeeds(_ *privContext, a *Action, sp Spec) []privNeed {
	needs := []privNeed{needAll("change the node's network", "/nodes/"+a.Node, "Sys.Modify")}
	if a.Action == vocab.ActionDelete {
		return needs
	}
	s, ok := sp.(*NetworkSpec)
	if !ok {
		return nil
	}
	if s.Type == "bridge" || s.Type == "OVSBridge" {
		// pve-manager Network.pm index lists a bridge only to callers
		// with SDN.Audit or SDN.Use on it: without, proxmops cannot see it.
		iface := s.Iface
		if iface == "" {
			iface = s.Name
		}
		needs = append(needs, needAny("see the bridge in the node's network list", "/sdn/zones/localnetwork/"+iface, "SDN.Audit", "SDN.Use"))
	}
	return needs
}

// sdnNeeds are the privileges of SDN zones and vnets.
func sdnNeeds(_ *privContext, a *Action, sp Spec) []privNeed {
	apply := needAll("apply the SDN configuration", "/sdn", "SDN.Allocate")
	// The apply waits for each node's srvreload task, which pvesh starts
	// as root@pam: another user's tasks are listed only with Sys.Audit.
	watch := needAll("see each node's network reload after the SDN apply", "/nodes", "Sys.Audit")
	if a.Action == vocab.ActionDelete {
		return []privNeed{needAll("change and apply the SDN configuration", "/sdn", "SDN.Allocate"), watch}
	}
	switch s := sp.(type) {
	case *SdnZoneSpec:
		path := "/sdn/zones/" + s.Name
		if a.Action == vocab.ActionCreate {
			path = "/sdn/zones"
		}
		return []privNeed{needAll("define the zone", path, "SDN.Allocate"), apply, watch}
	case *SdnVnetSpec:
		path := "/sdn/zones/" + s.Zone + "/" + s.Name
		if a.Action == vocab.ActionCreate {
			path = "/sdn/zones/" + s.Zone
		}
		return []privNeed{needAll("define the VNet", path, "SDN.Allocate"), apply, watch}
	}
	return nil
}

func vmNeeds(a *Action, d *Desired, s *VMSpec, isos map[string]*IsoSpec, tplVMID map[string]int, snap *Observation) []privNeed {
	p := vmPath(a.VMID)
	if a.Action != vocab.ActionCreate {
		return updateNeeds(a, d, p, diskStorages(s.Disks))
	}
	gs := vmSettingsOf(s, isos)
	if gs.cidataStor != "" && snap != nil {
		// The seed goes where vm.go puts it: an ISO storage of the node.
		if st := isoStorage(snap, a.Node); st != "" {
			gs.cidataStor = st
		}
	}
	var needs []privNeed
	if s.FromTemplate != nil {
		needs = append(needs, needAll("clone the template", vmPath(tplVMID[s.FromTemplate.Name]), "VM.Clone"))
	}
	needs = append(needs, needAll("create the VM", p, "VM.Allocate"))
	if s.AgentHealthCheck {
		// API2/Qemu/Agent.pm register_command: ping needs VM.GuestAgent.Audit
		// or VM.GuestAgent.Unrestricted (Proxmox VE 8.4 names it VM.Monitor).
		needs = append(needs, needAny("ask the guest agent for the health check (spec.healthCheck.agent)", p,
			"VM.GuestAgent.Audit", "VM.GuestAgent.Unrestricted", "VM.Monitor"))
	}
	needs = append(needs, imageNeeds(a.Node, s.Image, "create the VM")...)
	return append(needs, guestConfigNeeds(d, a.VMID, gs, "create the VM")...)
}

// updateNeeds maps the changed fields of an update to the privileges of
// their keys (check_vm_modify_config_perm, check_ct_modify_config_perm).
func updateNeeds(a *Action, d *Desired, p string, slots map[string]string) []privNeed {
	var needs []privNeed
	ct := a.Kind == KindContainer
	for _, c := range a.Changes {
		if c.Pending || c.Held() {
			continue // already written, or never applied: the action sends nothing for it
		}
		key, sub, _ := strings.Cut(c.Field, ".")
		why := "change " + c.Field
		base := strings.TrimRight(key, "0123456789")
		if stor := slots[key]; stor != "" && (sub == "size" || c.From == "") {
			// A new disk or a grown one: space on its storage (update_vm's
			// check_storage_access, resize_vm).
			needs = append(needs, needAll(why+" (disk on "+stor+")", "/storage/"+stor, "Datastore.AllocateSpace"))
		}
		switch {
		case key == "state":
			needs = append(needs, needAll(why, p, "VM.PowerMgmt"))
		case key == "cores" || key == "sockets" || key == "cpu" || key == "cpulimit" || key == "cpuunits" || key == "vcpus":
			needs = append(needs, needAll(why, p, "VM.Config.CPU"))
		case key == "memory" || key == "balloon" || key == "swap":
			needs = append(needs, needAll(why, p, "VM.Config.Memory"))
		case key == "machine" || key == "scsihw" || key == "vga" || key == "serial0":
			needs = append(needs, needAll(why, p, "VM.Config.HWType"))
		case key == "bios" && !ct:
			needs = append(needs, needAll(why, p, "VM.Config.Options"))
		case key == "boot" || key == "rootfs" || base == "mp" || base == "scsi" || base == "virtio" || base == "sata" || base == "ide" || base == "efidisk" || base == "unused":
			needs = append(needs, needAll(why, p, "VM.Config.Disk"))
		case base == "net":
			needs = append(needs, needAll(why, p, "VM.Config.Network"))
			if c.To != "" && strings.HasSuffix(c.Field, ".bridge") {
				needs = append(needs, bridgeNeed(d, why, c.To, 0))
			}
		case ct && (key == "hostname" || key == "nameserver" || key == "searchdomain"):
			needs = append(needs, needAll(why, p, "VM.Config.Network"))
		case key == "cloudinit drive" || key == "userData":
			needs = append(needs, needAll(why, p, "VM.Config.Cloudinit", "VM.Config.CDROM"))
		case !ct && (key == "ciuser" || key == "cipassword" || key == "sshkeys" || key == "nameserver" || key == "searchdomain" || key == "ciupgrade" || base == "ipconfig"):
			needs = append(needs, needAny(why, p, "VM.Config.Cloudinit", "VM.Config.Network"))
		case key == "startup" && !ct:
			needs = append(needs, needAll(why, p, "VM.Config.Options"), needAll(why+" (startup order changes host behaviour)", "/", "Sys.Modify"))
		case key == "features":
			needs = append(needs, needAll(why, p, "VM.Allocate"))
		default:
			needs = append(needs, needAll(why, p, "VM.Config.Options"))
		}
	}
	if a.NeedsReboot {
		needs = append(needs, needAll("reboot the guest to apply the changes", p, "VM.PowerMgmt"))
	}
	return needs
}

func containerNeeds(a *Action, d *Desired, s *ContainerSpec) []privNeed {
	p := vmPath(a.VMID)
	if a.Action != vocab.ActionCreate {
		slots := map[string]string{}
		for _, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
			slots[m.Slot] = m.Storage
		}
		return updateNeeds(a, d, p, slots)
	}
	why := "create the container"
	var needs []privNeed
	if !s.Unprivileged {
		needs = append(needs, needAll(why+" (privileged)", "/", "Sys.Modify"))
	}
	needs = append(needs, needAll(why, p, "VM.Allocate"),
		needAll(why+" (cores)", p, "VM.Config.CPU"),
		needAll(why+" (memory, swap)", p, "VM.Config.Memory"),
		needAll(why+" (hostname, DNS)", p, "VM.Config.Network"),
		needAll(why+" (options)", p, "VM.Config.Options"),
		needAll(why+" (root disk)", p, "VM.Config.Disk"))
	for _, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
		if m.Storage != "" {
			needs = append(needs, needAll(why+" ("+m.Slot+" on "+m.Storage+")", "/storage/"+m.Storage, "Datastore.AllocateSpace"))
		}
	}
	for _, n := range s.NICs {
		needs = append(needs, bridgeNeed(d, why+" ("+n.Slot+" on "+n.Bridge+")", n.Bridge, n.Tag))
	}
	if tpl := containerTemplateStorage(d, s.Template); tpl != "" {
		needs = append(needs, needAny(why+" (template)", "/storage/"+tpl, "Datastore.AllocateSpace", "Datastore.Audit"))
	}
	if s.Features != nil && strings.Contains(*s.Features, "nesting") {
		needs = append(needs, needAll(why+" (nesting)", p, "VM.Allocate"))
	}
	if s.State != "stopped" {
		needs = append(needs, needAll(why+" (start)", p, "VM.PowerMgmt"))
	}
	return needs
}

// containerTemplateStorage is the storage a container's template is on.
func containerTemplateStorage(d *Desired, tpl string) string {
	for _, t := range specsOf[*CTemplateSpec](d, KindContainerTemplate) {
		if t.Name == tpl {
			return t.Storage
		}
	}
	if strings.Contains(tpl, ":") {
		return pvefields.StorageOf(tpl)
	}
	return ""
}

// permissionReader answers the token's privileges on ACL paths with as few
// reads as it can. The first question reads the whole map (GET
// /access/permissions without a path: RPCEnvironment.pm
// get_effective_permissions computes every top-level path, every path
// named in an ACL and every pool member, and leaves out those where the
// token holds nothing). A path in that map is answered from it; a
// top-level path absent from it holds nothing. Any other path is read
// alone, once, except the path of a guest that does not exist yet: such
// paths inherit alike from /vms (Proxmox drops a guest's ACLs and pool
// membership with the guest, remove_vm_access), so one of them is read and
// answers for all when it grants anything (an empty answer may come from
// an ACL of that path's own, so it answers for that path alone). An ACL
// set by hand on another free VMID that grants nothing is the one case
// this does not see; Proxmox then refuses the call (403).
type permissionReader struct {
	ctx    context.Context
	client *pve.Client
	snap   *Observation
	cache  map[string]map[string]bool
	tree   map[string]map[string]bool // the whole map, once read
	err    error
}

// topLevelPaths are get_effective_permissions' default paths: always in
// its map when the token holds anything there.
var topLevelPaths = map[string]bool{"/": true, "/access": true, "/access/groups": true, "/nodes": true,
	"/pool": true, "/sdn": true, "/storage": true, "/vms": true}

// newVMIDPath is the cache key the paths of guests not yet created share.
const newVMIDPath = "/vms/(new)"

func (r *permissionReader) on(path string) map[string]bool {
	if p, ok := r.cache[path]; ok {
		return p
	}
	if r.tree == nil && r.err == nil {
		var res map[string]map[string]any
		if err := r.client.Get(r.ctx, "access/permissions", nil, &res); err != nil {
			r.err = err
			return nil
		}
		r.tree = map[string]map[string]bool{}
		for p, privs := range res {
			r.tree[p] = map[string]bool{}
			for k := range privs {
				r.tree[p][k] = true
			}
		}
	}
	if r.err != nil {
		return nil
	}
	if privs, ok := r.tree[path]; ok {
		return privs
	}
	if topLevelPaths[path] {
		return map[string]bool{}
	}
	shared := r.newGuestPath(path)
	if p, ok := r.cache[newVMIDPath]; ok && shared {
		return p
	}
	privs := r.read(path)
	r.cache[path] = privs
	if shared && len(privs) > 0 {
		// Inherited: a path with an ACL of its own that grants anything is
		// in the map. An empty answer may be such a path's own NoAccess,
		// so it answers for that path alone.
		r.cache[newVMIDPath] = privs
	}
	return privs
}

// newGuestPath says whether path is /vms/<vmid> of a guest the snapshot
// does not hold.
func (r *permissionReader) newGuestPath(path string) bool {
	rest, ok := strings.CutPrefix(path, "/vms/")
	if !ok || r.snap == nil {
		return false
	}
	vmid, err := strconv.Atoi(rest)
	return err == nil && vmid > 0 && r.snap.Guest(vmid) == nil
}

// read asks for one path.
func (r *permissionReader) read(path string) map[string]bool {
	var res map[string]map[string]any
	if err := r.client.Get(r.ctx, "access/permissions", pve.NewParams().Set("path", path), &res); err != nil {
		r.err = err
		return nil
	}
	privs := map[string]bool{}
	for k := range res[path] {
		privs[k] = true
	}
	return privs
}

// missing returns the first check of need the token fails ("" privilege
// when every alternative passes).
func (r *permissionReader) missing(n privNeed) (path, priv string) {
	for i, alt := range n.alts {
		ok := true
		for _, c := range alt {
			have := r.on(c.path)
			if have == nil { // unreadable: do not guess
				return "", ""
			}
			if c.any {
				found := false
				for _, p := range c.privs {
					found = found || have[p]
				}
				if !found {
					ok = false
					if i == 0 {
						path, priv = c.path, strings.Join(c.privs, " or ")
					}
					break
				}
				continue
			}
			for _, p := range c.privs {
				if !have[p] {
					ok = false
					if i == 0 {
						path, priv = c.path, p
					}
					break
				}
			}
			if !ok {
				break
			}
		}
		if ok {
			return "", ""
		}
	}
	if len(n.alts) > 1 {
		var alts []string
		for _, alt := range n.alts {
			var parts []string
			for _, c := range alt {
				parts = append(parts, strings.Join(c.privs, "+")+" on "+c.path)
			}
			alts = append(alts, strings.Join(parts, " and "))
		}
		return "", strings.Join(alts, ", or ")
	}
	return path, priv
}

// checkPrivileges marks actions whose calls the token may not make.
func (e *Engine) checkPrivileges(ctx context.Context, p *Plan, d *Desired) {
	var snap *Observation
	if p.pass != nil {
		snap = p.pass.snap
	}
	pv := newPrivContext(d, snap)
	for _, a := range p.Actions {
		if a.Kind == KindTemplate && a.VMID > 0 {
			if s, ok := pv.byKey[a.Key()].(*TemplateSpec); ok {
				pv.tplVMID[s.Name] = a.VMID
			}
		}
	}
	r := &permissionReader{ctx: ctx, client: e.client, snap: snap, cache: map[string]map[string]bool{}}
	tags := &tagRules{read: func() (pve.ClusterOptions, error) { return e.client.ClusterOptions(ctx) }}
	for _, a := range p.Actions {
		if !a.Acts() || a.Conflicted() || a.Status == vocab.StatusFailed {
			continue
		}
		for _, n := range append(actionNeeds(pv, a), tags.needs(a)...) {
			path, priv := r.missing(n)
			if priv == "" {
				continue
			}
			why := fmt.Sprintf("the API token lacks %s on %s, needed to %s", priv, path, n.why)
			if path == "" {
				why = fmt.Sprintf("the API token lacks the privileges to %s: it needs %s", n.why, priv)
			}
			a.refuse(joinReasons([]string{a.Reason, why}))
			break
		}
		if r.err != nil {
			e.log.Warn("the token's privileges could not be read; the plan does not check them", "err", r.err)
			return
		}
	}
}

// PrivilegeNeed is one privilege on one ACL path that the manifests need,
// with what for (the first resource that needs it).
type PrivilegeNeed struct {
	Path, Privilege, Why string
}

// PrivilegeNeeds lists what creating everything in d would need, for the
// settings' connection test: one entry per path and privilege, in the
// order of the plan (an "any of" need lists its first privilege).
func PrivilegeNeeds(d *Desired) []PrivilegeNeed {
	var actions []*Action
	for _, row := range kinds {
		for _, s := range d.Specs(row.kind) {
			m, vmid := s.meta(), 0
			if row.vmid != nil {
				vmid = row.vmid(s)
			}
			actions = append(actions, &Action{Kind: row.kind, Name: m.Name, Node: m.Node, VMID: vmid, Action: vocab.ActionCreate})
		}
	}
	pv := newPrivContext(d, nil)
	var out []PrivilegeNeed
	seen := map[string]bool{}
	for _, a := range actions {
		for _, n := range actionNeeds(pv, a) {
			for _, c := range n.alts[0] {
				for _, pr := range c.privs {
					if k := c.path + " " + pr; !seen[k] {
						seen[k] = true
						out = append(out, PrivilegeNeed{Path: c.path, Privilege: pr, Why: a.Key() + ": " + n.why})
					}
					if c.any {
						break
					}
				}
			}
		}
	}
	return out
}

// diskStorages maps disk slots to their storages.
func diskStorages(disks []DiskSpec) map[string]string {
	out := map[string]string{}
	for _, d := range disks {
		out[d.Slot] = d.Storage
	}
	return out
}

// tagRules are the datacenter's tag rules as GuestHelpers.pm
// assert_tag_permissions applies them: without Sys.Modify on /, a tag set
// or removed must not be in registered-tags and, unless user-tag-access
// is free, must be one the caller may set (get_allowed_tags, which GET
// /cluster/options answers as allowed-tags).
type tagRules struct {
	read func() (pve.ClusterOptions, error)
	once bool
	opts *pve.ClusterOptions
}

// needs is Sys.Modify on / for each tag an action sets or removes that the
// rules reserve; none when /cluster/options cannot be read.
func (tr *tagRules) needs(a *Action) []privNeed {
	var out []privNeed
	for _, c := range a.Changes {
		if c.Field != "tags" {
			continue
		}
		if !tr.once {
			tr.once = true
			if o, err := tr.read(); err == nil {
				tr.opts = &o
			}
		}
		if tr.opts == nil {
			return nil
		}
		for _, t := range changedTags(c.From, c.To) {
			if why := tr.reserved(t); why != "" {
				out = append(out, needAll(fmt.Sprintf("set or remove the tag '%s' (%s)", t, why), "/", "Sys.Modify"))
			}
		}
	}
	return out
}

// reserved says why a tag needs Sys.Modify on / ("" when it does not).
func (tr *tagRules) reserved(tag string) string {
	o := tr.opts
	if slices.Contains(o.RegisteredTags, tag) {
		return "it is in the datacenter's registered-tags"
	}
	if o.UserTagAccess == nil || o.UserTagAccess.UserAllow == "" || o.UserTagAccess.UserAllow == "free" {
		return ""
	}
	if slices.Contains(o.AllowedTags, tag) {
		return ""
	}
	return "the datacenter's user-tag-access is " + o.UserTagAccess.UserAllow + " and does not allow it"
}

// changedTags are the tags whose count differs between two tag lists, as
// assert_tag_permissions compares them.
func changedTags(from, to string) []string {
	count := map[string]int{}
	for _, t := range pve.SplitTags(from) {
		count[t]--
	}
	for _, t := range pve.SplitTags(to) {
		count[t]++
	}
	var out []string
	for t, n := range count {
		if n != 0 {
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out
}
