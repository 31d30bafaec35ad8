package pvefields

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/vocab"
)

// RootOnlyNote explains Proxmox's root@pam restriction.
const RootOnlyNote = "Proxmox reserves them for root@pam logged in with a password and refuses them to API tokens, which proxmops uses; remove them from the manifest, or set them by hand as root@pam (proxmops then leaves them as they are)"

// ctFields are the managed fields of a Container, in the order their
// changes are listed. Defaults are pve-container's (PVE/LXC/Config.pm
// $confdesc); a running container takes the live keys at once and the
// others at its next restart (Config.pm update_pct_config's hotplug rules).
var ctFields = []row[*ctSpec]{
	{param: param{key: "hostname", path: "spec.hostname"}, want: func(s *ctSpec) (string, bool) { return s.Hostname, true }},
	{param: param{key: "cores", path: "spec.cores"}, want: func(s *ctSpec) (string, bool) { return positive(s.Cores) }},
	{param: param{key: "cpulimit", path: "spec.cpulimit", def: "0", same: SameFloat}, want: func(s *ctSpec) (string, bool) { return str(s.CPULimit) }},
	{param: param{key: "memory", path: "spec.memory", def: "512"}, want: func(s *ctSpec) (string, bool) { return positive(s.Memory) }},
	{param: param{key: "swap", path: "spec.swap", def: "512"}, want: func(s *ctSpec) (string, bool) { return intPtr(s.Swap) }},
	{param: param{key: "onboot", path: "spec.onboot", def: "0", same: SameBool}, want: func(s *ctSpec) (string, bool) { return boolPtr(s.OnBoot) }},
	{param: param{key: "startup", path: "spec.startup"}, want: func(s *ctSpec) (string, bool) { return str(s.Startup) }},
	{param: param{key: "timezone", path: "spec.timezone", takes: takesReboot}, want: func(s *ctSpec) (string, bool) { return str(s.Timezone) }},
	{param: param{key: "ostype", path: "spec.ostype", takes: takesReboot}, want: func(s *ctSpec) (string, bool) { return str(s.OSType) }},
	{param: param{key: "tags", path: "metadata.tags"}, each: func(s *ctSpec, x *fieldCtx) []param { return tagsParam(s.tags, x) }},
	{param: param{key: "description", path: "spec.description"}, each: func(s *ctSpec, x *fieldCtx) []param { return descParam(s.Description, x) }},
	{param: param{key: "nameserver", path: "spec.nameserver", takes: takesReboot, same: SameSpaced}, want: func(s *ctSpec) (string, bool) { return str(s.Nameserver) }},
	{param: param{key: "searchdomain", path: "spec.searchDomain", takes: takesReboot, same: SameSpaced}, want: func(s *ctSpec) (string, bool) { return str(s.SearchDomain) }},
	// Features other than nesting are root@pam's (LXC.pm check_ct_modify_config_perm).
	{param: param{key: "features", path: "spec.features", takes: takesReboot, delEmpty: true,
		same: func(h, w string) bool { return NormalFeatures(h) == NormalFeatures(w) },
		refuse: func(h, w string) string {
			if !changedRootOnly(h, w) {
				return ""
			}
			return fmt.Sprintf("features %s -> %s cannot be applied: features other than nesting need root@pam; %s", orUnset(h), orUnset(w), RootOnlyNote)
		}}, want: func(s *ctSpec) (string, bool) {
		if s.Features == nil {
			return "", false
		}
		return *s.Features, true
	}},
	{param: param{key: "unprivileged", path: "spec.unprivileged", createOnly: true, same: SameBool, show: func(v string) string { return FormatBool(ParseBool(v)) }},
		want: func(s *ctSpec) (string, bool) { return FormatBool(s.Unprivileged), true }},
	{param: param{key: "arch", path: "spec.arch", def: "amd64", createOnly: true}, want: func(s *ctSpec) (string, bool) { return str(s.Arch) }},
	// Never read back: set at the create only.
	{param: param{key: "ssh-public-keys", path: "spec.sshKeys", writeOnly: true, show: func(v string) string { return KeysSummary(NormalKeys(strings.Split(v, "\n"))) }},
		want: func(s *ctSpec) (string, bool) { return strings.Join(s.SSHKeys, "\n"), len(s.SSHKeys) > 0 }},
	{param: param{key: "password", path: "spec.passwordFrom", writeOnly: true, show: func(v string) string { return orEmpty(v, "(set)") }},
		want: func(s *ctSpec) (string, bool) { return s.Password, s.PasswordSet }},
	{param: param{path: "spec.rootfs"}, each: ctVolumes},
	{param: param{path: "spec.net"}, each: ctNICs, prune: "net"},
}

