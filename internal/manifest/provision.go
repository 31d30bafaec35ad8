package manifest

import (
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"strconv"
	"strings"
)

// Limits on what provisioning reads from the repository: it is held in
// memory (its hash decides whether a guest is provisioned again).
const (
	MaxProvisionFile  = 16 << 20  // bytes of one file
	MaxProvisionTotal = 128 << 20 // bytes of all sources of one guest
	MaxProvisionFiles = 10000     // files of all copied trees of one guest
)

// ProvisionTarget is where provisioning connects to, from the manifest alone.
// Address is "" when the guest declares no static IP and no address.
func (p *Provision) target(nicAddrs []string) (addr string, port int, user string) {
	addr, port, user = p.Address, p.Port, p.User
	if addr == "" && len(nicAddrs) > 0 {
		addr = nicAddrs[0]
	}
	if port == 0 {
		port = 22
	}
	if user == "" {
		user = "root"
	}
	return addr, port, user
}

// staticAddress is the address of a static "a.b.c.d/nn" (or IPv6) NIC
// setting, "" for dhcp, auto, manual or anything else.
func staticAddress(cidr string) string {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return ""
	}
	return p.Addr().String()
}

// ProvisionTarget returns the address, port and user provisioning connects
// to: spec.provision.address, else the first static IP of the NICs (IPv4
// before IPv6 on each NIC, NICs in slot order), port 22 and user root by
// default. ok is false without spec.provision.
func (c *Container) ProvisionTarget() (addr string, port int, user string, ok bool) {
	if c.Spec.Provision == nil {
		return "", 0, "", false
	}
	addr, port, user = c.Spec.Provision.target(ctStaticAddrs(c))
	return addr, port, user, true
}

// ProvisionTarget is Container.ProvisionTarget for a VM: the static
// addresses come from the cloud-init IP settings (ip, ipConfigs).
func (v *VirtualMachine) ProvisionTarget() (addr string, port int, user string, ok bool) {
	if v.Spec.Provision == nil {
		return "", 0, "", false
	}
	addr, port, user = v.Spec.Provision.target(vmStaticAddrs(v))
	if v.Spec.Provision.User == "" && v.Spec.CloudInit != nil && v.Spec.CloudInit.User != "" {
		user = v.Spec.CloudInit.User
	}
	return addr, port, user, true
}

func slotNumber(slot string) int {
	i := strings.IndexAny(slot, "0123456789")
	if i < 0 {
		return 1 << 30
	}
	n, err := strconv.Atoi(slot[i:])
	if err != nil {
		return 1 << 30
	}
	return n
}

// checkProvision runs the per-document rules of spec.provision; addr is the
// address provisioning would connect to ("" when none).
func checkProvision(p *Provision, c *checker, addr string) {
	const at = "spec.provision"
	if len(p.Packages) == 0 && len(p.Files) == 0 && len(p.Copy) == 0 && len(p.Commands) == 0 {
		c.errorf(at, "set packages, files, copy or commands")
	}
	if addr == "" {
		c.errorf(at, "no address to reach the guest at: set spec.provision.address, or give a NIC a static IP")
	}
	files := map[string]int{}
	for i := range p.Files {
		f := &p.Files[i]
		fp := indexPath(at+".files", i)
		hasContent := c.has(fp + ".content")
		switch {
		case hasContent && f.Source != "":
			c.errorf(fp+".source", "content and source are mutually exclusive")
		case !hasContent && f.Source == "":
			c.errorf(fp, "set content or source")
		case hasContent:
			f.Data = []byte(f.Content)
		}
		if first, dup := files[f.Path]; dup {
			c.errorf(fp+".path", "%s is already written by %s", f.Path, indexPath(at+".files", first))
		}
		files[f.Path] = i
		if f.Path == "/" || strings.HasSuffix(f.Path, "/") {
			c.errorf(fp+".path", "%s is a directory, not a file", f.Path)
		}
	}
	for i, cp := range p.Copy {
		if cp.Path != "" && cp.Path != "/" && path.Clean(cp.Path) != strings.TrimSuffix(cp.Path, "/") {
			c.errorf(indexPath(at+".copy", i)+".path", "%s is not a clean path (use %s)", cp.Path, path.Clean(cp.Path))
		}
	}
}

// provisionLocs are the fields the loader reports source errors on.
func provisionLocs(r Resource) []string {
	p := provisionOf(r)
	if p == nil {
		return nil
	}
	var out []string
	for i := range p.Files {
		out = append(out, indexPath("spec.provision.files", i)+".source")
	}
	for i := range p.Copy {
		out = append(out, indexPath("spec.provision.copy", i)+".source")
	}
	return out
}

