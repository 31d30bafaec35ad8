package manifest

import (
	"fmt"
	"maps"
	"net/netip"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/vocab"
)

// checker runs the per-document rules that a type and its tags cannot say
// (mutually exclusive fields, slots, defaults), locating errors by path in
// the document's YAML tree.
type checker struct {
	root *yNode
	errs []posError
}

func (c *checker) errorf(path, format string, args ...any) {
	n := c.root.at(path)
	c.errs = append(c.errs, posError{line: n.line, col: n.col, path: path, msg: fmt.Sprintf(format, args...)})
}

func (c *checker) has(path string) bool {
	_, ok := c.root.find(path)
	return ok
}

// keepLocs remembers the positions the cross-document checks need.
func (c *checker) keepLocs(r Resource) []loc {
	paths := []string{"metadata.name", "metadata", "spec.vmid", "spec.tag", "spec"}
	for _, ref := range r.References() {
		paths = append(paths, ref.Path)
	}
	paths = append(paths, provisionLocs(r)...)
	out := make([]loc, 0, len(paths))
	for _, p := range paths {
		n := c.root.at(p)
		out = append(out, loc{path: p, line: n.line, col: n.col})
	}
	return out
}

// checkResource validates one decoded resource, fills defaults and slots,
// and records its (still unresolved) references.
func checkResource(r Resource, c *checker) {
	checkMetadata(r, c)
	// Each kind's own checks are its check method (in the kind's file).
	if k, ok := r.(interface{ check(*checker) }); ok {
		k.check(c)
	}
	addStorageRefs(r)
}

// flagAnnotations are the true/false annotations that only the kinds their
// KindInfo row allows take.
var flagAnnotations = map[string]struct {
	takes   func(KindInfo) bool
	refusal string // the problem on another kind: the kinds that take it, the kind
}{
	AnnotationAdopt:   {func(i KindInfo) bool { return i.Adoptable }, "adoption applies to %s, not %s"},
	AnnotationReplace: {func(i KindInfo) bool { return i.Replaceable }, "replacement applies to %s (a change of a field fixed at creation), not %s"},
}

func checkMetadata(r Resource, c *checker) {
	m := r.Meta()
	info := r.Kind().Info()
	if info.Name != nil && m.Name != "" {
		if err := info.Name.Check(m.Name); err != nil {
			c.errorf("metadata.name", "%v", err)
		}
	}
	if info.Tagless && len(m.Tags) > 0 {
		if info.CommentMark {
			c.errorf("metadata.tags", "%s has no Proxmox tags; proxmops marks its comment", r.Kind())
		} else {
			c.errorf("metadata.tags", "%s has no Proxmox tags", r.Kind())
		}
	}
	switch r.Kind().Info().Node {
	case NodeNone:
		if m.Node != "" {
			c.errorf("metadata.node", "%s is cluster-wide; remove metadata.node", r.Kind())
		}
	case NodeOrSpec:
		// node may come from spec.node; checked by the kind.
	default:
		if m.Node == "" && c.root.at("metadata").kind == mapNode {
			c.errorf("metadata", "missing required field `node` (the target node)")
		}
	}
	checkDependsOn(r, c)
	seen := map[string]bool{}
	for i, t := range m.Tags {
		if seen[lower(t)] {
			c.errorf(indexPath("metadata.tags", i), "duplicate tag %q", t)
		}
		seen[lower(t)] = true
	}
	for _, k := range slices.Sorted(maps.Keys(m.Annotations)) {
		v := m.Annotations[k]
		p := joinPath("metadata.annotations", k)
		if k == AnnotationSync {
			allowed := make([]string, 0, len(vocab.SyncPolicies))
			for _, sp := range vocab.SyncPolicies {
				allowed = append(allowed, sp.String())
			}
			if !slices.Contains(allowed, v) {
				c.errorf(p, "%q is not one of auto, manual, disabled%s", v, didYouMean(v, allowed))
			}
			continue
		}
		if f, ok := flagAnnotations[k]; ok {
			if v != "true" && v != "false" {
				c.errorf(p, "%q is not one of true, false", v)
			}
			if !f.takes(info) {
				c.errorf(p, f.refusal, KindNames(f.takes), r.Kind())
			}
			continue
		}
		if strings.HasPrefix(k, "proxmops.dev/") {
			c.errorf(p, "unknown annotation %q%s", k, didYouMean(k, []string{AnnotationSync, AnnotationAdopt, AnnotationReplace}))
		}
	}
}

