package manifest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
)

// IsManifestFile reports whether a file name is loaded as manifests
// (*.yaml or *.yml, not hidden).
func IsManifestFile(name string) bool {
	base := path.Base(name)
	if strings.HasPrefix(base, ".") {
		return false
	}
	ext := strings.ToLower(path.Ext(base))
	return ext == ".yaml" || ext == ".yml"
}

// LoadPath loads the manifests at p: every manifest under it when it is a
// directory (LoadDir), the documents of the one file otherwise, with the
// same checks and the same ErrorList.
func LoadPath(p string) (*Set, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("open manifests: %w", err)
	}
	if fi.IsDir() {
		return LoadDir(p)
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("open manifests: %w", err)
	}
	rs, errs := ParseFile(filepath.Base(p), data)
	set, serrs := NewSet(rs)
	set.Files = 1
	errs = append(errs, serrs...)
	if len(errs) > 0 {
		return set, errs.Err()
	}
	return set, nil
}

// LoadDir loads every manifest under the directory root (see LoadFS). File
// names in errors and origins are relative to root. Symbolic links are
// never followed.
func LoadDir(root string) (*Set, error) {
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("open manifest directory: %w", err)
	}
	defer r.Close()
	return LoadFS(r.FS(), ".")
}

// LoadFS loads every *.yaml and *.yml file under dir in fsys, recursively
// (hidden files and directories, such as .git, are skipped), decodes each
// document strictly and runs the cross-document checks.
//
// The error, when not nil, is an ErrorList with every problem found, sorted
// by file and line. The Set is returned even then, holding the resources
// that decoded, so that callers can show them; it must not be applied.
func LoadFS(fsys fs.FS, dir string) (*Set, error) {
	var errs ErrorList
	type file struct {
		path, rel string
	}
	var files []file
	walkErr := fs.WalkDir(fsys, dir, func(p string, d fs.DirEntry, err error) error {
		rel := relPath(dir, p)
		if err != nil {
			if p == dir {
				return err
			}
			errs = append(errs, Error{File: rel, Message: "cannot read: " + errText(err)})
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if p != dir && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			if e, ok := checkSymlink(fsys, dir, p); !ok {
				errs = append(errs, Error{File: rel, Message: e})
			}
			return nil
		case d.IsDir():
			return nil
		case !IsManifestFile(p):
			return nil
		case !d.Type().IsRegular():
			errs = append(errs, Error{File: rel, Message: "not a regular file; skipped"})
			return nil
		}
		files = append(files, file{p, rel})
		return nil
	})
	if walkErr != nil {
		return nil, fmt.Errorf("read manifests: %w", walkErr)
	}
	// Files are read and decoded independently: spread them over the CPUs,
	// keep the order.
	type parsed struct {
		read bool
		res  []Resource
		errs ErrorList
	}
	results := make([]parsed, len(files))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(files)) {
		wg.Go(func() {
			buf := make([]byte, readBufferSize) // ParseFile keeps no reference to it
			for {
				i := int(next.Add(1) - 1)
				if i >= len(files) {
					return
				}
				data, e := readLimited(fsys, files[i].path, buf)
				if data != nil {
					buf = data[:0] // keep a buffer a large file grew
				}
				if e != "" {
					results[i] = parsed{errs: ErrorList{{File: files[i].rel, Message: e}}}
					continue
				}
				res, ferrs := ParseFile(files[i].rel, data)
				results[i] = parsed{true, res, ferrs}
			}
		})
	}
	wg.Wait()
	var all []Resource
	read := 0
	for _, r := range results {
		all = append(all, r.res...)
		errs = append(errs, r.errs...)
		if r.read {
			read++
		}
	}
	errs = append(errs, loadProvisionSources(fsys, dir, all)...)
	set, serrs := NewSet(all)
	set.Files = read
	errs = append(errs, serrs...)
	if err := errs.Err(); err != nil {
		return set, err
	}
	return set, nil
}

func relPath(dir, p string) string {
	if dir == "." || dir == "" {
		return p
	}
	if r, ok := strings.CutPrefix(p, dir+"/"); ok {
		return r
	}
	return p
}