// ctVolumes: the root volume and the mount points, one slot each. A new
// mount point is allocated on a running container at once.
func ctVolumes(s *ctSpec, _ *fieldCtx) []param {
	var out []param
	for i, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
		if m.Slot == "" {
			continue
		}
		path := "spec.rootfs"
		if i > 0 {
			path = fmt.Sprintf("spec.mountpoints[%d]", i-1)
		}
		to := m.Storage + ":" + FormatSize(m.Size)
		if m.Bind != "" {
			to = m.Bind
		}
		if m.Path != "" {
			to += " on " + m.Path
		}
		out = append(out, param{key: m.Slot, path: path, want: volumeValue(m), to: to, async: m.Bind == "",
			add: func(_ *diffCtx, d *Diff) bool {
				if m.Bind == "" {
					return false
				}
				d.Refused = append(d.Refused, fmt.Sprintf("bind mount %s (%s on %s) cannot be added: %s", m.Slot, m.Bind, m.Path, RootOnlyNote))
				return true
			},
			diff: func(have string, x *diffCtx, d *Diff) { diffMount(m, path, have, x, d) }})
	}
	return out
}

// diffMount compares an existing root volume or mount point: its volume
// and storage are creation-only, its size only grows, its options change
// at the next restart; a bind mount is root@pam's.
func diffMount(m MountSpec, path, have string, x *diffCtx, d *Diff) {
	ps := pve.ParsePropertyString(have, "volume")
	vol := ps.Values["volume"]
	isBind := strings.HasPrefix(vol, "/")
	switch {
	case m.Bind != "" && vol != m.Bind, m.Bind == "" && isBind:
		d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: m.Slot + ".volume", From: vol, To: cmp.Or(m.Bind, m.Storage)})
		return
	case m.Bind == "" && StorageOf(vol) != m.Storage:
		d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: m.Slot + ".storage", From: StorageOf(vol), To: m.Storage})
	}
	if m.Bind == "" && m.Size > 0 {
		haveSize, _ := ParseSize(ps.Values["size"])
		switch {
		case haveSize > 0 && haveSize < m.Size:
			d.Resizes = append(d.Resizes, Resize{Slot: m.Slot, From: haveSize, To: m.Size})
		case haveSize > m.Size:
			d.RefuseShrink(m.Slot, m.Slot, haveSize, m.Size, "shrinking is not supported")
		}
	}
	want := pve.PropertyString{Keys: append([]string(nil), ps.Keys...), Values: map[string]string{}}
	for k, v := range ps.Values {
		want.Values[k] = v
	}
	if m.Path != "" {
		want.Set("mp", m.Path)
	}
	applyMountOptions(&want, m)
	var parts []vocab.Change
	for _, k := range []string{"mp", "ro", "backup", "shared", "mountoptions", "acl", "quota"} {
		a, b := ps.Values[k], want.Values[k]
		if k == "mountoptions" {
			a, b = NormalList(a), NormalList(b)
		}
		if k != "mp" && k != "mountoptions" {
			a, b = FormatBool(ParseBool(a)), FormatBool(ParseBool(b))
			if _, declared := want.Values[k]; !declared && k == "acl" {
				continue
			}
		}
		if a != b {
			parts = append(parts, vocab.Change{Field: m.Slot + "." + k, From: ps.Values[k], To: want.Values[k]})
		}
	}
	if len(parts) > 0 && isBind {
		d.Refused = append(d.Refused, fmt.Sprintf("bind mount %s cannot be changed: %s", m.Slot, RootOnlyNote))
		return
	}
	x.setParts(&param{key: m.Slot, path: path, want: want.String("volume"), takes: takesReboot}, parts, have, d)
}

// ctNICs: one net[n] per declared NIC; a change keeps hwaddr and type.
func ctNICs(s *ctSpec, _ *fieldCtx) []param {
	var out []param
	for i, n := range s.NICs {
		out = append(out, param{key: n.Slot, path: fmt.Sprintf("spec.net[%d]", i), want: nicCTValue(n, nil),
			parts: func(have string) []vocab.Change { return ctNICParts(n, pve.ParsePropertyString(have, "name")) },
			update: func(_, have string) string {
				ps := pve.ParsePropertyString(have, "name")
				return nicCTValue(n, &ps)
			}})
	}
	return out
}

// ctNICParts lists the declared keys of a container NIC that differ.
func ctNICParts(n CTNICSpec, ps pve.PropertyString) []vocab.Change {
	var out []vocab.Change
	cmp := func(k, want string, declared bool, same func(a, b string) bool) {
		if have := ps.Values[k]; declared && !same(have, want) {
			out = append(out, vocab.Change{Field: n.Slot + "." + k, From: have, To: want})
		}
	}
	eq := func(a, b string) bool { return a == b }
	tag := ""
	if n.Tag > 0 {
		tag = strconv.Itoa(n.Tag)
	}
	cmp("name", n.Name, true, eq)
	cmp("bridge", n.Bridge, true, eq)
	cmp("ip", n.IP, n.IP != "", strings.EqualFold)
	cmp("gw", n.Gw, n.Gw != "", eq)
	cmp("ip6", n.IP6, n.IP6 != "", strings.EqualFold)
	cmp("gw6", n.Gw6, n.Gw6 != "", strings.EqualFold)
	cmp("hwaddr", n.HWAddr, n.HWAddr != "", strings.EqualFold)
	cmp("mtu", strconv.Itoa(n.MTU), n.MTU > 0, eq)
	cmp("rate", n.Rate, n.Rate != "", SameFloat)
	cmp("tag", tag, true, eq)
	cmp("firewall", FormatBool(n.Firewall), true, SameBool)
	return out
}