// refsOf lets checks add references.
func addRef(r Resource, ref Ref) {
	o := objectOf(r)
	o.Refs = append(o.Refs, ref)
}

func checkGuestCommon(r Resource, c *checker, image *Image, disks []Disk, nets []NIC, ci *CloudInit, hasBase bool, description string) {
	if image != nil {
		checkImage(image, c, "spec.image")
	}
	assignDiskSlots(disks, c)
	for i := range disks {
		p := indexPath("spec.disks", i)
		if disks[i].Size.IsZero() && !(i == 0 && hasBase) {
			c.errorf(p, "missing required field `size` (only the first disk of an imported image or a clone may omit it)")
		}
	}
	assignNICSlots(nets, c)
	for i := range nets {
		n := &nets[i]
		if n.Model == "" {
			n.Model = DefaultNICModel
		}
		if n.MTU != 0 && n.Model != "virtio" {
			c.errorf(indexPath("spec.net", i)+".mtu", "mtu is only supported by the virtio model")
		}
		addRef(r, Ref{Kind: KindNetwork, Name: n.Bridge, Path: indexPath("spec.net", i) + ".bridge"})
	}
	if ci != nil {
		checkCloudInit(ci, nets, c)
	}
	checkDescription(description, max(len(disks), 1), c)
}

// guest is a kind with a power state and provisioning: VirtualMachine
// and Container.
type guest interface {
	Resource
	ProvisionTarget() (addr string, port int, user string, ok bool)
}

// checkGuestPlacement checks a guest's pool and HA resource (against the
// power state as written, before checkGuestRun fills its default).
func checkGuestPlacement(g guest, pool string, ha *GuestHA, state PowerState, c *checker) {
	if pool != "" {
		addRef(g, Ref{Kind: KindPool, Name: pool, Path: "spec.pool"})
	}
	checkGuestHA(ha, state, c)
}

// checkGuestRun checks a guest's provisioning and health check (agent: the
// guest agent is enabled, VMs only) and fills the defaults of its power
// state and apply mode.
func checkGuestRun(g guest, p *Provision, state *PowerState, mode *ApplyMode, agent bool, c *checker) {
	if p != nil {
		addr, _, _, _ := g.ProvisionTarget()
		checkProvision(p, c, addr)
	}
	if h, addr := HealthCheckOf(g); h != nil {
		_, vm := g.(*VirtualMachine)
		checkHealthCheck(h, c, vm, agent, addr)
	}
	if *state == "" {
		*state = StateRunning
	}
	if *mode == "" {
		*mode = ApplyPending
	}
}