func errText(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkSymlink decides what to say about a symbolic link. Links are never
// followed: one inside the tree is skipped silently (its target is loaded on
// its own), one leaving the tree is an error.
func checkSymlink(fsys fs.FS, dir, p string) (string, bool) {
	target, err := fs.ReadLink(fsys, p)
	if err != nil {
		return "symbolic link not followed (its target cannot be read: " + errText(err) + ")", false
	}
	if path.IsAbs(target) || strings.HasPrefix(target, "/") {
		return fmt.Sprintf("symbolic link to %s leaves the source tree; not followed", target), false
	}
	resolved := path.Join(path.Dir(p), target)
	base := path.Clean(dir)
	if base == "." {
		if resolved == ".." || strings.HasPrefix(resolved, "../") {
			return fmt.Sprintf("symbolic link to %s leaves the source tree; not followed", target), false
		}
		return "", true
	}
	if resolved != base && !strings.HasPrefix(resolved, base+"/") {
		return fmt.Sprintf("symbolic link to %s leaves the source tree; not followed", target), false
	}
	return "", true
}

// readBufferSize is the read buffer each loading worker reuses from file to
// file; a manifest file is a few KiB.
const readBufferSize = 64 << 10

// readLimited reads a file of at most MaxFileSize bytes into buf (grown if
// needed) without ever holding more than that in memory, and returns the
// bytes read, which alias buf. A file that fits buf is read with two read
// calls (its bytes, then end of file) and no other; a larger one is sized
// by a stat first, so that a file over the limit is refused unread.
func readLimited(fsys fs.FS, p string, buf []byte) ([]byte, string) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, "cannot read: " + errText(err)
	}
	defer f.Close()
	data := buf[:0]
	statted := false
	for {
		if len(data) == cap(data) {
			if !statted {
				statted = true
				if st, err := f.Stat(); err == nil {
					if st.Size() > MaxFileSize {
						return nil, fmt.Sprintf("file is %d bytes, larger than the %d-byte limit for a manifest; not read", st.Size(), MaxFileSize)
					}
					// +1: end of file is seen without growing again.
					if need := int(st.Size()) + 1 - len(data); need > 0 {
						data = slices.Grow(data, need)
					}
				}
			}
			if len(data) == cap(data) {
				// No size, or the file grew since: read on, within the limit.
				data = slices.Grow(data, min(max(cap(data), 512), MaxFileSize+1-len(data)))
			}
		}
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			return data, ""
		}
		if err != nil {
			return nil, "cannot read: " + errText(err)
		}
		if len(data) > MaxFileSize {
			return nil, fmt.Sprintf("file is larger than the %d-byte limit for a manifest; not read", MaxFileSize)
		}
	}
}

// ParseFile decodes and checks every document of one file, without the
// cross-document checks of NewSet. name is used in errors and origins.
// It keeps no reference to data.
func ParseFile(name string, data []byte) ([]Resource, ErrorList) {
	docs, perrs := parseYAML(data)
	var errs ErrorList
	for _, pe := range perrs {
		errs = append(errs, Error{File: name, Line: pe.line, Column: pe.col, Path: pe.path, Message: pe.msg})
	}
	var out []Resource
	for _, doc := range docs {
		r, derrs := decodeDocument(name, doc)
		errs = append(errs, derrs...)
		if r != nil {
			out = append(out, r)
		}
	}
	return out, errs
}

type envelope[S any] struct {
	APIVersion string   `json:"apiVersion" pm:"required"`
	Kind       string   `json:"kind" pm:"required"`
	Metadata   Metadata `json:"metadata" pm:"required"`
	Spec       S        `json:"spec" pm:"required"`
}

// envelopes are each kind's document shape: envelope with the kind's
// spec type, made once from the kind table.
var envelopes = func() map[Kind]reflect.Type {
	base := reflect.TypeFor[envelope[struct{}]]()
	out := make(map[Kind]reflect.Type, len(kindTable))
	for _, info := range kindTable {
		fields := make([]reflect.StructField, base.NumField())
		for i := range fields {
			fields[i] = base.Field(i)
		}
		fields[len(fields)-1].Type = info.specType()
		out[info.Kind] = reflect.StructOf(fields)
	}
	return out
}()

// decodeResource builds a resource of the kind from a document: its
// envelope decoded strictly, then the kind's struct made of its metadata
// and spec.
func decodeResource(info KindInfo, d *decoder, n *yNode) Resource {
	env := reflect.New(envelopes[info.Kind]).Elem()
	d.decodeStruct(n, env)
	res := reflect.New(info.resource)
	res.Elem().FieldByName("Object").Set(reflect.ValueOf(Object{Metadata: env.FieldByName("Metadata").Interface().(Metadata)}))
	res.Elem().FieldByName("Spec").Set(env.FieldByName("Spec"))
	return res.Interface().(Resource)
}

// kindNameList is every kind's name, for errors and suggestions.
var kindNameList = func() []string {
	ks := Kinds()
	out := make([]string, len(ks))
	for i, k := range ks {
		out[i] = string(k)
	}
	return out
}()

func kindNames() []string { return slices.Clone(kindNameList) }

