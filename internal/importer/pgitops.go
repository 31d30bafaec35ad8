// Package importer turns other tools' repositories into proxmops manifests.
// ProxmoxGitOps reads a Proxmox-GitOps monorepo: its container libraries
// (libs/NAME/container.env and their cookbooks) and the global files that set
// the node, network and OS template its pipeline creates containers with.
package importer

import (
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Options tune an import.
type Options struct {
	// VMIDOffset is added to every container's ID (Proxmox-GitOps' example
	// uses ID=42; Proxmox VMIDs start at 100).
	VMIDOffset int
}

// Proxmox's VMID range (pve-common, PVE::JSONSchema::pve_verify_vmid:
// /^[1-9][0-9]{2,8}$/).
const (
	minVMID = 100
	maxVMID = 999999999
)

// Import is the result of reading a monorepo: the resources to write, the
// cookbook trees to copy next to them, and the report.
type Import struct {
	Template   *manifest.ContainerTemplate
	Containers []*Lib
	Report     *Report
	dir        string
	libraries  string // config/libraries, "" when the monorepo has none
	// trees are the files of every folder copied into the output, by
	// their path in the monorepo.
	trees map[string][]treeFile
}

// Lib is one container library and the Container made from it.
type Lib struct {
	Name      string // the folder's name under libs/
	EnvFile   string // relative to the monorepo
	Container *manifest.Container
	Cookbooks []string // libs it runs (itself and the libs its metadata.rb depends on)
	ip        string   // IP as container.env gives it, the address cinc-client gets
	idFile    string   // where ID was set (container.local.env may override it)
	idLine    int
}

// The keys of container.env the pipeline reads (.gitea/workflows and
// base/.gitea/workflows/action.yml).
var knownKeys = map[string]bool{"IP": true, "ID": true, "CORES": true, "MEMORY": true, "SWAP": true, "DISK": true, "BOOT": true, "MOUNT": true}

// ProxmoxGitOps reads the monorepo at dir. An *Error lists every problem
// that stops the import (a VMID Proxmox refuses, a value that is not a
// number...); everything else it cannot map is in the report's findings.
func ProxmoxGitOps(dir string, opts Options) (*Import, error) {
	if opts.VMIDOffset < 0 {
		return nil, fmt.Errorf("--vmid-offset must not be negative, got %d", opts.VMIDOffset)
	}
	libsDir := filepath.Join(dir, "libs")
	entries, err := os.ReadDir(libsDir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s has no libs folder: not a Proxmox-GitOps monorepo", dir)
		}
		return nil, err
	}
	rep := &Report{Source: dir, Settings: map[string]Setting{}}
	set, errs := readSettings(dir, rep)
	imp := &Import{Report: rep, dir: dir, trees: map[string][]treeFile{}}
	if st, err := os.Stat(filepath.Join(dir, "config", "libraries")); err == nil && st.IsDir() {
		imp.libraries = "config/libraries"
	}
	for _, name := range []string{"container.env", "container.local.env", "config.env"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			rep.add(Finding{File: name, Reason: "the Proxmox-GitOps control plane (Gitea and its runner); proxmops replaces it, so it is not imported"})
		}
	}
	byVMID := map[int]string{}
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		lib, lerrs := readLib(dir, e.Name(), set, opts, rep)
		errs = append(errs, lerrs...)
		if lib == nil {
			continue
		}
		if other, dup := byVMID[lib.Container.Spec.VMID]; dup {
			errs = append(errs, Finding{File: lib.idFile, Line: lib.idLine, Item: "ID", Reason: fmt.Sprintf("VMID %d is already used by %s", lib.Container.Spec.VMID, other)})
		}
		byVMID[lib.Container.Spec.VMID] = lib.idFile
		imp.Containers = append(imp.Containers, lib)
	}
	tpl, err := templateOf(set)
	if err != nil {
		errs = append(errs, Finding{File: set.vals["PROXMOX_TEMPLATE"].From, Item: "PROXMOX_TEMPLATE", Reason: err.Error()})
	}
	errs = append(errs, imp.scanCookbooks()...)
	if len(errs) > 0 {
		sortFindings(errs)
		return nil, &Error{Problems: errs}
	}
	if len(imp.Containers) == 0 {
		return nil, fmt.Errorf("%s: no libs/*/container.env: nothing to import", dir)
	}
	imp.Template = tpl
	rep.add(Finding{File: "libs/*/container.env", Item: "features", Reason: "Proxmox-GitOps sets keyctl=1 (and mount=cifs for a share) when it logs in with root's password; the containers get nesting only, which an API token may set: add keyctl under spec.features where a cookbook needs it"})
	rep.add(Finding{File: "libs/*/container.env", Item: "pubkey", Reason: "Proxmox-GitOps injects a key of its own per container (/share/.keys/ID); proxmops provisions with its own key instead"})
	for k, v := range set.vals {
		rep.Settings[k] = *v
	}
	rep.Env = set.env
	for _, lib := range imp.Containers {
		lib.Container.Spec.Template = tpl.Metadata.Name
		lib.Container.Spec.Provision = imp.provisionOf(lib)
	}
	imp.checkRecipes()
	rep.sortFindings()
	return imp, nil
}