func (v *VirtualMachine) check(c *checker) {
	s := &v.Spec
	checkGuestPlacement(v, s.Pool, s.HA, s.State, c)
	if s.Image != nil && s.FromTemplate != nil {
		c.errorf("spec.fromTemplate", "image and fromTemplate are mutually exclusive")
	}
	if s.UserData != "" {
		if s.CloudInit != nil {
			c.errorf("spec.userData", "userData and cloudInit are mutually exclusive (both drive the cloud-init disk)")
		}
		if s.ISO != "" {
			c.errorf("spec.userData", "userData and iso are mutually exclusive (both use the cdrom drive)")
		}
	} else if c.has("spec.userData") {
		c.errorf("spec.userData", "must not be empty")
	}
	checkGuestCommon(v, c, s.Image, s.Disks, s.Net, s.CloudInit, s.Image != nil || s.FromTemplate != nil, s.Description)
	checkGuestFirewall(v, s.Firewall, c)
	if s.FromTemplate != nil {
		addRef(v, Ref{Kind: KindTemplate, Name: s.FromTemplate.Name, Path: "spec.fromTemplate"})
	}
	if s.ISO != "" {
		if strings.Contains(s.ISO, ":") {
			if err := checkFormat("volume-id", s.ISO); err != nil {
				c.errorf("spec.iso", "%v", err)
			} else {
				addRef(v, Ref{Kind: KindIso, Name: s.ISO, Path: "spec.iso", Volume: true})
			}
		} else if err := checkFormat("dns-label", s.ISO); err != nil {
			c.errorf("spec.iso", "%q is neither an Iso resource's name nor a volume ID (storage:iso/file.iso)", s.ISO)
		} else {
			addRef(v, Ref{Kind: KindIso, Name: s.ISO, Path: "spec.iso"})
		}
	}
	if s.Balloon != nil && s.Memory > 0 && *s.Balloon > s.Memory {
		c.errorf("spec.balloon", "balloon (%d MiB) is larger than memory (%d MiB)", *s.Balloon, s.Memory)
	}
	checkGuestRun(v, s.Provision, &s.State, &s.ApplyMode, s.Agent != nil && *s.Agent, c)
}

func (t *Template) check(c *checker) {
	s := &t.Spec
	checkGuestCommon(t, c, s.Image, s.Disks, s.Net, s.CloudInit, s.Image != nil, s.Description)
}

var diskImageExt = regexp.MustCompile(`\.(qcow2|raw|vmdk)$`)

// compressedExt returns the compression suffix of a file name (".xz"), or
// "": pve-storage's download-url decompresses ISOs only.
func compressedExt(name string) string {
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case ".xz", ".gz", ".bz2", ".zst", ".zstd", ".lz4", ".lzma", ".lzo", ".zip", ".7z", ".tgz", ".z":
		return ext
	}
	return ""
}

func checkImage(img *Image, c *checker, p string) {
	switch {
	case strings.HasPrefix(img.Source, "http://") || strings.HasPrefix(img.Source, "https://"):
		if err := checkFormat("http-url", img.Source); err != nil {
			c.errorf(p+".source", "%v", err)
			return
		}
		img.Type = ImageURL
		name := img.FileName()
		if ext := compressedExt(urlBase(img.Source)); ext != "" {
			c.errorf(p+".source", "the image is compressed (%s): Proxmox stores import images as downloaded and cannot import a compressed one; use the uncompressed .qcow2, .raw or .vmdk image", ext)
		}
		if m := diskImageExt.FindStringSubmatch(img.Filename); img.Filename != "" && m == nil {
			c.errorf(p+".filename", "%q must end in .qcow2, .raw or .vmdk (the names Proxmox imports)", img.Filename)
		} else if img.Filename != "" && img.Format != "" && m[1] != img.Format {
			c.errorf(p+".filename", "%q names a %s image but image.format is %s", img.Filename, m[1], img.Format)
		} else if name == "" {
			c.errorf(p+".source", "the URL has no file name; set image.filename")
		}
		if img.Checksum != nil {
			checkChecksum(img.Checksum, c, p+".checksum")
		}
	case strings.Contains(img.Source, ":") && !strings.Contains(img.Source, "://"):
		if err := checkFormat("volume-id", img.Source); err != nil {
			c.errorf(p+".source", "%v", err)
			return
		}
		img.Type = ImageVolume
		for _, f := range []struct {
			name string
			set  bool
		}{{"storage", img.Storage != ""}, {"filename", img.Filename != ""}, {"format", img.Format != ""}, {"checksum", img.Checksum != nil}} {
			if f.set {
				c.errorf(p+"."+f.name, "%s applies only to an image downloaded from a URL", f.name)
			}
		}
	default:
		c.errorf(p+".source", "%q is neither an http(s) URL nor a volume ID such as local:import/debian-12.qcow2", img.Source)
	}
}