// sizeGiB renders a size as the GiB number Proxmox allocates ("8", "0.5").
func sizeGiB(b int64) string {
	if b <= 0 {
		return "1"
	}
	return strconv.FormatFloat(float64(b)/float64(GiB), 'f', -1, 64)
}

// mountOptionsValue is Proxmox's mountoptions value ("noatime;nodev").
func mountOptionsValue(opts []string) string {
	o := slices.Sorted(slices.Values(opts))
	return strings.Join(o, ";")
}

// volumeValue renders a new rootfs or mount point for a create or an add.
func volumeValue(m MountSpec) string {
	ps := pve.PropertyString{}
	first := m.Storage + ":" + sizeGiB(m.Size)
	if m.Bind != "" {
		first = m.Bind
	}
	if m.Path != "" {
		ps.Set("mp", m.Path)
	}
	applyMountOptions(&ps, m)
	rest := ps.String("")
	if rest == "" {
		return first
	}
	return first + "," + rest
}

// applyMountOptions sets the option keys a MountSpec declares.
func applyMountOptions(ps *pve.PropertyString, m MountSpec) {
	set := func(k string, on bool) {
		if on {
			ps.Set(k, "1")
		} else {
			ps.Del(k)
		}
	}
	if m.Slot != "rootfs" {
		set("ro", m.ReadOnly)
		if m.Bind == "" {
			set("backup", m.Backup)
		} else {
			set("shared", m.Shared)
		}
	}
	if len(m.MountOptions) > 0 {
		ps.Set("mountoptions", mountOptionsValue(m.MountOptions))
	}
	if m.ACL != nil {
		ps.Set("acl", FormatBool(*m.ACL))
	}
	if m.Quota {
		ps.Set("quota", "1")
	}
}

// nicCTValue renders a container NIC, keeping what an existing one has
// (hwaddr, type) unless declared otherwise.
func nicCTValue(n CTNICSpec, existing *pve.PropertyString) string {
	ps := pve.PropertyString{}
	if existing != nil {
		for _, k := range existing.Keys {
			ps.Set(k, existing.Values[k])
		}
	}
	ps.Set("name", n.Name)
	ps.Set("bridge", n.Bridge)
	opt := func(k, v string) {
		if v != "" {
			ps.Set(k, v)
		}
	}
	opt("ip", n.IP)
	opt("gw", n.Gw)
	opt("ip6", n.IP6)
	opt("gw6", n.Gw6)
	opt("hwaddr", n.HWAddr)
	if n.MTU > 0 {
		ps.Set("mtu", strconv.Itoa(n.MTU))
	}
	opt("rate", n.Rate)
	if n.Tag > 0 {
		ps.Set("tag", strconv.Itoa(n.Tag))
	} else {
		ps.Del("tag")
	}
	if n.Firewall {
		ps.Set("firewall", "1")
	} else {
		ps.Del("firewall")
	}
	// name first, as Proxmox requires for a new NIC.
	out := "name=" + n.Name
	for _, k := range ps.Keys {
		if k != "name" {
			out += "," + k + "=" + ps.Values[k]
		}
	}
	return out
}

func orUnset(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// changedRootOnly reports whether going from one features value to another
// changes a feature other than nesting.
func changedRootOnly(from, to string) bool {
	strip := func(v string) string {
		var keep []string
		for _, p := range strings.Split(NormalFeatures(v), ",") {
			if p != "" && !strings.HasPrefix(p, "nesting=") {
				keep = append(keep, p)
			}
		}
		return strings.Join(keep, ",")
	}
	return strip(from) != strip(to)
}

// ctSpec is what ctFields read: a container's configuration and its tags.
type ctSpec struct {
	*ContainerConfig
	tags []string
}

// DiffCT compares a container's configuration c and tags with its
// effective configuration, row by row of ctFields.
func DiffCT(c *ContainerConfig, tags []string, o Observed) *Diff {
	d := &Diff{managed: map[string]*param{}}
	diffTable(ctFields, &ctSpec{c, tags}, o.fieldCtx(), &diffCtx{eff: o.Effective, gate: o.Running}, d)
	d.Pending = pendingOf(&o, d)
	return d
}

// CTCreateParams renders a container into the parameters of POST /lxc,
// from ctFields.
func CTCreateParams(c *ContainerConfig, tags []string, vmid int, p *pve.Params) {
	createParamsOf(params(ctFields, &ctSpec{c, tags}, &fieldCtx{vmid: vmid}), p)
}

// CTPreview lists a container's declared fields for the preview of its
// create.
func CTPreview(c *ContainerConfig, tags []string, vmid int) []vocab.Change {
	return previewOf(params(ctFields, &ctSpec{c, tags}, &fieldCtx{vmid: vmid}))
}
