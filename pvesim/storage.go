package pvesim

import (
	"strings"
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
		ns := func(extra ...*Param) *Params {
			return NewParams(append([]*Param{pNode(), Str("storage").Fmt("pve-storage-id")}, extra...)...)
		}
		volParams := func(extra ...*Param) *Params {
			return NewParams(append([]*Param{pNode(), Str("storage").Opt().Fmt("pve-storage-id"), Str("volume")}, extra...)...)
		}
		checksum := []*Param{
			Str("checksum").Opt().Requires("checksum-algorithm"),
			Str("checksum-algorithm").Opt().Enum("md5", "sha1", "sha224", "sha256", "sha384", "sha512").Requires("checksum"),
		}
		s.Handle(&Route{Method: "GET", Path: "/storage", Perm: PermUser(), Params: NewParams(Str("type").Opt().Enum("btrfs", "cephfs", "cifs", "dir", "esxi", "iscsi", "iscsidirect", "lvm", "lvmthin", "nfs", "pbs", "rbd", "zfs", "zfspool")),
			Handler: s.storageConfigList})
		s.Handle(&Route{Method: "GET", Path: "/storage/{storage}", Perm: PermCheck("/storage/{storage}", "Datastore.Allocate"), Params: NewParams(Str("storage").Fmt("pve-storage-id")),
			Handler: func(r *Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return s.storageConfigJSON(st), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage", Perm: PermUser(), ProxyTo: "node",
			Params: NewParams(pNode(),
				Str("content").Opt().Fmt("pve-storage-content-list"),
				Bool("enabled").Opt().Default("0"),
				Bool("format").Opt().Default("0"),
				Str("storage").Opt().Fmt("pve-storage-id"),
				Str("target").Opt().Fmt("pve-node"),
			),
			Handler: s.nodeStorageList})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *Request) (any, error) {
				if _, err := s.storageConfig(r.Str("storage")); err != nil {
					return nil, err
				}
				return subdirs("content", "download-url", "file-restore", "import-metadata", "prunebackups", "rrd", "rrddata", "status", "upload"), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/status", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node", Params: ns(),
			Handler: func(r *Request) (any, error) {
				st, err := s.storageConfig(r.Str("storage"))
				if err != nil {
					return nil, err
				}
				return s.storageStatusJSON(r.Str("node"), st), nil
			}})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content", Perm: PermAny("/storage/{storage}", "Datastore.Audit", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(Str("content").Opt().Fmt("pve-storage-content"), pVMID().Opt()), Handler: s.contentList})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/content", Perm: PermCheck("/storage/{storage}", "Datastore.AllocateSpace"), ProxyTo: "node",
			Params: ns(Str("filename"), Str("format").Opt().Enum("raw", "qcow2", "subvol", "vmdk").Requires("size"),
				Str("size").Pattern(`\d+[MG]?`), pVMID()),
			Handler: s.contentAlloc})
		s.Handle(&Route{Method: "GET", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(), Handler: s.contentInfo})
		s.Handle(&Route{Method: "PUT", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(Str("notes").Opt(), Bool("protected").Opt()), Handler: s.contentUpdate})
		s.Handle(&Route{Method: "DELETE", Path: "/nodes/{node}/storage/{storage}/content/{volume*}", Perm: PermUser(), ProxyTo: "node",
			Params: volParams(Int("delay").Opt().Min(1).Max(30)), Handler: s.contentDelete})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/download-url", Perm: PermAnd(PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), PermOr(PermCheck("/", "Sys.Audit", "Sys.Modify"), PermCheck("/nodes/{node}", "Sys.AccessNetwork"))), ProxyTo: "node",
			Params: ns(append(checksum,
				Str("compression").Opt(),
				Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				Str("filename").MaxLen(255),
				Str("url").Pattern(`https?://.*`),
				Bool("verify-certificates").Opt().Default("1"),
			)...),
			Handler: s.downloadURL})
		s.Handle(&Route{Method: "POST", Path: "/nodes/{node}/storage/{storage}/upload", Perm: PermCheck("/storage/{storage}", "Datastore.AllocateTemplate"), ProxyTo: "node",
			Params: ns(append(checksum,
				Str("content").Enum("iso", "vztmpl", "import").Fmt("pve-storage-content"),
				Str("filename").MaxLen(255),
				Str("tmpfilename").Opt().Pattern(`/var/tmp/pveupload-[0-9a-f]+`),
			)...),
			Handler: s.upload})
	})
}

func (s *Server) storageConfigList(r *Request) (any, error) {
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

func (s *Server) nodeStorageList(r *Request) (any, error) {
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