func checkChecksum(ck *Checksum, c *checker, p string) {
	if want, ok := checksumLen[ck.Algo]; ok && ck.Value != "" && len(ck.Value) != want {
		c.errorf(p+".value", "a %s checksum has %d hex digits, this one has %d", ck.Algo, want, len(ck.Value))
	}
}

// slotIndex splits "scsi12" into ("scsi", 12).
func slotIndex(slot string) (string, int) {
	i := len(slot)
	for i > 0 && slot[i-1] >= '0' && slot[i-1] <= '9' {
		i--
	}
	n, _ := strconv.Atoi(slot[i:])
	return slot[:i], n
}

// assignSlots gives entries without an explicit slot the lowest free
// prefixN, in list order, and reports duplicates.
func assignSlots(n int, get func(int) *string, prefix string, limit int, listPath string, c *checker) {
	used := map[string]int{}
	for i := range n {
		s := get(i)
		if *s == "" {
			continue
		}
		if first, dup := used[*s]; dup {
			c.errorf(indexPath(listPath, i)+".slot", "slot %s is already used by %s", *s, indexPath(listPath, first))
			continue
		}
		used[*s] = i
	}
	next := 0
	for i := range n {
		s := get(i)
		if *s != "" {
			continue
		}
		for next <= limit {
			if _, taken := used[prefix+strconv.Itoa(next)]; !taken {
				break
			}
			next++
		}
		if next > limit {
			c.errorf(indexPath(listPath, i), "no free %s slot left (%s0-%s%d)", prefix, prefix, prefix, limit)
			return
		}
		*s = prefix + strconv.Itoa(next)
		used[*s] = i
	}
}

func assignDiskSlots(disks []Disk, c *checker) {
	assignSlots(len(disks), func(i int) *string { return &disks[i].Slot }, "scsi", 30, "spec.disks", c)
}

func assignNICSlots(nets []NIC, c *checker) {
	assignSlots(len(nets), func(i int) *string { return &nets[i].Slot }, "net", 31, "spec.net", c)
}

func checkSecretRef(s *SecretRef, c *checker, p string) {
	if (s.Env == "") == (s.File == "") {
		c.errorf(p, "give exactly one of env and file")
	}
}

func checkAddressList(v string, c *checker, p string) {
	for part := range strings.FieldsSeq(strings.ReplaceAll(v, ",", " ")) {
		if _, err := netip.ParseAddr(part); err != nil {
			c.errorf(p, "%q is not an IP address", part)
		}
	}
}

func checkDomainList(v string, c *checker, p string) {
	for part := range strings.FieldsSeq(strings.ReplaceAll(v, ",", " ")) {
		if err := checkFormat("dns-name", part); err != nil {
			c.errorf(p, "%v", err)
		}
	}
}

func checkCloudInit(ci *CloudInit, nets []NIC, c *checker) {
	if ci.PasswordFrom != nil {
		checkSecretRef(ci.PasswordFrom, c, "spec.cloudInit.passwordFrom")
	}
	checkAddressList(ci.Nameserver, c, "spec.cloudInit.nameserver")
	checkDomainList(ci.SearchDomain, c, "spec.cloudInit.searchDomain")
	ipSlot := ""
	if ci.IP != "" {
		if _, err := ParseIPShorthand(ci.IP); err != nil {
			c.errorf("spec.cloudInit.ip", "%v", err)
		}
		ipSlot = "net0"
	}
	// Reserve net0 for the ip shorthand while slots are assigned.
	slots := make([]*string, 0, len(ci.IPConfigs)+1)
	reserved := ipSlot
	for i := range ci.IPConfigs {
		slots = append(slots, &ci.IPConfigs[i].Slot)
	}
	if reserved != "" {
		slots = append(slots, &reserved)
	}
	assignSlots(len(slots), func(i int) *string { return slots[i] }, "net", 31, "spec.cloudInit.ipConfigs", c)
	declared := map[string]bool{}
	for _, n := range nets {
		declared[n.Slot] = true
	}
	for i, ic := range ci.IPConfigs {
		p := indexPath("spec.cloudInit.ipConfigs", i)
		if ic.Slot == ipSlot && ipSlot != "" && c.has(p+".slot") {
			c.errorf(p+".slot", "net0 is already configured by cloudInit.ip")
		}
		if ic.IP == "" && ic.IP6 == "" {
			c.errorf(p, "set ip or ip6")
		}
		checkGateway(ic.IP, ic.Gw, c, p+".gw")
		checkGateway(ic.IP6, ic.Gw6, c, p+".gw6")
		if len(nets) > 0 && ic.Slot != "" && !declared[ic.Slot] {
			c.errorf(p, "no NIC in slot %s (spec.net declares %s)", ic.Slot, strings.Join(slices.Sorted(maps.Keys(declared)), ", "))
		}
	}
}

