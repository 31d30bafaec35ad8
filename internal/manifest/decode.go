package manifest

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// decoder turns a yNode tree into typed values, collecting every error
// instead of stopping at the first one.
type decoder struct {
	errs []posError
	segs []pathSeg // the field path of the value being decoded
	buf  [8]pathSeg
}

func newDecoder() *decoder {
	d := &decoder{}
	d.segs = d.buf[:0]
	return d
}

// pathSeg is one segment of the field path (spec.disks[0].size) of the
// value being decoded. The path is kept as a stack of segments and spelled
// out only when an error names it, so that decoding a valid document builds
// no path strings.
type pathSeg struct {
	name  string // a field or map key, when index < 0
	index int    // a list index, or -1
}

func (d *decoder) push(s pathSeg) { d.segs = append(d.segs, s) }
func (d *decoder) pop()           { d.segs = d.segs[:len(d.segs)-1] }

// here spells out the field path of the value being decoded.
func (d *decoder) here() string {
	p := ""
	for _, s := range d.segs {
		if s.index >= 0 {
			p = indexPath(p, s.index)
		} else {
			p = joinPath(p, s.name)
		}
	}
	return p
}

func (d *decoder) errorf(n *yNode, path, format string, args ...any) {
	pe := posError{path: path, msg: fmt.Sprintf(format, args...)}
	if n != nil {
		pe.line, pe.col = n.line, n.col
	}
	d.errs = append(d.errs, pe)
}

// nodeDecoder is implemented by types with their own YAML shape (a size
// string, a string-or-object reference, ...).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yNode) // errors go to d.here()
}

// fieldHinter gives a tailored message for a field a struct refuses, e.g. an
// inline password where only a reference is accepted.
type fieldHinter interface {
	fieldHint(name string) string
}

// fieldInfo is a struct field with its manifest name and rules, read from the
// tags `json:"name,omitempty"` and `pm:"required,enum=a|b,min=1,max=9,format=f"`.
// The fields of an embedded (anonymous, untagged) struct are promoted: they
// belong to the embedding struct's mapping, as encoding/json has it.
type fieldInfo struct {
	name     string
	index    []int // for reflect.Value.FieldByIndex: more than one for a promoted field
	required bool
	enum     []string
	min, max *float64
	format   string
	doc      string
}

// structInfo is what the decoder needs to know about a struct type, worked
// out once per type.
type structInfo struct {
	fields []fieldInfo
	names  []string // the fields' manifest names, for suggestions
}

// maxStructFields bounds the fields of a decoded struct (see decodeStruct's
// bit set of fields seen).
const maxStructFields = 256

var structCache sync.Map // reflect.Type -> *structInfo

func structFields(t reflect.Type) []fieldInfo {
	return structInfoOf(t).fields
}

func structInfoOf(t reflect.Type) *structInfo {
	if v, ok := structCache.Load(t); ok {
		return v.(*structInfo)
	}
	fields := appendFields(nil, t, nil)
	if len(fields) > maxStructFields {
		panic("manifest: too many fields in " + t.Name())
	}
	info := &structInfo{fields: fields, names: make([]string, len(fields))}
	for i, f := range fields {
		if slices.Contains(info.names[:i], f.name) {
			panic("manifest: field " + f.name + " declared twice in " + t.Name())
		}
		info.names[i] = f.name
	}
	v, _ := structCache.LoadOrStore(t, info)
	return v.(*structInfo)
}

// appendFields appends t's fields in declaration order, those of embedded
// structs in place of the embedded field. parent is the index path of t
// within the outermost struct.
func appendFields(fields []fieldInfo, t reflect.Type, parent []int) []fieldInfo {
	for i := range t.NumField() {
		sf := t.Field(i)
		index := append(slices.Clip(parent), i)
		tag := sf.Tag.Get("json")
		if sf.Anonymous && tag == "" {
			if sf.Type.Kind() != reflect.Struct {
				panic("manifest: only structs may be embedded, not " + sf.Type.String() + " in " + t.Name())
			}
			fields = appendFields(fields, sf.Type, index)
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" || name == "" || !sf.IsExported() {
			continue
		}
		fields = append(fields, parseField(t, sf, name, index))
	}
	return fields
}

// parseField reads one field's rules from its tags.
func parseField(t reflect.Type, sf reflect.StructField, name string, index []int) fieldInfo {
	fi := fieldInfo{name: name, index: index, doc: sf.Tag.Get("doc")}
	for opt := range strings.SplitSeq(sf.Tag.Get("pm"), ",") {
		k, v, _ := strings.Cut(opt, "=")
		switch k {
		case "required":
			fi.required = true
		case "enum":
			fi.enum = strings.Split(v, "|")
		case "min":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				panic("manifest: bad min tag on " + t.Name() + "." + sf.Name)
			}
			fi.min = &f
		case "max":
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				panic("manifest: bad max tag on " + t.Name() + "." + sf.Name)
			}
			fi.max = &f
		case "format":
			if _, ok := formats[v]; !ok {
				panic("manifest: unknown format " + v + " on " + t.Name() + "." + sf.Name)
			}
			fi.format = v
		case "":
		default:
			panic("manifest: unknown pm tag option " + k + " on " + t.Name() + "." + sf.Name)
		}
	}
	return fi
}