// readLib reads libs/NAME: nil without a container.env (a cookbook other
// libs use, such as share).
func readLib(dir, name string, set *settings, opts Options, rep *Report) (*Lib, []Finding) {
	rel := "libs/" + name
	base := filepath.Join(dir, "libs", name)
	envName := ""
	for _, n := range []string{"container.env", "config.env"} { // config.env: its name before Proxmox-GitOps renamed it
		if _, err := os.Stat(filepath.Join(base, n)); err == nil {
			envName = n
			break
		}
	}
	if envName == "" {
		if empty, _ := isEmptyDir(base); empty {
			rep.add(Finding{File: rel, Reason: "empty: a Git submodule that is not checked out? Clone with --recurse-submodules (or run git submodule update --init --recursive) and import again"})
		} else {
			rep.add(Finding{File: rel, Reason: "no container.env: a cookbook, not a container; copied only for the libs that depend on it"})
		}
		return nil, nil
	}
	envFile := rel + "/" + envName
	vals, errs := readEnvFiles(dir, rel, envName, rep)
	if len(errs) > 0 {
		return nil, errs
	}
	ct, errs := containerOf(name, envFile, vals, set, opts, rep)
	if len(errs) > 0 {
		return nil, errs
	}
	lib := &Lib{Name: name, EnvFile: envFile, Container: ct, Cookbooks: []string{name}, idFile: vals["ID"].file, idLine: vals["ID"].line,
		ip: strings.SplitN(strings.TrimSpace(vals["IP"].value), "/", 2)[0]}
	lib.Cookbooks = append(lib.Cookbooks, dependencies(dir, name, rep)...)
	return lib, nil
}

func isEmptyDir(p string) (bool, error) {
	entries, err := os.ReadDir(p)
	return err == nil && len(entries) == 0, err
}

// envValue is a container.env value with the file and line it came from.
type envVal struct {
	value, file string
	line        int
}

// readEnvFiles sources container.env, then container.local.env over it, as
// the pipeline does (config.env and config.local.env in the older layout);
// other container.*.env files (a stage's) are listed.
func readEnvFiles(dir, rel, envName string, rep *Report) (map[string]envVal, []Finding) {
	vals := map[string]envVal{}
	prior := map[string]string{}
	stem := strings.TrimSuffix(envName, ".env")
	files := []string{envName, stem + ".local.env"}
	var errs []Finding
	for _, n := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel), n))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		file := rel + "/" + n
		if err != nil {
			errs = append(errs, Finding{File: file, Reason: err.Error()})
			continue
		}
		rep.Read = append(rep.Read, file)
		vars, probs := ParseEnv(string(data), prior)
		for _, p := range probs {
			rep.add(Finding{File: file, Line: p.Line, Item: strings.TrimSpace(p.Text), Reason: p.Reason})
		}
		for _, v := range vars {
			prior[v.Key] = v.Value
			if !knownKeys[v.Key] {
				rep.add(Finding{File: file, Line: v.Line, Item: v.Key, Reason: "not a key Proxmox-GitOps' pipeline reads (IP, ID, CORES, MEMORY, SWAP, DISK, BOOT, MOUNT)"})
				continue
			}
			vals[v.Key] = envVal{value: v.Value, file: file, line: v.Line}
		}
	}
	matches, _ := filepath.Glob(filepath.Join(dir, filepath.FromSlash(rel), stem+".*.env"))
	sort.Strings(matches)
	for _, m := range matches {
		if b := filepath.Base(m); b != files[1] {
			rep.add(Finding{File: rel + "/" + b, Reason: "a stage's settings (sourced only for a forked repository's deployment): not imported"})
		}
	}
	return vals, errs
}