// checkGateway refuses a gateway without a static address of the same family.
func checkGateway(ip, gw string, c *checker, p string) {
	if gw == "" {
		return
	}
	pfx, err := netip.ParsePrefix(ip)
	if err != nil {
		c.errorf(p, "a gateway needs a static address (not %q)", ip)
		return
	}
	if a, err := netip.ParseAddr(gw); err == nil && a.Is4() != pfx.Addr().Is4() {
		c.errorf(p, "gateway %s is not of the address's family", gw)
	}
}

var isoExt = regexp.MustCompile(`\.(iso|img)$`)

func foldNode(r Resource, specNode string, c *checker) {
	m := r.Meta()
	switch {
	case specNode != "" && m.Node != "" && specNode != m.Node:
		c.errorf("spec.node", "spec.node %q differs from metadata.node %q; give one of them", specNode, m.Node)
	case specNode != "":
		m.Node = specNode
	case m.Node == "":
		c.errorf("spec", "missing the target node: set metadata.node (or spec.node)")
	}
}

func (i *Iso) check(c *checker) {
	foldNode(i, i.Spec.Node, c)
	i.Spec.Node = ""
	name := i.FileName()
	switch {
	case i.Spec.Filename != "" && !isoExt.MatchString(i.Spec.Filename):
		c.errorf("spec.filename", "%q must end in .iso or .img (Proxmox's iso content)", i.Spec.Filename)
	case i.Spec.Filename == "" && i.Spec.Source != "" && !isoExt.MatchString(name):
		c.errorf("spec.source", "the URL's file name %q does not end in .iso or .img; set spec.filename", name)
	}
	if i.Spec.Checksum != nil {
		checkChecksum(i.Spec.Checksum, c, "spec.checksum")
	}
}

var vztmplExt = regexp.MustCompile(`\.(tar\.(gz|xz|zst|bz2)|tgz)$`)

// appliancePackage is an appliance's package name without version, e.g.
// debian-12-standard: the newest version in the catalogue is meant.
var appliancePackage = regexp.MustCompile(`^[a-z0-9][a-z0-9.+-]*$`)

func (t *ContainerTemplate) check(c *checker) {
	s := &t.Spec
	foldNode(t, s.Node, c)
	s.Node = ""
	switch {
	case s.Appliance != "" && s.Source != "":
		c.errorf("spec.source", "appliance and source are mutually exclusive")
	case s.Appliance == "" && s.Source == "":
		c.errorf("spec", "set appliance (a Proxmox appliance template) or source (a URL)")
	case s.Appliance != "":
		if !vztmplExt.MatchString(s.Appliance) && !appliancePackage.MatchString(s.Appliance) {
			c.errorf("spec.appliance", "%q is not an appliance file name (e.g. debian-12-standard_12.7-1_amd64.tar.zst) or package name (e.g. debian-12-standard)", s.Appliance)
		}
		if s.Filename != "" {
			c.errorf("spec.filename", "filename applies only to a source download")
		}
		if s.Checksum != nil {
			c.errorf("spec.checksum", "checksum applies only to a source download (Proxmox verifies appliances itself)")
		}
	default:
		if !vztmplExt.MatchString(t.FileName()) {
			c.errorf(cmpPath(s.Filename != "", "spec.filename", "spec.source"), "file name %q must end in .tar.gz, .tar.xz, .tar.zst or .tar.bz2", t.FileName())
		}
		if s.Checksum != nil {
			checkChecksum(s.Checksum, c, "spec.checksum")
		}
	}
}