func joinPath(path, name string) string {
	if strings.ContainsAny(name, "./[] ") || name == "" {
		name = strconv.Quote(name)
		return path + "[" + name + "]"
	}
	if path == "" {
		return name
	}
	return path + "." + name
}

func indexPath(path string, i int) string {
	return path + "[" + strconv.Itoa(i) + "]"
}

var nodeDecoderType = reflect.TypeFor[nodeDecoder]()

var nodeDecoderCache sync.Map // reflect.Type -> bool

// implementsNodeDecoder reports whether *t decodes itself.
func implementsNodeDecoder(t reflect.Type) bool {
	if v, ok := nodeDecoderCache.Load(t); ok {
		return v.(bool)
	}
	impl := reflect.PointerTo(t).Implements(nodeDecoderType)
	nodeDecoderCache.Store(t, impl)
	return impl
}

// decode fills rv (addressable) from n. fi carries the field's rules; it may
// be nil for list items and the document root.
func (d *decoder) decode(n *yNode, rv reflect.Value, fi *fieldInfo) {
	if n.kind == nullNode {
		d.errorf(n, d.here(), "no value given; remove the key or give it a value")
		return
	}
	if rv.Kind() == reflect.Struct && rv.CanAddr() && implementsNodeDecoder(rv.Type()) {
		rv.Addr().Interface().(nodeDecoder).decodeNode(d, n)
		return
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		d.decode(n, rv.Elem(), fi)
	case reflect.Struct:
		d.decodeStruct(n, rv)
	case reflect.String:
		if n.kind != scalarNode || n.typ != tString {
			d.expectString(n, d.here())
			return
		}
		if d.checkString(n, n.text, fi) {
			rv.SetString(n.text)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.typ != tInt {
			d.errorf(n, d.here(), "expected an integer, got %s", n.describe())
			return
		}
		if d.checkRange(n, float64(n.ival), fi) {
			rv.SetInt(n.ival)
		}
	case reflect.Float64:
		v := n.fval
		switch n.typ {
		case tInt:
			v = float64(n.ival)
		case tFloat:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				d.errorf(n, d.here(), "expected a finite number, got %s", n.text)
				return
			}
		default:
			d.errorf(n, d.here(), "expected a number, got %s", n.describe())
			return
		}
		if d.checkRange(n, v, fi) {
			rv.SetFloat(v)
		}
	case reflect.Bool:
		if n.typ != tBool {
			hint := ""
			if n.typ == tString {
				switch lower(n.text) {
				case "yes", "y", "on":
					hint = " (write true)"
				case "no", "n", "off":
					hint = " (write false)"
				}
			}
			d.errorf(n, d.here(), "expected true or false, got %s%s", n.describe(), hint)
			return
		}
		rv.SetBool(n.bval)
	case reflect.Slice:
		if n.kind != seqNode {
			d.errorf(n, d.here(), "expected a list, got %s", n.describe())
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(n.vals), len(n.vals))
		for i, item := range n.vals {
			d.push(pathSeg{index: i})
			d.decode(item, s.Index(i), fi)
			d.pop()
		}
		rv.Set(s)
	case reflect.Map:
		d.decodeMap(n, rv)
	default:
		panic("manifest: cannot decode into " + rv.Type().String())
	}
}

func (d *decoder) expectString(n *yNode, path string) (string, bool) {
	if n.kind != scalarNode || n.typ != tString {
		hint := ""
		if n.kind == scalarNode {
			hint = fmt.Sprintf(" (quote it: \"%s\")", n.text)
		}
		d.errorf(n, path, "expected a string, got %s%s", n.describe(), hint)
		return "", false
	}
	return n.text, true
}

// checkString checks s, the value at d.here(), against fi's enum and format.
func (d *decoder) checkString(n *yNode, s string, fi *fieldInfo) bool {
	if fi == nil {
		return true
	}
	if len(fi.enum) > 0 && !slices.Contains(fi.enum, s) {
		d.errorf(n, d.here(), "%q is not one of %s%s", s, strings.Join(fi.enum, ", "), didYouMean(s, fi.enum))
		return false
	}
	if fi.format != "" {
		if err := formats[fi.format].check(s); err != nil {
			d.errorf(n, d.here(), "%v", err)
			return false
		}
	}
	return true
}

