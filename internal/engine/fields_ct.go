package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// ctFields are the managed fields of a Container, in the order their
// changes are listed. Defaults are pve-container's (PVE/LXC/Config.pm
// $confdesc); a running container takes the live keys at once and the
// others at its next restart (Config.pm update_pct_config's hotplug rules).
var ctFields = []row[*ContainerSpec]{
	{param: param{key: "hostname", path: "spec.hostname"}, want: func(s *ContainerSpec) (string, bool) { return s.Hostname, true }},
	{param: param{key: "cores", path: "spec.cores"}, want: func(s *ContainerSpec) (string, bool) { return positive(s.Cores) }},
	{param: param{key: "cpulimit", path: "spec.cpulimit", def: "0", same: pvefields.SameFloat}, want: func(s *ContainerSpec) (string, bool) { return str(s.CPULimit) }},
	{param: param{key: "memory", path: "spec.memory", def: "512"}, want: func(s *ContainerSpec) (string, bool) { return positive(s.Memory) }},
	{param: param{key: "swap", path: "spec.swap", def: "512"}, want: func(s *ContainerSpec) (string, bool) { return intPtr(s.Swap) }},
	{param: param{key: "onboot", path: "spec.onboot", def: "0", same: pvefields.SameBool}, want: func(s *ContainerSpec) (string, bool) { return boolPtr(s.OnBoot) }},
	{param: param{key: "startup", path: "spec.startup"}, want: func(s *ContainerSpec) (string, bool) { return str(s.Startup) }},
	{param: param{key: "timezone", path: "spec.timezone", takes: takesReboot}, want: func(s *ContainerSpec) (string, bool) { return str(s.Timezone) }},
	{param: param{key: "ostype", path: "spec.ostype", takes: takesReboot}, want: func(s *ContainerSpec) (string, bool) { return str(s.OSType) }},
	{param: param{key: "tags", path: "metadata.tags"}, each: func(s *ContainerSpec, x *fieldCtx) []param { return tagsParam(s.Tags, x) }},
	{param: param{key: "description", path: "spec.description"}, each: func(s *ContainerSpec, x *fieldCtx) []param { return descParam(s.Description, x) }},
	{param: param{key: "nameserver", path: "spec.nameserver", takes: takesReboot, same: pvefields.SameSpaced}, want: func(s *ContainerSpec) (string, bool) { return str(s.Nameserver) }},
	{param: param{key: "searchdomain", path: "spec.searchDomain", takes: takesReboot, same: pvefields.SameSpaced}, want: func(s *ContainerSpec) (string, bool) { return str(s.SearchDomain) }},
	// Features other than nesting are root@pam's (LXC.pm check_ct_modify_config_perm).
	{param: param{key: "features", path: "spec.features", takes: takesReboot, delEmpty: true,
		same: func(h, w string) bool { return pvefields.NormalFeatures(h) == pvefields.NormalFeatures(w) },
		refuse: func(h, w string) string {
			if !changedRootOnly(h, w) {
				return ""
			}
			return fmt.Sprintf("features %s -> %s cannot be applied: features other than nesting need root@pam; %s", orUnset(h), orUnset(w), rootOnlyNote)
		}}, want: func(s *ContainerSpec) (string, bool) {
		if s.Features == nil {
			return "", false
		}
		return *s.Features, true
	}},
	{param: param{key: "unprivileged", path: "spec.unprivileged", createOnly: true, same: pvefields.SameBool, show: func(v string) string { return pvefields.FormatBool(pvefields.ParseBool(v)) }},
		want: func(s *ContainerSpec) (string, bool) { return pvefields.FormatBool(s.Unprivileged), true }},
	{param: param{key: "arch", path: "spec.arch", def: "amd64", createOnly: true}, want: func(s *ContainerSpec) (string, bool) { return str(s.Arch) }},
	// Never read back: set at the create only.
	{param: param{key: "ssh-public-keys", path: "spec.sshKeys", writeOnly: true, show: func(v string) string { return pvefields.KeysSummary(pvefields.NormalKeys(strings.Split(v, "\n"))) }},
		want: func(s *ContainerSpec) (string, bool) { return strings.Join(s.SSHKeys, "\n"), len(s.SSHKeys) > 0 }},
	{param: param{key: "password", path: "spec.passwordFrom", writeOnly: true, show: func(v string) string { return orEmpty(v, "(set)") }},
		want: func(s *ContainerSpec) (string, bool) { return s.Password, s.PasswordSet }},
	{param: param{path: "spec.rootfs"}, each: ctVolumes},
	{param: param{path: "spec.net"}, each: ctNICs, prune: "net"},
}

// ctVolumes: the root volume and the mount points, one slot each. A new
// mount point is allocated on a running container at once.
func ctVolumes(s *ContainerSpec, _ *fieldCtx) []param {
	var out []param
	for i, m := range append([]MountSpec{s.RootFS}, s.Mounts...) {
		if m.Slot == "" {
			continue
		}
		path := "spec.rootfs"
		if i > 0 {
			path = fmt.Sprintf("spec.mountpoints[%d]", i-1)
		}
		to := m.Storage + ":" + pvefields.FormatSize(m.Size)
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
				d.Refused = append(d.Refused, fmt.Sprintf("bind mount %s (%s on %s) cannot be added: %s", m.Slot, m.Bind, m.Path, rootOnlyNote))
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
		d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: m.Slot + ".volume", From: vol, To: orStr(m.Bind, m.Storage)})
		return
	case m.Bind == "" && pvefields.StorageOf(vol) != m.Storage:
		d.CreationOnly = append(d.CreationOnly, vocab.Change{Field: m.Slot + ".storage", From: pvefields.StorageOf(vol), To: m.Storage})
	}
	if m.Bind == "" && m.Size > 0 {
		haveSize, _ := pvefields.ParseSize(ps.Values["size"])
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
			a, b = pvefields.NormalList(a), pvefields.NormalList(b)
		}
		if k != "mp" && k != "mountoptions" {
			a, b = pvefields.FormatBool(pvefields.ParseBool(a)), pvefields.FormatBool(pvefields.ParseBool(b))
			if _, declared := want.Values[k]; !declared && k == "acl" {
				continue
			}
		}
		if a != b {
			parts = append(parts, vocab.Change{Field: m.Slot + "." + k, From: ps.Values[k], To: want.Values[k]})
		}
	}
	if len(parts) > 0 && isBind {
		d.Refused = append(d.Refused, fmt.Sprintf("bind mount %s cannot be changed: %s", m.Slot, rootOnlyNote))
		return
	}
	x.setParts(&param{key: m.Slot, path: path, want: want.String("volume"), takes: takesReboot}, parts, have, d)
}

// ctNICs: one net[n] per declared NIC; a change keeps hwaddr and type.
func ctNICs(s *ContainerSpec, _ *fieldCtx) []param {
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
	cmp("rate", n.Rate, n.Rate != "", pvefields.SameFloat)
	cmp("tag", tag, true, eq)
	cmp("firewall", pvefields.FormatBool(n.Firewall), true, pvefields.SameBool)
	return out
}