func cmpPath(cond bool, a, b string) string {
	if cond {
		return a
	}
	return b
}

func (ct *Container) check(c *checker) {
	s := &ct.Spec
	checkGuestPlacement(ct, s.Pool, s.HA, s.State, c)
	if strings.ContainsAny(s.Template, " \t\n") {
		c.errorf("spec.template", "%q is not a template name or volume ID", s.Template)
	} else if strings.Contains(s.Template, ":") {
		if err := checkFormat("volume-id", s.Template); err != nil {
			c.errorf("spec.template", "%v", err)
		} else {
			addRef(ct, Ref{Kind: KindContainerTemplate, Name: s.Template, Path: "spec.template", Volume: true})
		}
	} else if s.Template != "" {
		addRef(ct, Ref{Kind: KindContainerTemplate, Name: s.Template, Path: "spec.template"})
	}
	checkGuestFirewall(ct, s.Firewall, c)
	if s.Unprivileged == nil {
		t := true
		s.Unprivileged = &t
	}
	if s.Features != nil && s.Features.Keyctl && !*s.Unprivileged {
		c.errorf("spec.features.keyctl", "keyctl is for unprivileged containers only")
	}
	assignSlots(len(s.Mountpoints), func(i int) *string { return &s.Mountpoints[i].Slot }, "mp", 255, "spec.mountpoints", c)
	paths := map[string]int{}
	for i := range s.Mountpoints {
		m := &s.Mountpoints[i]
		p := indexPath("spec.mountpoints", i)
		switch {
		case m.Storage != "" && m.Bind != "":
			c.errorf(p+".bind", "storage and bind are mutually exclusive")
		case m.Storage == "" && m.Bind == "":
			c.errorf(p, "set storage and size (a new volume) or bind (a host directory)")
		case m.Storage != "" && m.Size.IsZero():
			c.errorf(p, "missing required field `size` for a storage-backed mount point")
		case m.Bind != "" && !m.Size.IsZero():
			c.errorf(p+".size", "a bind mount has no size")
		case m.Bind != "" && m.Backup:
			c.errorf(p+".backup", "bind mounts are never backed up by Proxmox")
		}
		if m.Path == "/" {
			c.errorf(p+".path", "/ is the rootfs")
		}
		if first, dup := paths[m.Path]; dup && m.Path != "" {
			c.errorf(p+".path", "path %s is already mounted by %s", m.Path, indexPath("spec.mountpoints", first))
		}
		paths[m.Path] = i
	}
	assignSlots(len(s.Net), func(i int) *string { return &s.Net[i].Slot }, "net", 31, "spec.net", c)
	names := map[string]int{}
	for i := range s.Net {
		n := &s.Net[i]
		p := indexPath("spec.net", i)
		if n.Name == "" && n.Slot != "" {
			_, idx := slotIndex(n.Slot)
			n.Name = "eth" + strconv.Itoa(idx)
		}
		if first, dup := names[n.Name]; dup {
			c.errorf(p+".name", "interface name %s is already used by %s", n.Name, indexPath("spec.net", first))
		}
		names[n.Name] = i
		checkGateway(n.IP, n.Gw, c, p+".gw")
		checkGateway(n.IP6, n.Gw6, c, p+".gw6")
		addRef(ct, Ref{Kind: KindNetwork, Name: n.Bridge, Path: p + ".bridge"})
	}
	if s.PasswordFrom != nil {
		checkSecretRef(s.PasswordFrom, c, "spec.passwordFrom")
	}
	checkAddressList(s.Nameserver, c, "spec.nameserver")
	checkDomainList(s.SearchDomain, c, "spec.searchDomain")
	checkDescription(s.Description, 1+len(s.Mountpoints), c)
	checkGuestRun(ct, s.Provision, &s.State, &s.ApplyMode, false, c)
}