var dependsRE = regexp.MustCompile(`(?m)^\s*depends\s+['"]([^'"]+)['"]`)

// dependencies are the libs a lib's metadata.rb depends on; a dependency
// that is not a lib (the control plane's config cookbook) is listed.
func dependencies(dir, name string, rep *Report) []string {
	file := "libs/" + name + "/metadata.rb"
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(file)))
	if err != nil {
		return nil
	}
	var out []string
	for _, m := range dependsRE.FindAllStringSubmatch(string(data), -1) {
		dep := m[1]
		if st, err := os.Stat(filepath.Join(dir, "libs", dep)); err == nil && st.IsDir() && dep != name {
			out = append(out, dep)
			continue
		}
		rep.add(Finding{File: file, Item: "depends '" + dep + "'", Reason: "not a lib of the monorepo: not copied into the container"})
	}
	return out
}

// missingReason says why each key the pipeline reads is required: every
// one goes to the container role (base/.gitea/workflows/action.yml, inputs
// required), and an empty one fails it there.
var missingReason = map[string]string{
	"IP":     "the container role builds net0's ip from it",
	"ID":     "the container role creates the container with it as its VMID",
	"CORES":  "the container role passes it to community.general.proxmox's cores, an integer, which an empty value fails",
	"MEMORY": "the container role passes it to community.general.proxmox's memory, an integer, which an empty value fails",
	"SWAP": "the container role passes it to community.general.proxmox's swap, an integer, which an empty value fails " +
		"(Proxmox's own default is 512: write SWAP=512 for it)",
	"DISK": "the container role passes it to community.general.proxmox's disk (STORAGE:GiB)",
}

