package pvesim

import (
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Storages: the routes, storage.cfg and per-node status, and where each
// content type lives. Content itself is in storage_content.go, downloads and
// uploads in storage_download.go.

// contentDir is where a storage keeps a content type.
func (st *Storage) contentDir(content string) string {
	switch content {
	case "iso":
		return st.Path + "/template/iso"
	case "vztmpl":
		return st.Path + "/template/cache"
	case "import":
		return st.Path + "/import"
	case "snippets":
		return st.Path + "/snippets"
	case "backup":
		return st.Path + "/dump"
	}
	return st.Path + "/images"
}

func contentPrefix(content string) string {
	switch content {
	case "iso":
		return "iso/"
	case "vztmpl":
		return "vztmpl/"
	case "import":
		return "import/"
	case "snippets":
		return "snippets/"
	case "backup":
		return "backup/"
	}
	return ""
}

func (s *Server) volumePath(st *Storage, v *Volume) string {
	if !st.fileBased() {
		return "/dev/pve/" + v.Name
	}
	if v.Content == "images" || v.Content == "rootdir" {
		return st.Path + "/images/" + v.Name
	}
	return st.contentDir(v.Content) + "/" + strings.TrimPrefix(v.Name, contentPrefix(v.Content))
}

func init() {
	registerRoutes(func(s *Server) {
		ns := func(extra ...*route.Param) *route.Params {
			return route.NewParams(append([]*route.Param{pNode(), route.Str("storage").Fmt("pve-storage-id")}, extra...)...)
		}
		volParams := func(extra ...*route.Param) *route.Params {
			return route.NewParams(append([]*route.Param{pNode(), route.Str("storage").Opt().Fmt("pve-storage-id"), route.Str("volume")}, extra...)...)
		}
		checksum := []*route.Param{
			route.Str("checksum").Opt().Requires("checksum-algorithm"),
			route.Str("checksum-algorithm").Opt().Enum("md5", "sha1", "sha224", "sha256", "sha384", "sha512").Requires("checksum"),
		}
		s.Handle(&route.Route{Method: "GET", Path: "/storage", Perm: route.PermUser(), Params: route.NewParams(route.Str("type").Opt().Enum("btrfs", "cephfs", "cifs", "dir", "esxi", "iscsi", "iscsidirect", "lvm", "lvmthin", "nfs", "pbs", "rbd", "zfs", "zfspool")),
			Handler: s.storageConfigList})
		s.Handle(&route.Route{Method: "GET", Path: "/storage/{storage}", Perm: route.PermCheck("/storage/{storage}", "Datastore.Allocate"), Params: route.NewParams(route.Str("storage").Fmt("pve-storage-id")),
			Handler: func(r *route.Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return s.storageConfigJSON(st), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/storage", Perm: route.PermUser(), ProxyTo: "node",
			Params: route.NewParams(pNode(),
				route.Str("content").Opt().Fmt("pve-storage-content-list"),
				route.Bool("enabled").Opt().Default("0"),
				route.Bool("format").Opt().Default("0"),
				route.Str("storage").Opt().Fmt("pve-storage-id"),
				route.Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.nodeStorageList})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}", Perm: route.PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *route.Request) (any, error) {
				if _, err := s.storageConfig(r.Str("storage")); err != nil {
					return nil, err
				}
				return subdirs("content", "download-url", "file-restore", "import-metadata", "prunebackups", "rrd", "rrddata", "status", "upload"), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/status", Perm: route.PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *route.Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return s.storageStatusJSON(r.Str("node"), st), nil
			}})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content", Perm: route.PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(route.Str("content").Opt().Fmt("pve-storage-content"), pVMID().Opt()), Handler: s.contentList})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/content", Perm: route.PermCheck("/storage/{storage}", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(route.Str("filename"), route.Str("format").Opt().Enum("raw", "qcow2", "subvol", "vmdk").Requires("size"),
				route.Str("size").Pattern(`\d+[MG]?`), pVMID()),
			Handler: s.contentAlloc})
		s.Handle(&route.Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: route.PermUser(), ProxyTo: "node",
			Params: volParams(), Handler: s.contentInfo})
		s.Handle(&route.Route{Method: "PUT", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: route.PermUser(), ProxyTo: "node",
			Params: volParams(route.Str("notes").Opt(), route.Bool("protected").Opt()), Handler: s.contentUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: route.PermUser(), ProxyTo: "node",
			Params: volParams(route.Int("delay").Opt().Min(1).Max(30)), Handler: s.contentDelete})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url", Perm: route.PermAnd(route.PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), route.PermOr(route.PermCheck("/", "Sys.Audit", "Sys.Modify"), route.PermCheck("/nodes/{node}", "Sys.AccessNetwork"))), ProxyTo: "node",
			Params: ns(append(checksum,
				route.Str("compression").Opt(),
				route.Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				route.Str("filename").MaxLen(255),
				route.Str("url").Pattern(`https?://.*`),
				route.Bool("verify-certificates").Opt().Default("1"),
			)...),
			Handler: s.downloadURL})
		s.Handle(&route.Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/upload", Perm: route.PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), ProxyTo: "node",
			Params: ns(append(checksum,
				route.Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				route.Str("filename").MaxLen(255),
				route.Str("tmpfilename").Opt().Pattern(`/var/tmp/pveupload-[0-9a-f]+`),
			)...),
			Handler: s.upload})
	})
}

func (s *Server) storageConfigList(r *route.Request) (any, error) {
	out := []map[string]any{}
	for _, st := range s.state.Storages {
		if t := r.Str("type"); t != "" && st.Type != t {
			continue
		}
		// Config.pm index lists what the caller may audit or allocate on.
		if s.checkAny(r.User, "/storage/"+st.ID, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
			continue
		}
		out = append(out, s.storageConfigJSON(st))
	}
	return out, nil
}

func (s *Server) storageStatusJSON(node string, st *Storage) map[string]any {
	used := s.state.usedBytes(node, st.ID)
	shared, enabled := 0, 1
	if st.Shared {
		shared = 1
	}
	if st.Disable {
		enabled = 0
	}
	return map[string]any{
		"storage": st.ID, "type": st.Type, "content": strings.Join(st.Content, ","), "active": enabled, "enabled": enabled,
		"shared": shared, "total": st.Total, "used": used, "avail": st.Total - used,
		"used_fraction": float64(used) / float64(st.Total),
	}
}

func (s *Server) nodeStorageList(r *route.Request) (any, error) {
	node := r.Str("node")
	want := splitList(r.Str("content"))
	out := []map[string]any{}
	for _, st := range s.state.Storages {
		if id := r.Str("storage"); id != "" && st.ID != id {
			continue
		}
		// storage_info lists only storages available on the node.
		if !st.availableOn(node) {
			continue
		}
		// Status.pm index lists what the caller may audit or allocate on.
		if s.checkAny(r.User, "/storage/"+st.ID, "Datastore.Audit", "Datastore.AllocateSpace") != nil {
			continue
		}
		ok := len(want) == 0
		for _, c := range want {
			ok = ok || st.allows(c)
		}
		if !ok {
			continue
		}
		out = append(out, s.storageStatusJSON(node, st))
	}
	return out, nil
}