// check records a nested pool's parent (pve-poolid "parent/child"): a
// declared parent is created first.
func (p *Pool) check(*checker) {
	if i := strings.LastIndex(p.Name(), "/"); i > 0 {
		addRef(p, Ref{Kind: KindPool, Name: p.Name()[:i], Path: "metadata.name"})
	}
}

func (n *Network) check(c *checker) {
	s := &n.Spec
	if s.Iface == "" {
		if err := checkFormat("iface", n.Metadata.Name); err != nil && n.Metadata.Name != "" {
			c.errorf("spec", "missing field `iface`: metadata.name %q is not an interface name", n.Metadata.Name)
		}
	}
	iface := n.InterfaceName()
	only := func(field, typ string) {
		c.errorf("spec."+field, "%s applies only to type %s", field, typ)
	}
	if s.Type != "bridge" {
		if s.VLANAware {
			only("vlanAware", "bridge")
		}
		if s.VLANIDs != "" {
			only("vlanIds", "bridge")
		}
	}
	if s.VLANIDs != "" && !s.VLANAware {
		c.errorf("spec.vlanIds", "vlanIds needs vlanAware: true")
	}
	if s.Type != "bond" {
		for _, f := range []struct {
			name string
			set  bool
		}{{"bondMode", s.BondMode != ""}, {"hashPolicy", s.HashPolicy != ""}, {"bondPrimary", s.BondPrimary != ""}} {
			if f.set {
				only(f.name, "bond")
			}
		}
	}
	if s.Type != "vlan" {
		if s.VLANID != 0 {
			only("vlanId", "vlan")
		}
		if s.VLANRawDevice != "" {
			only("vlanRawDevice", "vlan")
		}
	}
	switch s.Type {
	case "bond":
		if len(s.Ports) == 0 {
			c.errorf("spec", "a bond needs ports (its member interfaces)")
		}
		if s.HashPolicy != "" && s.BondMode != "balance-xor" && s.BondMode != "802.3ad" {
			c.errorf("spec.hashPolicy", "hashPolicy applies only to bondMode balance-xor and 802.3ad")
		}
		if s.BondPrimary != "" {
			if s.BondMode != "active-backup" {
				c.errorf("spec.bondPrimary", "bondPrimary applies only to bondMode active-backup")
			} else if !slices.Contains(s.Ports, s.BondPrimary) {
				c.errorf("spec.bondPrimary", "%s is not one of the bond's ports", s.BondPrimary)
			}
		}
	case "vlan":
		if len(s.Ports) > 0 {
			c.errorf("spec.ports", "a vlan interface has no ports; set vlanRawDevice")
		}
		base, tag, dotted := strings.Cut(iface, ".")
		if !dotted && (s.VLANID == 0 || s.VLANRawDevice == "") {
			c.errorf("spec", "a vlan interface named %q needs vlanId and vlanRawDevice (or a name such as vmbr0.30)", iface)
		}
		if dotted {
			if t, err := strconv.Atoi(tag); err != nil || t < 1 || t > 4094 {
				c.errorf("spec.iface", "VLAN tag %q in %q is not 1-4094", tag, iface)
			} else if s.VLANID != 0 && s.VLANID != t {
				c.errorf("spec.vlanId", "vlanId %d differs from the tag in the name %q", s.VLANID, iface)
			}
			if s.VLANRawDevice != "" && s.VLANRawDevice != base {
				c.errorf("spec.vlanRawDevice", "vlanRawDevice %q differs from the name %q", s.VLANRawDevice, iface)
			}
		}
		if s.VLANRawDevice != "" {
			addRef(n, Ref{Kind: KindNetwork, Name: s.VLANRawDevice, Path: "spec.vlanRawDevice"})
		} else if dotted {
			addRef(n, Ref{Kind: KindNetwork, Name: base, Path: "spec.iface"})
		}
	}
	for i, p := range s.Ports {
		if p == iface {
			c.errorf(indexPath("spec.ports", i), "an interface cannot be its own port")
		}
		addRef(n, Ref{Kind: KindNetwork, Name: p, Path: indexPath("spec.ports", i)})
	}
	checkGateway(s.CIDR, s.Gateway, c, "spec.gateway")
	checkGateway(s.CIDR6, s.Gateway6, c, "spec.gateway6")
	if s.Autostart == nil {
		t := true
		s.Autostart = &t
	}
}