// containerOf maps one lib's values to a Container, or lists every
// problem of its values at once.
func containerOf(name, envFile string, vals map[string]envVal, set *settings, opts Options, rep *Report) (*manifest.Container, []Finding) {
	var errs []Finding
	fail := func(key, format string, args ...any) {
		v := vals[key]
		file, line := v.file, v.line
		if file == "" {
			file = envFile
		}
		errs = append(errs, Finding{File: file, Line: line, Item: key, Reason: fmt.Sprintf(format, args...)})
	}
	missing := map[string]bool{}
	for _, k := range []string{"IP", "ID", "CORES", "MEMORY", "SWAP", "DISK"} {
		if strings.TrimSpace(vals[k].value) == "" {
			missing[k] = true
			fail(k, "missing: %s", missingReason[k])
		}
	}
	if !dnsLabel(name) {
		errs = append(errs, Finding{File: envFile, Item: "folder name", Reason: fmt.Sprintf("the lib's folder name %q is not a lower-case DNS label, which the container's hostname and name must be", name)})
	}
	// num reads a whole number of at least min; ok is false when it is
	// missing (already reported) or not one.
	num := func(key string, min int) (n int, ok bool) {
		if missing[key] {
			return 0, false
		}
		n, err := strconv.Atoi(strings.TrimSpace(vals[key].value))
		if err != nil || n < min {
			fail(key, "%q is not a whole number of at least %d", vals[key].value, min)
			return 0, false
		}
		return n, true
	}
	id, idOK := num("ID", 0)
	vmid := id + opts.VMIDOffset
	switch {
	case !idOK:
	case vmid < minVMID:
		fail("ID", "VMID %d is below %d, the lowest Proxmox accepts; use --vmid-offset N to shift every ID (--vmid-offset %d makes this one %d)",
			vmid, minVMID, suggestOffset(id), id+suggestOffset(id))
	case vmid > maxVMID:
		fail("ID", "VMID %d is above %d, the highest Proxmox accepts", vmid, maxVMID)
	}
	swap, _ := num("SWAP", 0)
	cores, _ := num("CORES", 1)
	memory, _ := num("MEMORY", 16)
	spec := manifest.ContainerSpec{
		VMID:     vmid,
		Hostname: name,
		Cores:    cores,
		Memory:   memory,
		Swap:     &swap,
		Features: &manifest.Features{Nesting: true},
		State:    manifest.StateRunning,
	}
	if !missing["DISK"] {
		rootfs, err := rootfsOf(vals["DISK"].value)
		if err != nil {
			fail("DISK", "%v", err)
		}
		spec.RootFS = rootfs
	}
	if !missing["IP"] {
		nic, err := nicOf(vals["IP"].value, set)
		if err != nil {
			fail("IP", "%v", err)
		}
		spec.Net = []manifest.ContainerNIC{nic}
	}
	if b, ok := vals["BOOT"]; ok {
		on, err := boolOf(b.value)
		if err != nil {
			fail("BOOT", "%v", err)
		}
		spec.OnBoot = &on
	}
	spec.Mountpoints = mountsOf(vals["MOUNT"], rep)
	if len(errs) > 0 {
		return nil, errs
	}
	ct := &manifest.Container{Spec: spec}
	ct.Metadata = manifest.Metadata{Name: name, Node: set.get("PROXMOX_NODE")}
	return ct, nil
}

// suggestOffset is the smallest multiple of 100 that lifts id to a valid VMID.
func suggestOffset(id int) int {
	off := 100
	for id+off < minVMID {
		off += 100
	}
	return off
}

var dnsLabelRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

func dnsLabel(s string) bool { return dnsLabelRE.MatchString(s) }

// rootfsOf reads DISK, "storage:GiB" as community.general.proxmox takes it.
func rootfsOf(disk string) (*manifest.RootFS, error) {
	storage, size, ok := strings.Cut(strings.TrimSpace(disk), ":")
	if !ok || storage == "" {
		return nil, fmt.Errorf("%q is not STORAGE:GiB (e.g. local-lvm:8)", disk)
	}
	n, err := strconv.ParseFloat(size, 64)
	if err != nil || n <= 0 {
		return nil, fmt.Errorf("%q: the size %q is not a number of GiB", disk, size)
	}
	sz, err := manifest.ParseSize(size + "G")
	if err != nil {
		return nil, fmt.Errorf("%q: %v", disk, err)
	}
	return &manifest.RootFS{Storage: storage, Size: sz}, nil
}

// nicOf builds net0 as the container role does:
// name=PROXMOX_INTERFACE,gw=PROXMOX_GATEWAY,ip=IP/PROXMOX_MASK,bridge=PROXMOX_BRIDGE.
func nicOf(ip string, set *settings) (manifest.ContainerNIC, error) {
	ip = strings.TrimSpace(ip)
	mask := set.get("PROXMOX_MASK")
	cidr := ip
	if !strings.Contains(ip, "/") {
		cidr = ip + "/" + mask
	}
	p, err := netip.ParsePrefix(cidr)
	if err != nil || !p.Addr().Is4() {
		return manifest.ContainerNIC{}, fmt.Errorf("%q with PROXMOX_MASK %q is not an IPv4 address with a prefix length", ip, mask)
	}
	nic := manifest.ContainerNIC{Slot: "net0", Name: set.get("PROXMOX_INTERFACE"), Bridge: set.get("PROXMOX_BRIDGE"), IP: cidr}
	if gw := set.get("PROXMOX_GATEWAY"); gw != "" {
		a, err := netip.ParseAddr(gw)
		if err != nil || !a.Is4() {
			return nic, fmt.Errorf("PROXMOX_GATEWAY %q (from %s) is not an IPv4 address", gw, set.vals["PROXMOX_GATEWAY"].From)
		}
		nic.Gw = gw
	}
	return nic, nil
}