func (d *decoder) checkRange(n *yNode, v float64, fi *fieldInfo) bool {
	if fi == nil {
		return true
	}
	if fi.min != nil && v < *fi.min {
		d.errorf(n, d.here(), "%s is below the minimum %s", n.text, strconv.FormatFloat(*fi.min, 'f', -1, 64))
		return false
	}
	if fi.max != nil && v > *fi.max {
		d.errorf(n, d.here(), "%s is above the maximum %s", n.text, strconv.FormatFloat(*fi.max, 'f', -1, 64))
		return false
	}
	return true
}

// isMapping reports whether n is a mapping; when not, the problem says so.
func (d *decoder) isMapping(n *yNode) bool {
	if n.kind != mapNode {
		d.errorf(n, d.here(), "expected a mapping, got %s", n.describe())
		return false
	}
	return true
}

func (d *decoder) decodeMap(n *yNode, rv reflect.Value) {
	if !d.isMapping(n) {
		return
	}
	if rv.Type().Key().Kind() != reflect.String {
		panic("manifest: map keys must be strings")
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(n.keys))
	dups := newDupFinder(n)
	for i, k := range n.keys {
		if k.kind != scalarNode {
			d.errorf(k, d.here(), "mapping keys must be strings")
			continue
		}
		if first := dups.before(i); first != nil {
			d.errorf(k, joinPath(d.here(), k.text), "duplicate key %q (first at line %d)", k.text, first.line)
			continue
		}
		ev := reflect.New(rv.Type().Elem()).Elem()
		d.push(pathSeg{name: k.text, index: -1})
		d.decode(n.vals[i], ev, nil)
		d.pop()
		m.SetMapIndex(reflect.ValueOf(k.text).Convert(rv.Type().Key()), ev)
	}
	rv.Set(m)
}

// dupFinder finds the first earlier scalar key with the same text as a
// mapping's key. Mappings in manifests are small and get a linear scan; a
// long one (hostile input) gets an index instead of quadratic work.
type dupFinder struct {
	n     *yNode
	first map[string]int // position of each key text's first scalar key
}

func newDupFinder(n *yNode) dupFinder {
	f := dupFinder{n: n}
	if len(n.keys) > 32 {
		f.first = make(map[string]int, len(n.keys))
		for i, k := range n.keys {
			if _, ok := f.first[k.text]; !ok && k.kind == scalarNode {
				f.first[k.text] = i
			}
		}
	}
	return f
}

// before returns the first scalar key before position i with key i's text,
// or nil.
func (f dupFinder) before(i int) *yNode {
	k := f.n.keys[i]
	if f.first != nil {
		if j := f.first[k.text]; j < i {
			return f.n.keys[j]
		}
		return nil
	}
	for _, prev := range f.n.keys[:i] {
		if prev.kind == scalarNode && prev.text == k.text {
			return prev
		}
	}
	return nil
}

// decodeStruct decodes n, the value at d.here(), into the struct rv.
func (d *decoder) decodeStruct(n *yNode, rv reflect.Value) {
	if !d.isMapping(n) {
		return
	}
	info := structInfoOf(rv.Type())
	fields := info.fields
	var seen [maxStructFields / 64]uint64 // fields given, by index in fields
	dups := newDupFinder(n)
	for i, k := range n.keys {
		name := k.text
		if k.kind != scalarNode {
			d.errorf(k, d.here(), "mapping keys must be strings")
			continue
		}
		if first := dups.before(i); first != nil {
			d.errorf(k, joinPath(d.here(), name), "duplicate key %q (first at line %d)", name, first.line)
			continue
		}
		idx := findField(fields, name)
		if idx < 0 {
			d.unknownField(k, rv, info, d.here(), name)
			continue
		}
		fi := &fields[idx]
		seen[idx/64] |= 1 << (idx % 64)
		d.push(pathSeg{name: name, index: -1})
		d.decode(n.vals[i], rv.FieldByIndex(fi.index), fi)
		d.pop()
	}
	for i := range fields {
		if fields[i].required && seen[i/64]&(1<<(i%64)) == 0 {
			d.errorf(n, d.here(), "missing required field `%s`", fields[i].name)
		}
	}
}

func findField(fields []fieldInfo, name string) int {
	for i := range fields {
		if fields[i].name == name {
			return i
		}
	}
	return -1
}

func (d *decoder) unknownField(k *yNode, rv reflect.Value, info *structInfo, path, name string) {
	if h, ok := rv.Addr().Interface().(fieldHinter); ok {
		if hint := h.fieldHint(name); hint != "" {
			d.errorf(k, joinPath(path, name), "%s", hint)
			return
		}
	}
	names := info.names
	msg := fmt.Sprintf("unknown field `%s`", name)
	if s := didYouMean(name, names); s != "" {
		msg += s
	} else {
		msg += "; allowed: " + strings.Join(names, ", ")
	}
	d.errorf(k, joinPath(path, name), "%s", msg)
}
