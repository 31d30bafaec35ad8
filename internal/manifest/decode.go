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
	decodeNode(d *decoder, n *yNode, path string)
}

// fieldHinter gives a tailored message for a field a struct refuses, e.g. an
// inline password where only a reference is accepted.
type fieldHinter interface {
	fieldHint(name string) string
}

// fieldInfo is a struct field with its manifest name and rules, read from the
// tags `json:"name,omitempty"` and `pm:"required,enum=a|b,min=1,max=9,format=f"`.
type fieldInfo struct {
	name     string
	index    int
	required bool
	enum     []string
	min, max *float64
	format   string
	doc      string
}

var structCache sync.Map // reflect.Type -> []fieldInfo

func structFields(t reflect.Type) []fieldInfo {
	if v, ok := structCache.Load(t); ok {
		return v.([]fieldInfo)
	}
	var fields []fieldInfo
	for i := range t.NumField() {
		sf := t.Field(i)
		name, _, _ := strings.Cut(sf.Tag.Get("json"), ",")
		if name == "-" || name == "" || !sf.IsExported() {
			continue
		}
		fi := fieldInfo{name: name, index: i, doc: sf.Tag.Get("doc")}
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
		fields = append(fields, fi)
	}
	structCache.Store(t, fields)
	return fields
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

// decode fills rv (addressable) from n. fi carries the field's rules; it may
// be nil for list items and the document root.
func (d *decoder) decode(n *yNode, rv reflect.Value, path string, fi *fieldInfo) {
	if n.kind == nullNode {
		d.errorf(n, path, "no value given; remove the key or give it a value")
		return
	}
	if rv.CanAddr() && rv.Addr().Type().Implements(nodeDecoderType) {
		rv.Addr().Interface().(nodeDecoder).decodeNode(d, n, path)
		return
	}
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			rv.Set(reflect.New(rv.Type().Elem()))
		}
		d.decode(n, rv.Elem(), path, fi)
	case reflect.Struct:
		d.decodeStruct(n, rv, path)
	case reflect.String:
		s, ok := d.expectString(n, path)
		if !ok {
			return
		}
		if d.checkString(n, path, s, fi) {
			rv.SetString(s)
		}
	case reflect.Int, reflect.Int64, reflect.Int32:
		if n.typ != tInt {
			d.errorf(n, path, "expected an integer, got %s", n.describe())
			return
		}
		if d.checkRange(n, path, float64(n.ival), fi) {
			rv.SetInt(n.ival)
		}
	case reflect.Float64:
		v := n.fval
		switch n.typ {
		case tInt:
			v = float64(n.ival)
		case tFloat:
			if math.IsNaN(v) || math.IsInf(v, 0) {
				d.errorf(n, path, "expected a finite number, got %s", n.text)
				return
			}
		default:
			d.errorf(n, path, "expected a number, got %s", n.describe())
			return
		}
		if d.checkRange(n, path, v, fi) {
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
			d.errorf(n, path, "expected true or false, got %s%s", n.describe(), hint)
			return
		}
		rv.SetBool(n.bval)
	case reflect.Slice:
		if n.kind != seqNode {
			d.errorf(n, path, "expected a list, got %s", n.describe())
			return
		}
		s := reflect.MakeSlice(rv.Type(), len(n.items), len(n.items))
		for i, item := range n.items {
			d.decode(item, s.Index(i), indexPath(path, i), fi)
		}
		rv.Set(s)
	case reflect.Map:
		d.decodeMap(n, rv, path, fi)
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

func (d *decoder) checkString(n *yNode, path, s string, fi *fieldInfo) bool {
	if fi == nil {
		return true
	}
	if len(fi.enum) > 0 && !slices.Contains(fi.enum, s) {
		d.errorf(n, path, "%q is not one of %s%s", s, strings.Join(fi.enum, ", "), didYouMean(s, fi.enum))
		return false
	}
	if fi.format != "" {
		if err := formats[fi.format].check(s); err != nil {
			d.errorf(n, path, "%v", err)
			return false
		}
	}
	return true
}

func (d *decoder) checkRange(n *yNode, path string, v float64, fi *fieldInfo) bool {
	if fi == nil {
		return true
	}
	if fi.min != nil && v < *fi.min {
		d.errorf(n, path, "%s is below the minimum %s", n.text, strconv.FormatFloat(*fi.min, 'f', -1, 64))
		return false
	}
	if fi.max != nil && v > *fi.max {
		d.errorf(n, path, "%s is above the maximum %s", n.text, strconv.FormatFloat(*fi.max, 'f', -1, 64))
		return false
	}
	return true
}

func (d *decoder) decodeMap(n *yNode, rv reflect.Value, path string, fi *fieldInfo) {
	if n.kind != mapNode {
		d.errorf(n, path, "expected a mapping, got %s", n.describe())
		return
	}
	if rv.Type().Key().Kind() != reflect.String {
		panic("manifest: map keys must be strings")
	}
	m := reflect.MakeMapWithSize(rv.Type(), len(n.keys))
	seen := make(map[string]*yNode, len(n.keys))
	for i, k := range n.keys {
		if k.kind != scalarNode {
			d.errorf(k, path, "mapping keys must be strings")
			continue
		}
		if first, dup := seen[k.text]; dup {
			d.errorf(k, joinPath(path, k.text), "duplicate key %q (first at line %d)", k.text, first.line)
			continue
		}
		seen[k.text] = k
		ev := reflect.New(rv.Type().Elem()).Elem()
		d.decode(n.vals[i], ev, joinPath(path, k.text), nil)
		m.SetMapIndex(reflect.ValueOf(k.text).Convert(rv.Type().Key()), ev)
	}
	rv.Set(m)
}

func (d *decoder) decodeStruct(n *yNode, rv reflect.Value, path string) {
	if n.kind != mapNode {
		d.errorf(n, path, "expected a mapping, got %s", n.describe())
		return
	}
	fields := structFields(rv.Type())
	seen := make(map[string]*yNode, len(n.keys))
	for i, k := range n.keys {
		name := k.text
		if k.kind != scalarNode {
			d.errorf(k, path, "mapping keys must be strings")
			continue
		}
		fpath := joinPath(path, name)
		if first, dup := seen[name]; dup {
			d.errorf(k, fpath, "duplicate key %q (first at line %d)", name, first.line)
			continue
		}
		seen[name] = k
		fi := findField(fields, name)
		if fi == nil {
			d.unknownField(k, rv, fields, path, name)
			continue
		}
		d.decode(n.vals[i], rv.Field(fi.index), fpath, fi)
	}
	for i := range fields {
		if fields[i].required && seen[fields[i].name] == nil {
			d.errorf(n, path, "missing required field `%s`", fields[i].name)
		}
	}
}

func findField(fields []fieldInfo, name string) *fieldInfo {
	for i := range fields {
		if fields[i].name == name {
			return &fields[i]
		}
	}
	return nil
}

func (d *decoder) unknownField(k *yNode, rv reflect.Value, fields []fieldInfo, path, name string) {
	if h, ok := rv.Addr().Interface().(fieldHinter); ok {
		if hint := h.fieldHint(name); hint != "" {
			d.errorf(k, joinPath(path, name), "%s", hint)
			return
		}
	}
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	msg := fmt.Sprintf("unknown field `%s`", name)
	if s := didYouMean(name, names); s != "" {
		msg += s
	} else {
		msg += "; allowed: " + strings.Join(names, ", ")
	}
	d.errorf(k, joinPath(path, name), "%s", msg)
}