// provisionOf is the resource's spec.provision, nil when none.
func provisionOf(r Resource) *Provision {
	switch v := r.(type) {
	case *Container:
		return v.Spec.Provision
	case *VirtualMachine:
		return v.Spec.Provision
	}
	return nil
}

// loadProvisionSources reads the repository files and directories that
// provisioning copies (spec.provision.files[].source, copy[].source),
// relative to the directory of each manifest file, never outside dir.
func loadProvisionSources(fsys fs.FS, dir string, resources []Resource) ErrorList {
	var errs ErrorList
	for _, r := range resources {
		p := provisionOf(r)
		if p == nil {
			continue
		}
		o := objectOf(r)
		fail := func(at, format string, args ...any) {
			line, col := o.locate(at)
			errs = append(errs, Error{File: o.Origin.File, Line: line, Column: col, Path: at, Message: fmt.Sprintf(format, args...)})
		}
		budget := &sourceBudget{bytes: MaxProvisionTotal, files: MaxProvisionFiles}
		// load resolves the source of the entry at and reads it with
		// read (which keeps what it read; nil after an error).
		load := func(at, src string, read func(full string) error) {
			full, err := sourcePath(dir, o.Origin.File, src)
			if err != nil {
				fail(at+".source", "%v", err)
			} else if err := read(full); err != nil {
				fail(at+".source", "%s: %v", src, err)
			}
		}
		for i := range p.Files {
			if f := &p.Files[i]; f.Source != "" {
				load(indexPath("spec.provision.files", i), f.Source, func(full string) (err error) {
					f.Data, err = readSource(fsys, full, budget)
					return err
				})
			}
		}
		for i := range p.Copy {
			cp := &p.Copy[i]
			load(indexPath("spec.provision.copy", i), cp.Source, func(full string) (err error) {
				cp.Tree, err = readTree(fsys, full, budget)
				return err
			})
		}
	}
	return errs
}

// sourcePath resolves src against the directory of the manifest file (file
// is relative to dir) and refuses a result outside dir.
func sourcePath(dir, file, src string) (string, error) {
	rel := path.Clean(path.Join(path.Dir(file), src))
	if rel == ".." || strings.HasPrefix(rel, "../") || path.IsAbs(rel) {
		return "", fmt.Errorf("%s leaves the repository", src)
	}
	if dir == "" || dir == "." {
		return rel, nil
	}
	return path.Join(dir, rel), nil
}

type sourceBudget struct {
	bytes int64
	files int
}

func (b *sourceBudget) take(size int64) error {
	b.files--
	b.bytes -= size
	switch {
	case size > MaxProvisionFile:
		return fmt.Errorf("%d bytes, larger than the %d-byte limit for one file", size, MaxProvisionFile)
	case b.bytes < 0:
		return fmt.Errorf("the sources of this guest exceed %d bytes", MaxProvisionTotal)
	case b.files < 0:
		return fmt.Errorf("the sources of this guest exceed %d files", MaxProvisionFiles)
	}
	return nil
}

// readSource reads one regular file (a symbolic link inside the repository
// is followed by the fs, which refuses one that leaves it).
func readSource(fsys fs.FS, p string, b *sourceBudget) ([]byte, error) {
	st, err := fs.Stat(fsys, p)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %s", errText(err))
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("not a regular file")
	}
	if err := b.take(st.Size()); err != nil {
		return nil, err
	}
	data, err := fs.ReadFile(fsys, p)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %s", errText(err))
	}
	if data == nil {
		data = []byte{}
	}
	return data, nil
}

// readTree reads every regular file under root, in lexical order; hidden
// entries (.git) are skipped, symbolic links are refused.
func readTree(fsys fs.FS, root string, b *sourceBudget) ([]TreeFile, error) {
	st, err := fs.Stat(fsys, root)
	if err != nil {
		return nil, fmt.Errorf("cannot read: %s", errText(err))
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("not a directory")
	}
	out := []TreeFile{}
	err = fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p != root && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		rel := strings.TrimPrefix(strings.TrimPrefix(p, root), "/")
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			return fmt.Errorf("%s is a symbolic link: copy takes regular files and directories only", rel)
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if err := b.take(info.Size()); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		mode := uint32(0o644)
		if info.Mode().Perm()&0o111 != 0 {
			mode = 0o755
		}
		out = append(out, TreeFile{Path: rel, Mode: mode, Data: data})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s", errText(err))
	}
	return out, nil
}
