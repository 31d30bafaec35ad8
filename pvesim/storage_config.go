package pvesim

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/pvesim/route"
)

// Storage definitions: POST /storage and PUT/DELETE /storage/{storage}
// (pve-storage src/PVE/API2/Storage/Config.pm), with the plugins' option
// tables (src/PVE/Storage/*Plugin.pm "options" and "plugindata") and
// SectionConfig's check_config (pve-common src/PVE/SectionConfig.pm).
// Storage.Opts holds storage.cfg's keys other than type, content and
// nodes, as written; the sensitive properties go to StorageSecrets.

// storageOpt is one entry of a plugin's "options": required unless
// optional, and not changeable after creation when fixed.
type storageOpt struct{ optional, fixed bool }

// storagePlugin is what the simulator knows of one storage type.
type storagePlugin struct {
	options map[string]storageOpt
	// content is plugindata's valid content types and the default.
	content, defContent []string
	// formats are plugindata's image formats (nil: the plugin has none).
	formats   []string
	sensitive []string
}

var (
	optO  = storageOpt{optional: true}
	optF  = storageOpt{fixed: true}
	optOF = storageOpt{optional: true, fixed: true}
)

func withOpts(base map[string]storageOpt, extra map[string]storageOpt) map[string]storageOpt {
	out := map[string]storageOpt{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// fileOpts are the options DirPlugin, NFSPlugin and CIFSPlugin share.
var fileOpts = map[string]storageOpt{
	"path": optF, "content-dirs": optO, "nodes": optO, "disable": optO, "prune-backups": optO,
	"max-protected-backups": optO, "content": optO, "format": optO, "mkdir": optO,
	"create-base-path": optO, "create-subdirs": optO, "bwlimit": optO, "preallocation": optO,
	"snapshot-as-volume-chain": optOF,
}

var fileContent = []string{"images", "rootdir", "vztmpl", "iso", "backup", "snippets", "import"}

// storagePlugins are the plugins the simulator serves; their "options"
// subs, in the order DirPlugin, NFSPlugin, CIFSPlugin, PBSPlugin,
// LVMPlugin, LvmThinPlugin, ZFSPoolPlugin.
var storagePlugins = map[string]*storagePlugin{
	"dir": {options: withOpts(fileOpts, map[string]storageOpt{"shared": optO, "is_mountpoint": optO}),
		content: append(slices.Clone(fileContent), "none"), defContent: []string{"images", "rootdir"},
		formats: []string{"raw", "qcow2", "vmdk", "subvol"}},
	"nfs": {options: withOpts(fileOpts, map[string]storageOpt{"server": optF, "export": optF, "options": optO}),
		content: fileContent, defContent: []string{"images"}, formats: []string{"raw", "qcow2", "vmdk"}},
	"cifs": {options: withOpts(fileOpts, map[string]storageOpt{"server": optF, "share": optF, "subdir": optO,
		"username": optO, "password": optO, "domain": optO, "smbversion": optO, "options": optO}),
		content: fileContent, defContent: []string{"images"}, formats: []string{"raw", "qcow2", "vmdk"},
		sensitive: []string{"password"}},
	"pbs": {options: map[string]storageOpt{"server": optF, "datastore": optF, "namespace": optO, "port": optO,
		"nodes": optO, "disable": optO, "content": optO, "username": optO, "password": optO, "encryption-key": optO,
		"master-pubkey": optO, "prune-backups": optO, "max-protected-backups": optO, "fingerprint": optO},
		content: []string{"backup", "none"}, defContent: []string{"backup"},
		sensitive: []string{"encryption-key", "master-pubkey", "password"}},
	"lvm": {options: map[string]storageOpt{"vgname": optF, "nodes": optO, "shared": optO, "disable": optO,
		"saferemove": optO, "saferemove-stepsize": optO, "saferemove_throughput": optO, "content": optO,
		"base": optOF, "tagged_only": optO, "bwlimit": optO, "snapshot-as-volume-chain": optO},
		content: []string{"images", "rootdir"}, defContent: []string{"images"}, formats: []string{"raw", "qcow2"}},
	"lvmthin": {options: map[string]storageOpt{"thinpool": optF, "vgname": optF, "nodes": optO, "disable": optO,
		"content": optO, "bwlimit": optO},
		content: []string{"images", "rootdir"}, defContent: []string{"images", "rootdir"}},
	"zfspool": {options: map[string]storageOpt{"pool": optF, "blocksize": optO, "sparse": optO, "nodes": optO,
		"disable": optO, "content": optO, "bwlimit": optO, "mountpoint": optO},
		content: []string{"images", "rootdir"}, defContent: []string{"images", "rootdir"}, formats: []string{"raw", "subvol"}},
}

// sharedStorageTypes is Plugin.pm's @SHARED_STORAGE: parse_config marks
// these shared whatever storage.cfg says.
var sharedStorageTypes = []string{"iscsi", "nfs", "cifs", "rbd", "cephfs", "iscsidirect", "zfs", "drbd", "pbs"}

var storageTypes = []string{"btrfs", "cephfs", "cifs", "dir", "esxi", "iscsi", "iscsidirect", "lvm", "lvmthin", "nfs", "pbs", "rbd", "zfs", "zfspool"}

// storageParams are createSchema (create) or updateSchema: every plugin's
// properties, as the 9.1 schema lists them.
func storageParams(create bool) *route.Params {
	ps := []*route.Param{
		route.Str("storage").Fmt("pve-storage-id"),
		route.Str("blocksize").Opt(),
		route.Str("bwlimit").Opt().Props(route.Props(
			route.Num("clone").Opt().Min(0), route.Num("default").Opt().Min(0), route.Num("migration").Opt().Min(0),
			route.Num("move").Opt().Min(0), route.Num("restore").Opt().Min(0))),
		route.Str("comstar_hg").Opt(), route.Str("comstar_tg").Opt(),
		route.Str("content").Opt().Fmt("pve-storage-content-list"),
		route.Str("content-dirs").Opt().Fmt("pve-dir-override-list"),
		route.Bool("create-base-path").Opt().Default("yes"), route.Bool("create-subdirs").Opt().Default("yes"),
		route.Str("data-pool").Opt(),
		route.Bool("disable").Opt(),
		route.Str("domain").Opt().MaxLen(256),
		route.Str("encryption-key").Opt(),
		route.Str("fingerprint").Opt().Pattern(`([A-Fa-f0-9]{2}:){31}[A-Fa-f0-9]{2}`),
		route.Str("format").Opt().Enum("raw", "qcow2", "subvol", "vmdk"),
		route.Str("fs-name").Opt().Fmt("pve-configid"),
		route.Bool("fuse").Opt(),
		route.Str("is_mountpoint").Opt().Default("no"),
		route.Str("keyring").Opt(),
		route.Bool("krbd").Opt().Default("0"),
		route.Str("lio_tpg").Opt(),
		route.Str("master-pubkey").Opt(),
		route.Int("max-protected-backups").Opt().Min(-1),
		route.Bool("mkdir").Opt().Default("yes"),
		route.Str("monhost").Opt().Fmt("pve-storage-portal-dns-list"),
		route.Str("mountpoint").Opt().Fmt("pve-storage-path"),
		route.Str("namespace").Opt(),
		route.Bool("nocow").Opt().Default("0"),
		route.Str("nodes").Opt().Fmt("pve-node-list"),
		route.Bool("nowritecache").Opt(),
		route.Str("options").Opt().Fmt("pve-storage-options"),
		route.Str("password").Opt().MaxLen(256),
		route.Str("pool").Opt(),
		route.Int("port").Opt().Min(1).Max(65535),
		route.Str("preallocation").Opt().Enum("off", "metadata", "falloc", "full").Default("metadata"),
		route.Str("prune-backups").Opt().Fmt("prune-backups"),
		route.Bool("saferemove").Opt(),
		route.Int("saferemove-stepsize").Opt().Enum("1", "2", "4", "8", "16", "32").Default("32"),
		route.Str("saferemove_throughput").Opt(),
		route.Str("server").Opt().Fmt("pve-storage-server"),
		route.Bool("shared").Opt(),
		route.Bool("skip-cert-verification").Opt().Default("false"),
		route.Str("smbversion").Opt().Enum("default", "2.0", "2.1", "3", "3.0", "3.11").Default("default"),
		route.Bool("snapshot-as-volume-chain").Opt().Default("0"),
		route.Bool("sparse").Opt(),
		route.Str("subdir").Opt().Fmt("pve-storage-path"),
		route.Bool("tagged_only").Opt(),
		route.Str("username").Opt(),
		route.Str("zfs-base-path").Opt().Fmt("pve-storage-path"),
	}
	if create {
		ps = append(ps,
			route.Str("type").Enum(storageTypes...),
			route.Str("authsupported").Opt(),
			route.Str("base").Opt().Fmt("pve-volume-id"),
			route.Str("datastore").Opt(),
			route.Str("export").Opt().Fmt("pve-storage-path"),
			route.Str("iscsiprovider").Opt(),
			route.Str("path").Opt().Fmt("pve-storage-path"),
			route.Str("portal").Opt().Fmt("pve-storage-portal-dns"),
			route.Str("share").Opt(),
			route.Str("target").Opt(),
			route.Str("thinpool").Opt().Fmt("pve-storage-vgname"),
			route.Str("vgname").Opt().Fmt("pve-storage-vgname"),
		)
	} else {
		ps = append(ps, route.Str("delete").Opt().Fmt("pve-configid-list").MaxLen(4096), route.Str("digest").Opt().MaxLen(64))
	}
	return route.NewParams(ps...)
}

var (
	reDNSOrIPPort  = regexp.MustCompile(`^(?:\[[0-9a-fA-F:.]+\]|[0-9a-fA-F:.]+|[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)*)(?::\d+)?$`)
	reLVMName      = regexp.MustCompile(`(?i)^[a-z0-9][a-z0-9\-_.]*[a-z0-9]$`)
	reDirOverride  = regexp.MustCompile(`^([a-z]+)=([^.]*(?:\.?[^.]+)+)$`)
	reDirStorePath = regexp.MustCompile(`^/[-/a-zA-Z0-9_.@]+$`)
)

// pruneBackupsFormat is Plugin.pm's $prune_backups_format.
func pruneBackupsFormat() *route.PropFormat {
	keep := func(n string) *route.Param { return route.Int(n).Opt().Min(0) }
	return route.Props(route.Bool("keep-all").Opt(), keep("keep-last"), keep("keep-hourly"), keep("keep-daily"),
		keep("keep-weekly"), keep("keep-monthly"), keep("keep-yearly"))
}

func init() {
	// Plugin.pm's verify_path, verify_server, parse_lvm_name,
	// verify_portal_dns, verify_options and verify_dir_override.
	route.RegisterFormat("pve-storage-path", func(s string) error {
		if !regexp.MustCompile(`^/[^;()]+`).MatchString(s) {
			return fmt.Errorf("value does not look like a valid absolute path\n")
		}
		return nil
	})
	route.RegisterFormat("pve-storage-server", func(s string) error {
		if checkFormat("ip", s, "") != nil && checkFormat("dns-name", s, "") != nil {
			return fmt.Errorf("value does not look like a valid server name or IP address\n")
		}
		return nil
	})
	route.RegisterFormat("pve-storage-vgname", regexFormat(reLVMName, "lvm name '%s' contains illegal characters\n"))
	route.RegisterFormat("pve-storage-portal-dns", matchOr(reDNSOrIPPort, "value does not look like a valid portal address"))
	route.RegisterFormat("pve-storage-options", func(s string) error {
		if !regexp.MustCompile(`^\S+$`).MatchString(s) {
			return fmt.Errorf("invalid options '%s'\n", s)
		}
		return nil
	})
	route.RegisterFormat("pve-dir-override", func(s string) error {
		if m := reDirOverride.FindStringSubmatch(s); m != nil && checkFormat("pve-storage-content", m[1], "") == nil {
			ok := len(m[2]) < 1023
			for _, seg := range strings.Split(m[2], "/") {
				ok = ok && len(seg) < 255
			}
			if ok {
				return nil
			}
		}
		return fmt.Errorf("invalid override '%s'\n", s)
	})
	route.RegisterPropFormat("prune-backups", pruneBackupsFormat())
	registerRoutes(func(s *Server) {
		perm := route.PermCheck("/storage", "Datastore.Allocate")
		s.Handle(&route.Route{Method: "POST", Path: "/storage", Perm: perm, Params: storageParams(true), Handler: s.storageCreate})
		s.Handle(&route.Route{Method: "PUT", Path: "/storage/{storage}", Perm: perm, Params: storageParams(false), Handler: s.storageUpdate})
		s.Handle(&route.Route{Method: "DELETE", Path: "/storage/{storage}", Perm: perm,
			Params: route.NewParams(route.Str("storage").Fmt("pve-storage-id")), Handler: s.storageDelete})
	})
}

// validatePruneBackups is Plugin.pm's validate_prune_backups, which the
// format runs after parsing: keep-all excludes the other keys when they
// keep anything.
func validatePruneBackups(param, value string) error {
	f := route.NamedProps("prune-backups")
	kv, err := parsePropString(f, value, param)
	if err != nil {
		return err
	}
	others := false
	for k, v := range kv {
		if k != "keep-all" && v != "0" && v != "" {
			others = true
		}
	}
	if others && kv["keep-all"] == "1" {
		return route.ParamErr(param, "invalid format - keep-all cannot be set together with other options.\n")
	}
	return nil
}

// legacyStorageOpts are the storage.cfg keys of a storage made without
// them (the initial storages, SetStorage): what the fields say, and the
// fixed keys the simulator has always shown for them.
func legacyStorageOpts(st *Storage) map[string]string {
	m := map[string]string{}
	if st.Path != "" {
		m["path"] = st.Path
	}
	if st.Shared && !slices.Contains(sharedStorageTypes, st.Type) {
		m["shared"] = "1"
	}
	if st.Format != "" {
		m["format"] = st.Format
	}
	if st.VolumeChain {
		m["snapshot-as-volume-chain"] = "1"
	}
	if st.Disable {
		m["disable"] = "1"
	}
	switch st.Type {
	case "lvm":
		m["vgname"] = "pve"
	case "lvmthin":
		m["thinpool"], m["vgname"] = "data", "pve"
	case "nfs":
		m["server"], m["export"] = "192.0.2.200", "/export/pve"
	}
	return m
}

func (st *Storage) cfgOpts() map[string]string {
	if st.Opts != nil {
		return st.Opts
	}
	return legacyStorageOpts(st)
}

// storageCfgText is storage.cfg as SectionConfig writes it; its SHA-1 is
// the digest every read answers and PUT checks.
func (cs *clusterState) storageCfgText() string {
	var b strings.Builder
	for _, st := range cs.Storages {
		fmt.Fprintf(&b, "%s: %s\n", st.Type, st.ID)
		opts := st.cfgOpts()
		keys := sortedKeys(opts)
		for _, k := range keys {
			fmt.Fprintf(&b, "\t%s %s\n", k, opts[k])
		}
		fmt.Fprintf(&b, "\tcontent %s\n", strings.Join(st.Content, ","))
		if len(st.Nodes) > 0 {
			fmt.Fprintf(&b, "\tnodes %s\n", strings.Join(st.Nodes, ","))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func (cs *clusterState) storageDigest() string {
	return sha1Hex(cs.storageCfgText())
}

var storageCreateParams = storageParams(true)

// storageConfigJSON is Config.pm's $api_storage_config: the section with
// booleans and integers as numbers (check_value), content and nodes
// joined, shared set for the shared types (Plugin.pm parse_config), and
// the file's digest.
func (s *Server) storageConfigJSON(st *Storage) map[string]any {
	m := map[string]any{"storage": st.ID, "type": st.Type, "content": strings.Join(st.Content, ","), "digest": s.state.storageDigest()}
	for k, v := range st.cfgOpts() {
		t := route.TString
		if p := storageCreateParams.Lookup(k); p != nil {
			t = p.Type
		}
		m[k] = typedValue(t, v)
	}
	if len(st.Nodes) > 0 {
		m["nodes"] = strings.Join(st.Nodes, ",")
	}
	if slices.Contains(sharedStorageTypes, st.Type) {
		m["shared"] = int64(1)
	}
	return m
}

// storageCheckConfig is SectionConfig::check_config with the plugins'
// decode_value (the schema was checked by the API already): fixed keys
// are refused on update, unknown ones always, required ones are needed
// on create. It returns the keys to set and the content and nodes lists
// when given (nil otherwise).
func storageCheckConfig(pl *storagePlugin, param map[string]string, create bool) (opts map[string]string, content, nodes []string, err error) {
	opts = map[string]string{}
	for _, k := range sortedKeys(param) {
		v := param[k]
		o, known := pl.options[k]
		if !create && known && o.fixed {
			return nil, nil, nil, fmt.Errorf("can't change value of fixed parameter '%s'", k)
		}
		if !known {
			return nil, nil, nil, fmt.Errorf("unexpected property '%s'", k)
		}
		if strings.ContainsAny(v, "\r\n") {
			return nil, nil, nil, fmt.Errorf("property contains a line feed")
		}
		switch k {
		case "content":
			if content, err = decodeStorageContent(pl, v); err != nil {
				return nil, nil, nil, err
			}
		case "nodes":
			nodes = []string{}
			for _, n := range splitList(v) {
				if checkFormat("pve-node", n, "") == nil && !slices.Contains(nodes, n) {
					nodes = append(nodes, n)
				}
			}
		case "format":
			// An unsupported format is warned about and skipped.
			if slices.Contains(pl.formats, v) {
				opts[k] = v
			}
		default:
			opts[k] = v
		}
	}
	if create {
		for _, k := range sortedKeys(pl.options) {
			if !pl.options[k].optional && !hasKey(param, k) {
				return nil, nil, nil, fmt.Errorf("missing value for required option '%s'", k)
			}
		}
	}
	return opts, content, nodes, nil
}

// decodeStorageContent is Plugin.pm decode_value for content: types the
// plugin does not support are warned about and skipped.
func decodeStorageContent(pl *storagePlugin, v string) ([]string, error) {
	out := []string{}
	for _, c := range splitList(v) {
		if slices.Contains(pl.content, c) && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	if slices.Contains(out, "none") && len(out) > 1 {
		return nil, fmt.Errorf("unable to combine 'none' with other content types")
	}
	if len(out) == 0 {
		if !slices.Contains(pl.content, "none") {
			return nil, fmt.Errorf("storage does not support content type 'none'")
		}
		out = []string{"none"}
	}
	return out, nil
}

// storageParamsOf are the request's storage.cfg keys (the path, type,
// digest and delete parameters left out).
func storageParamsOf(r *route.Request) map[string]string {
	out := paramsExcept(r, "storage", "type", "digest", "delete")
	return out
}

// extractSensitive is PVE::Tools::extract_sensitive_params: the plugin's
// sensitive keys leave param; a deleted one is set to "" (undef).
func extractSensitive(pl *storagePlugin, param map[string]string, deletes []string) map[string]*string {
	out := map[string]*string{}
	for _, k := range pl.sensitive {
		if slices.Contains(deletes, k) {
			out[k] = nil
		}
		if v, ok := param[k]; ok {
			out[k] = &v
			delete(param, k)
		}
	}
	return out
}

func (s *Server) storageUnsupported(typ string) error {
	return route.Failf(501, "storage type '%s' is not simulated (pvesim serves %s)", typ, strings.Join(sortedKeys(storagePlugins), ", "))
}

// storageCreate is Config.pm "create".
func (s *Server) storageCreate(r *route.Request) (any, error) {
	typ, id := r.Str("type"), r.Str("storage")
	pl := storagePlugins[typ]
	if pl == nil {
		return nil, s.storageUnsupported(typ)
	}
	param := storageParamsOf(r)
	if err := s.storagePruneCheck(param); err != nil {
		return nil, err
	}
	// An empty node list is dropped before anything else.
	if v, ok := param["nodes"]; ok && (v == "" || v == "0") {
		delete(param, "nodes")
	}
	sensitive := extractSensitive(pl, param, nil)
	// NFSPlugin and CIFSPlugin check_config: the mount point by default.
	if (typ == "nfs" || typ == "cifs") && param["path"] == "" {
		param["path"] = "/mnt/pve/" + id
	}
	opts, content, nodes, err := storageCheckConfig(pl, param, true)
	if err != nil {
		return nil, route.Fail("%s", err)
	}
	if typ == "dir" {
		// DirPlugin check_config.
		if !reDirStorePath.MatchString(opts["path"]) {
			return nil, route.Fail("illegal path for directory storage: %s", opts["path"])
		}
		opts["path"] = canonPath(opts["path"])
	}
	fail := func(format string, args ...any) error { return route.Fail("create storage failed: "+format, args...) }
	if s.state.storage(id) != nil {
		return nil, fail("storage ID '%s' already defined", id)
	}
	if content == nil {
		content = slices.Clone(pl.defContent)
	}
	st := &Storage{ID: id, Type: typ, Content: content, Nodes: nodes, Opts: opts}
	returned, err := s.storageHookAdd(st, sensitive)
	if err != nil {
		return nil, fail("%s", err)
	}
	st.syncFromOpts()
	st.Total = 500 * gib
	if st.Shared {
		st.Total = 2048 * gib
	}
	s.state.Storages = append(s.state.Storages, st)
	// Volumes left by an earlier storage of that name are its content again.
	s.state.reindex()
	out := map[string]any{"storage": id, "type": typ}
	if len(returned) > 0 {
		out["config"] = returned
	}
	return out, nil
}

// storagePruneCheck runs validate_prune_backups on the parameter.
func (s *Server) storagePruneCheck(param map[string]string) error {
	if v, ok := param["prune-backups"]; ok {
		return validatePruneBackups("prune-backups", v)
	}
	return nil
}

// canonPath is File::Spec->canonpath: repeated slashes and "/." parts
// go, and a trailing slash.
func canonPath(p string) string {
	parts := strings.Split(p, "/")
	out := []string{}
	for _, seg := range parts {
		if seg == "" || seg == "." {
			continue
		}
		out = append(out, seg)
	}
	return "/" + strings.Join(out, "/")
}

// syncFromOpts sets the fields the rest of the simulator reads from the
// storage.cfg keys.
func (st *Storage) syncFromOpts() {
	o := st.Opts
	st.Path = o["path"]
	st.Disable = o["disable"] == "1"
	st.Format = o["format"]
	st.VolumeChain = o["snapshot-as-volume-chain"] == "1"
	st.Shared = slices.Contains(sharedStorageTypes, st.Type) || o["shared"] == "1"
	if st.ID == "local" {
		// Plugin.pm parse_config: no node restrictions for local.
		st.Nodes = nil
	}
}

// storageHookAdd is on_add_hook of CIFSPlugin and PBSPlugin: the
// passwords and keys go to the private files, PBS's encryption key is
// checked (or generated) and its fingerprint recorded.
func (s *Server) storageHookAdd(st *Storage, sensitive map[string]*string) (map[string]any, error) {
	secrets := map[string]string{}
	var returned map[string]any
	if st.Type == "pbs" {
		var err error
		if returned, err = pbsEncryptionKey(st, sensitive["encryption-key"], secrets); err != nil {
			return nil, err
		}
		if mk := sensitive["master-pubkey"]; mk != nil {
			if st.Opts["encryption-key"] == "" {
				return nil, fmt.Errorf("'master-pubkey' can only be used together with 'encryption-key'")
			}
			secrets["master-pubkey"] = *mk
			st.Opts["master-pubkey"] = "1"
		}
	}
	if pw := sensitive["password"]; pw != nil {
		secrets["password"] = *pw
	}
	s.setStorageSecrets(st.ID, secrets)
	return returned, nil
}

// pbsEncryptionKey handles PBSPlugin's encryption-key: "autogen" makes
// one, anything else must be a JSON key with "data"; storage.cfg keeps
// its fingerprint (or 1).
func pbsEncryptionKey(st *Storage, key *string, secrets map[string]string) (map[string]any, error) {
	if key == nil {
		return nil, nil
	}
	val := *key
	if val == "autogen" {
		sum := sha1.Sum([]byte("pvesim-key-" + st.ID))
		fp := fingerprintOf(sum[:])
		b, _ := json.Marshal(map[string]any{"kdf": nil, "created": "2026-01-01T00:00:00+00:00",
			"modified": "2026-01-01T00:00:00+00:00", "data": hex.EncodeToString(sum[:]), "fingerprint": fp})
		val = string(b)
	}
	var decoded map[string]any
	if err := json.Unmarshal([]byte(val), &decoded); err != nil || decoded["data"] == nil {
		return nil, fmt.Errorf("Value does not seems like a valid, JSON formatted encryption key!")
	}
	secrets["encryption-key"] = val
	st.Opts["encryption-key"] = "1"
	if fp, ok := decoded["fingerprint"].(string); ok && fp != "" {
		st.Opts["encryption-key"] = fp
	}
	return map[string]any{"encryption-key": val}, nil
}

func fingerprintOf(b []byte) string {
	parts := make([]string, 0, 32)
	for i := 0; i < 32; i++ {
		parts = append(parts, fmt.Sprintf("%02x", b[i%len(b)]))
	}
	return strings.Join(parts, ":")
}

func (s *Server) setStorageSecrets(id string, secrets map[string]string) {
	if len(secrets) == 0 {
		delete(s.state.StorageSecrets, id)
		return
	}
	if s.state.StorageSecrets == nil {
		s.state.StorageSecrets = map[string]map[string]string{}
	}
	s.state.StorageSecrets[id] = secrets
}

// StorageSecret returns a sensitive property a storage keeps in its
// private file (a CIFS or PBS password, a PBS encryption key), which the
// API never answers; tests read it here.
func (s *Server) StorageSecret(storage, key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.state.StorageSecrets[storage][key]
	return v, ok
}

// storageUpdate is Config.pm "update".
func (s *Server) storageUpdate(r *route.Request) (any, error) {
	id := r.Str("storage")
	fail := func(format string, args ...any) error { return route.Fail("update storage failed: "+format, args...) }
	if d := r.Str("digest"); d != "" && d != s.state.storageDigest() {
		return nil, fail("detected modified configuration - file changed by other user? Try again.")
	}
	st := s.state.storage(id)
	if st == nil {
		return nil, fail("storage '%s' does not exist", id)
	}
	pl := storagePlugins[st.Type]
	if pl == nil {
		return nil, s.storageUnsupported(st.Type)
	}
	param := storageParamsOf(r)
	if err := s.storagePruneCheck(param); err != nil {
		return nil, err
	}
	var deletes []string
	if r.Has("delete") {
		deletes = splitList(r.Str("delete"))
	}
	sensitive := extractSensitive(pl, param, deletes)
	opts, content, nodes, err := storageCheckConfig(pl, param, false)
	if err != nil {
		return nil, fail("%s", err)
	}
	for _, k := range deletes {
		o, ok := pl.options[k]
		switch {
		case !ok:
			return nil, fail("no such option '%s'", k)
		case !o.optional:
			return nil, fail("unable to delete required option '%s'", k)
		case o.fixed:
			return nil, fail("unable to delete fixed option '%s'", k)
		case hasKey(opts, k) || k == "content" && content != nil || k == "nodes" && nodes != nil:
			return nil, fail("cannot set and delete property '%s' at the same time!", k)
		}
	}
	if st.Opts == nil {
		st.Opts = legacyStorageOpts(st)
	}
	returned, err := s.storageHookUpdate(st, sensitive)
	if err != nil {
		return nil, fail("%s", err)
	}
	for _, k := range deletes {
		delete(st.Opts, k)
		switch k {
		case "content":
			// parse_config gives a storage without content the plugin's default.
			st.Content = slices.Clone(pl.defContent)
		case "nodes":
			st.Nodes = nil
		}
	}
	for k, v := range opts {
		st.Opts[k] = v
	}
	if content != nil {
		st.Content = content
	}
	if nodes != nil {
		st.Nodes = nodes
	}
	wasShared := st.Shared
	st.syncFromOpts()
	if st.Shared != wasShared {
		// Shared storage has one namespace for the cluster.
		s.state.reindex()
	}
	out := map[string]any{"storage": id, "type": st.Type}
	if len(returned) > 0 {
		out["config"] = returned
	}
	return out, nil
}

// storageHookUpdate is on_update_hook of CIFSPlugin and PBSPlugin: only
// the sensitive keys given (or deleted) change.
func (s *Server) storageHookUpdate(st *Storage, sensitive map[string]*string) (map[string]any, error) {
	secrets := map[string]string{}
	for k, v := range s.state.StorageSecrets[st.ID] {
		secrets[k] = v
	}
	var returned map[string]any
	for _, k := range sortedKeys(sensitive) {
		v := sensitive[k]
		switch {
		case k == "encryption-key" && v != nil:
			var err error
			if returned, err = pbsEncryptionKey(st, v, secrets); err != nil {
				return nil, err
			}
		case k == "master-pubkey" && v != nil:
			secrets[k] = *v
			st.Opts[k] = "1"
		case v != nil:
			secrets[k] = *v
		default:
			delete(secrets, k)
			if k == "encryption-key" {
				delete(st.Opts, k)
			}
		}
	}
	s.setStorageSecrets(st.ID, secrets)
	return returned, nil
}

// storageDelete is Config.pm "delete": it refuses only a storage that is
// the base of another (storage_is_used); volumes on it do not count, and
// they stay where they are. ACLs and pools forget it (remove_storage_access).
func (s *Server) storageDelete(r *route.Request) (any, error) {
	id := r.Str("storage")
	fail := func(format string, args ...any) error { return route.Fail("delete storage failed: "+format, args...) }
	st := s.state.storage(id)
	if st == nil {
		return nil, fail("storage '%s' does not exist", id)
	}
	for _, other := range s.state.Storages {
		if base := other.cfgOpts()["base"]; base != "" {
			if sid, _, ok := strings.Cut(base, ":"); ok && sid == id {
				return nil, fail("can't remove storage - storage is used as base of another storage")
			}
		}
	}
	delete(s.state.StorageSecrets, id)
	s.state.Storages = slices.DeleteFunc(s.state.Storages, func(x *Storage) bool { return x == st })
	if id == "local" {
		// Plugin.pm parse_config: storage.cfg without a local dir
		// storage reads as the default one.
		s.state.Storages = append([]*Storage{{ID: "local", Type: "dir", Path: "/var/lib/vz", Total: st.Total,
			Content: []string{"backup", "images", "iso", "rootdir", "snippets", "vztmpl"},
			Opts:    map[string]string{"path": "/var/lib/vz", "prune-backups": "keep-all=1"}}}, s.state.Storages...)
	}
	// AccessControl.pm remove_storage_access: the storage's ACLs and pool
	// memberships go.
	s.access.dropACLTree("/storage/" + id)
	for _, p := range s.state.Pools {
		delete(p.Storage, id)
	}
	return nil, nil
}

func hasKey[V any](m map[string]V, k string) bool { _, ok := m[k]; return ok }
