package export

import (
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/engine"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pve"
	"github.com/proxmops/proxmops/internal/pvefields"
)

// ctExport is the manifest of one container being read.
type ctExport struct {
	guestRead
	spec manifest.ContainerSpec
}

// ctReaders read one row of pvefields' ctFields each, by the row's manifest path.
var ctReaders = map[string]func(x *ctExport){
	"spec.hostname": func(x *ctExport) {
		x.spec.Hostname = x.eff["hostname"]
		if x.spec.Hostname == "" {
			x.note("the container has no hostname: the plan sets it to %s", x.meta.Name)
		}
	},
	"spec.cores":        func(x *ctExport) { x.spec.Cores = x.int("cores") },
	"spec.cpulimit":     func(x *ctExport) { x.spec.CPULimit, _ = strconv.ParseFloat(x.eff["cpulimit"], 64) },
	"spec.memory":       func(x *ctExport) { x.spec.Memory = x.int("memory") },
	"spec.swap":         func(x *ctExport) { x.spec.Swap = x.intP("swap") },
	"spec.onboot":       func(x *ctExport) { x.spec.OnBoot = x.flag("onboot") },
	"spec.startup":      func(x *ctExport) { x.spec.Startup = x.startup() },
	"spec.timezone":     func(x *ctExport) { x.spec.Timezone = x.eff["timezone"] },
	"spec.ostype":       func(x *ctExport) { x.spec.OSType = x.eff["ostype"] },
	"metadata.tags":     func(x *ctExport) { x.meta.Tags = exportTags(x.eff["tags"]) },
	"spec.description":  func(x *ctExport) { x.spec.Description = pvefields.TrimDescription(x.eff["description"]) },
	"spec.nameserver":   func(x *ctExport) { x.spec.Nameserver = pvefields.Spaced(x.eff["nameserver"]) },
	"spec.searchDomain": func(x *ctExport) { x.spec.SearchDomain = pvefields.Spaced(x.eff["searchdomain"]) },
	"spec.features": func(x *ctExport) {
		v, ok := present(x.eff, "features")
		if !ok {
			return
		}
		ps := pve.ParsePropertyString(v, "")
		f := manifest.Features{Nesting: pvefields.ParseBool(ps.Values["nesting"]), Keyctl: pvefields.ParseBool(ps.Values["keyctl"]),
			Fuse: pvefields.ParseBool(ps.Values["fuse"]), Mknod: pvefields.ParseBool(ps.Values["mknod"])}
		if m := ps.Values["mount"]; m != "" {
			f.Mount = strings.Split(m, ";")
		}
		if pvefields.NormalFeatures(f.String()) != pvefields.NormalFeatures(v) {
			x.note("features %q hold keys the manifest cannot declare: left out", v)
			return
		}
		x.spec.Features = &f
	},
	// Proxmox's default is privileged (no key), the manifest's unprivileged.
	"spec.unprivileged": func(x *ctExport) { x.spec.Unprivileged = boolP(pvefields.ParseBool(x.eff["unprivileged"])) },
	"spec.arch":         func(x *ctExport) { x.spec.Arch = x.eff["arch"] },
	// Set at the create, never read back.
	"spec.sshKeys":      func(*ctExport) {},
	"spec.passwordFrom": func(*ctExport) {},
	"spec.rootfs":       (*ctExport).volumes,
	"spec.net":          (*ctExport).nics,
}

// exportCT reads a container row by row.
func (es *cluster) exportCT(g *engine.Guest, names map[int]string) Exported {
	x := &ctExport{guestRead: guestRead{eff: g.Effective, meta: guestMeta(g, names[g.VMID]), comments: map[string]string{}}}
	x.spec.VMID, x.spec.Pool, x.spec.Firewall = g.VMID, g.Pool, engine.GuestFirewallManifest(g.Firewall)
	readRows(engine.KindContainer, ctReaders, x)
	// Proxmox does not record the OS template a container was made from;
	// only a create would use it.
	x.spec.Template = "local:vztmpl/unknown.tar.zst"
	x.comments["spec.template"] = "Proxmox does not record a container's OS template: this placeholder is used only if the container is ever created again"
	if !g.Running() {
		x.spec.State = manifest.StateStopped
	}
	if len(g.Pending) > 0 || len(g.PendingDelete) > 0 {
		x.note("the container has pending changes (waiting for a restart): exported as they will be after it")
	}
	return x.exported(manifest.KindContainer, &manifest.Container{Object: manifest.Object{Metadata: x.meta}, Spec: x.spec})
}

// volumes reads the root volume and the mount points by slot.
func (x *ctExport) volumes() {
	if v, ok := present(x.eff, "rootfs"); ok {
		ps := pve.ParsePropertyString(v, "volume")
		r := &manifest.RootFS{Storage: pvefields.StorageOf(ps.Values["volume"]), MountOptions: mountOpts(ps), Quota: pvefields.ParseBool(ps.Values["quota"])}
		if b, err := pvefields.ParseSize(ps.Values["size"]); err == nil {
			r.Size, _ = sizeOf(b)
		}
		if a, ok := ps.Values["acl"]; ok {
			r.ACL = boolP(pvefields.ParseBool(a))
		}
		x.spec.RootFS = r
	}
	mps, _ := x.slots("mp")
	for _, k := range mps {
		ps := pve.ParsePropertyString(x.eff[k], "volume")
		vol := ps.Values["volume"]
		m := manifest.Mountpoint{Slot: k, Path: ps.Values["mp"], ReadOnly: pvefields.ParseBool(ps.Values["ro"]), MountOptions: mountOpts(ps),
			Quota: pvefields.ParseBool(ps.Values["quota"])}
		if a, ok := ps.Values["acl"]; ok {
			m.ACL = boolP(pvefields.ParseBool(a))
		}
		if strings.HasPrefix(vol, "/") {
			m.Bind, m.Shared = vol, pvefields.ParseBool(ps.Values["shared"])
		} else {
			m.Storage, m.Backup = pvefields.StorageOf(vol), pvefields.ParseBool(ps.Values["backup"])
			if b, err := pvefields.ParseSize(ps.Values["size"]); err == nil {
				m.Size, _ = sizeOf(b)
			}
		}
		x.spec.Mountpoints = append(x.spec.Mountpoints, m)
	}
}

func mountOpts(ps pve.PropertyString) []string {
	if v := ps.Values["mountoptions"]; v != "" {
		return strings.Split(pvefields.NormalList(v), ";")
	}
	return nil
}

// nics reads the container's interfaces by slot.
func (x *ctExport) nics() {
	nets, _ := x.slots("net")
	for _, k := range nets {
		ps := pve.ParsePropertyString(x.eff[k], "name")
		v := ps.Values
		if v["bridge"] == "" {
			x.note("%s (%s) has no bridge: the manifest cannot declare it, and the plan deletes an undeclared interface: declare it by hand", k, x.eff[k])
			continue
		}
		n := manifest.ContainerNIC{Slot: k, Name: v["name"], Bridge: v["bridge"], IP: v["ip"], Gw: v["gw"], IP6: v["ip6"], Gw6: v["gw6"],
			Firewall: pvefields.ParseBool(v["firewall"]), HWAddr: strings.ToUpper(v["hwaddr"])}
		n.Tag, _ = atoiOK(v["tag"])
		n.MTU, _ = atoiOK(v["mtu"])
		if r := v["rate"]; r != "" {
			n.Rate, _ = strconv.ParseFloat(r, 64)
		}
		x.spec.Net = append(x.spec.Net, n)
	}
}