func (z *SdnZone) check(c *checker) {
	s := &z.Spec
	type field struct {
		name string
		set  bool
	}
	fields := map[string]field{
		"bridge":           {"bridge", s.Bridge != ""},
		"tag":              {"tag", s.Tag != 0},
		"vlanProtocol":     {"vlanProtocol", s.VLANProtocol != ""},
		"peers":            {"peers", len(s.Peers) > 0},
		"controller":       {"controller", s.Controller != ""},
		"vrfVxlan":         {"vrfVxlan", s.VRFVXLAN != 0},
		"exitNodes":        {"exitNodes", len(s.ExitNodes) > 0},
		"advertiseSubnets": {"advertiseSubnets", s.AdvertiseSubnets},
		"dhcp":             {"dhcp", s.DHCP != ""},
	}
	allowed := map[string][]string{
		"simple": {"dhcp"},
		"vlan":   {"bridge"},
		"qinq":   {"bridge", "tag", "vlanProtocol"},
		"vxlan":  {"peers"},
		"evpn":   {"controller", "vrfVxlan", "exitNodes", "advertiseSubnets", "dhcp"},
	}
	required := map[string][]string{
		"vlan":  {"bridge"},
		"qinq":  {"bridge", "tag"},
		"vxlan": {"peers"},
		"evpn":  {"controller", "vrfVxlan"},
	}
	ok, known := allowed[s.Type]
	if !known {
		return
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		f := fields[name]
		if f.set && !slices.Contains(ok, name) {
			c.errorf("spec."+name, "%s does not apply to %s zones", name, s.Type)
		}
	}
	for _, name := range required[s.Type] {
		if !fields[name].set {
			c.errorf("spec", "a %s zone needs `%s`", s.Type, name)
		}
	}
}

func (v *SdnVnet) check(c *checker) {
	s := &v.Spec
	if s.Zone != "" {
		addRef(v, Ref{Kind: KindSdnZone, Name: s.Zone, Path: "spec.zone"})
	}
	subnets := map[netip.Prefix]int{}
	for i, sn := range s.Subnets {
		p := indexPath("spec.subnets", i)
		pfx, err := netip.ParsePrefix(sn.Subnet)
		if err != nil {
			continue // reported by the format check
		}
		if pfx.Masked() != pfx {
			c.errorf(p+".subnet", "%s has host bits set; the network is %s", sn.Subnet, pfx.Masked())
		}
		if first, dup := subnets[pfx.Masked()]; dup {
			c.errorf(p+".subnet", "subnet %s is already declared by %s", sn.Subnet, indexPath("spec.subnets", first))
		}
		subnets[pfx.Masked()] = i
		inside := func(field, addr string) {
			if a, err := netip.ParseAddr(addr); err == nil && !pfx.Contains(a) {
				c.errorf(p+"."+field, "%s is outside %s", addr, sn.Subnet)
			}
		}
		if sn.Gateway != "" {
			inside("gateway", sn.Gateway)
		}
		for j, r := range sn.DHCPRange {
			rp := indexPath(p+".dhcpRange", j)
			inside(strings.TrimPrefix(rp, p+".")+".start", r.Start)
			inside(strings.TrimPrefix(rp, p+".")+".end", r.End)
			a, errA := netip.ParseAddr(r.Start)
			b, errB := netip.ParseAddr(r.End)
			if errA == nil && errB == nil && b.Less(a) {
				c.errorf(rp, "start %s is after end %s", r.Start, r.End)
			}
		}
	}
}