// decodeDocument decodes one document into a resource and checks it on its
// own. It returns nil when the document is too broken to be a resource.
func decodeDocument(file string, doc yDoc) (Resource, ErrorList) {
	d := newDecoder()
	root := doc.root
	var res Resource
	if root.kind != mapNode {
		d.errorf(root, "", "a manifest must be a mapping with apiVersion, kind, metadata and spec; got %s", root.describe())
	} else {
		kindNode := root.get("kind")
		switch {
		case kindNode == nil:
			d.errorf(root, "", "missing required field `kind` (one of %s)", strings.Join(kindNameList, ", "))
		case kindNode.kind != scalarNode || kindNode.typ != tString:
			d.errorf(kindNode, "kind", "expected a kind name, got %s", kindNode.describe())
		default:
			info, ok := Info(Kind(kindNode.text))
			if !ok {
				d.errorf(kindNode, "kind", "unknown kind %q%s", kindNode.text, kindSuggestion(kindNode.text))
				break
			}
			res = decodeResource(info, d, root)
			if av := root.get("apiVersion"); av != nil && av.kind == scalarNode && av.text != APIVersion {
				d.errorf(av, "apiVersion", "apiVersion must be %s, got %q", APIVersion, av.text)
			}
		}
	}
	errs := make(ErrorList, 0, len(d.errs))
	if res != nil {
		o := objectOf(res)
		o.Origin = Origin{File: file, Line: root.line, Column: root.col, Document: doc.index}
		v := &checker{root: root}
		checkResource(res, v)
		o.locs = v.keepLocs(res)
		d.errs = append(d.errs, v.errs...)
	}
	for _, pe := range d.errs {
		errs = append(errs, Error{File: file, Line: pe.line, Column: pe.col, Path: pe.path, Message: pe.msg})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return res, nil
}

func kindSuggestion(k string) string {
	if s := didYouMean(k, kindNameList); s != "" {
		return s
	}
	return "; kinds: " + strings.Join(kindNameList, ", ")
}

func (n *yNode) get(key string) *yNode {
	for i, k := range n.keys {
		if k.text == key {
			return n.vals[i]
		}
	}
	return nil
}

// at finds the node at a field path such as `spec.disks[1].size` or
// `metadata.annotations["proxmops.dev/sync"]`; when the path goes further
// than the document, it returns the deepest node found.
func (n *yNode) at(p string) *yNode {
	found, _ := n.find(p)
	return found
}

// find walks a field path and reports whether it reached its end.
func (n *yNode) find(p string) (*yNode, bool) {
	cur := n
	for p != "" && cur != nil {
		var seg string
		switch {
		case strings.HasPrefix(p, "[\""):
			end := strings.Index(p, "\"]")
			if end < 0 {
				return cur, false
			}
			s, err := strconv.Unquote(p[1 : end+1])
			if err != nil {
				return cur, false
			}
			seg, p = s, p[end+2:]
		case strings.HasPrefix(p, "["):
			end := strings.IndexByte(p, ']')
			if end < 0 {
				return cur, false
			}
			i, err := strconv.Atoi(p[1:end])
			if err != nil || cur.kind != seqNode || i < 0 || i >= len(cur.vals) {
				return cur, false
			}
			cur, p = cur.vals[i], p[end+1:]
			p = strings.TrimPrefix(p, ".")
			continue
		default:
			end := strings.IndexAny(p, ".[")
			if end < 0 {
				end = len(p)
			}
			seg, p = p[:end], p[end:]
		}
		p = strings.TrimPrefix(p, ".")
		if cur.kind != mapNode {
			return cur, false
		}
		next := cur.get(seg)
		if next == nil {
			// point at the key when the value is missing
			return cur, false
		}
		cur = next
	}
	return cur, true
}

// objectOf is the Object every kind embeds (its promoted object method),
// so a new kind needs no case here.
func objectOf(r Resource) *Object {
	if o, ok := r.(interface{ object() *Object }); ok {
		return o.object()
	}
	panic("manifest: unknown resource type")
}

// loc is a remembered position of a field, for the cross-document checks
// that run after the YAML tree is gone.
type loc struct {
	path      string
	line, col int
}

func (o *Object) locate(p string) (int, int) {
	best := -1
	for i, l := range o.locs {
		if l.path == p {
			return l.line, l.col
		}
		if strings.HasPrefix(p, l.path) && (best < 0 || len(l.path) > len(o.locs[best].path)) {
			best = i
		}
	}
	if best >= 0 {
		return o.locs[best].line, o.locs[best].col
	}
	return o.Origin.Line, o.Origin.Column
}