// boolOf reads BOOT as Ansible reads the onboot option.
func boolOf(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "yes", "true", "1", "on", "y":
		return true, nil
	case "no", "false", "0", "off", "n", "":
		return false, nil
	}
	return false, fmt.Errorf("%q is not yes or no", s)
}

// mountsOf reads MOUNT, a comma-separated list the container role reads as:
// VOLUME:PATH entries become mount points (mpN: VOLUME,mp=PATH,ro=0,acl=1),
// /dev/... entries device passthrough, bare names CIFS shares of the share
// lib mounted inside the guest by the base role.
func mountsOf(v envVal, rep *Report) []manifest.Mountpoint {
	var out []manifest.Mountpoint
	acl := true
	for _, entry := range strings.Split(v.value, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		at := func(reason string) {
			rep.add(Finding{File: v.file, Line: v.line, Item: "MOUNT " + entry, Reason: reason})
		}
		i := strings.LastIndexByte(entry, ':')
		switch {
		case i > 0:
			vol, path := entry[:i], entry[i+1:]
			if !strings.HasPrefix(path, "/") {
				at("the mount path inside the container must be absolute")
				continue
			}
			mp := manifest.Mountpoint{Path: path, ACL: &acl}
			if strings.HasPrefix(vol, "/") {
				mp.Bind = vol
			} else if st, size, ok := strings.Cut(vol, ":"); ok {
				sz, err := manifest.ParseSize(size + "G")
				if err != nil {
					at(fmt.Sprintf("the volume %q is not STORAGE:GiB or a host path", vol))
					continue
				}
				mp.Storage, mp.Size = st, sz
			} else {
				at(fmt.Sprintf("the volume %q is an existing volume; proxmops creates mount points from a storage and a size, or binds a host path", vol))
				continue
			}
			out = append(out, mp)
		case strings.HasPrefix(entry, "/"):
			at("device passthrough (devN) is not a field of proxmops' Container: add it on the node by hand")
		default:
			at("a CIFS share mounted inside the container by Proxmox-GitOps' base role (from its share lib): not mapped; mount it from a provisioning command, or bind a host path")
		}
	}
	for i := range out {
		out[i].Slot = "mp" + strconv.Itoa(i)
	}
	return out
}

var templateRE = regexp.MustCompile(`^([a-z0-9]+(?:-[a-z0-9]+)*)_`)

// templateOf is the ContainerTemplate of PROXMOX_STORAGE and
// PROXMOX_TEMPLATE: the container role names the volume
// STORAGE/TEMPLATE_ARCH.tar.zst and downloads it as an appliance when it is
// missing; amd64 is assumed (the role asks the node's kernel).
func templateOf(set *settings) (*manifest.ContainerTemplate, error) {
	tpl := strings.TrimSpace(set.get("PROXMOX_TEMPLATE"))
	storage, err := set.storageID()
	if err != nil {
		return nil, err
	}
	m := templateRE.FindStringSubmatch(tpl)
	if m == nil || strings.ContainsAny(tpl, "/ ") {
		return nil, fmt.Errorf("%q is not an appliance name such as debian-13-standard_13.1-2", tpl)
	}
	file := tpl + "_amd64.tar.zst"
	for _, ext := range []string{".tar.zst", ".tar.gz", ".tar.xz"} {
		if strings.HasSuffix(tpl, ext) { // a full file name already
			file, tpl = tpl, strings.TrimSuffix(tpl, ext)
		}
	}
	name := strings.Trim(regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(strings.ToLower(tpl), "-"), "-")
	if len(name) > 63 {
		name = strings.TrimRight(name[:63], "-")
	}
	ct := &manifest.ContainerTemplate{Spec: manifest.ContainerTemplateSpec{
		Appliance: file,
		Storage:   storage,
	}}
	ct.Metadata = manifest.Metadata{Name: name, Node: set.get("PROXMOX_NODE")}
	return ct, nil
}
