package engine

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// fieldPaths maps the Proxmox keys a manifest's fields become to the
// manifest paths they come from: "cores" -> "spec.cores", "net1" ->
// "spec.net[1]" (by the entry's slot, not its index: a slot may be set by
// hand). It is read from the manifest's own struct tags, so a new field
// whose JSON name is its Proxmox key needs no entry here. Guest fields
// carry their path from their field table row (fields_vm.go, fields_ct.go),
// also where the key is renamed; Plan.finish asks here only for the others
// (sub-keys of a slot, state, other kinds).
type fieldPaths struct {
	top   map[string]string       // lower-case key -> path
	elems map[string]reflect.Type // slot -> element type, for sub-keys
}

func fieldPathsOf(r manifest.Resource) *fieldPaths {
	v := reflect.ValueOf(r)
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	spec := v.FieldByName("Spec")
	for spec.IsValid() && spec.Kind() == reflect.Pointer {
		if spec.IsNil() {
			return nil
		}
		spec = spec.Elem()
	}
	if !spec.IsValid() || spec.Kind() != reflect.Struct {
		return nil
	}
	fp := &fieldPaths{top: map[string]string{"tags": "metadata.tags", "name": "metadata.name"}, elems: map[string]reflect.Type{}}
	fp.addStruct(spec, "spec")
	return fp
}

// addStruct records the fields of s (embedded structs flattened).
func (fp *fieldPaths) addStruct(s reflect.Value, prefix string) {
	t := s.Type()
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Anonymous && f.Type.Kind() == reflect.Struct {
			fp.addStruct(s.Field(i), prefix)
			continue
		}
		name := jsonName(f)
		if name == "" {
			continue
		}
		path := prefix + "." + name
		fp.top[strings.ToLower(name)] = path
		fv := s.Field(i)
		if fv.Kind() != reflect.Slice || f.Type.Elem().Kind() != reflect.Struct {
			continue
		}
		if _, ok := f.Type.Elem().FieldByName("Slot"); !ok {
			continue
		}
		for j := range fv.Len() {
			if slot := fv.Index(j).FieldByName("Slot").String(); slot != "" {
				fp.top[slot] = fmt.Sprintf("%s[%d]", path, j)
				fp.elems[slot] = f.Type.Elem()
			}
		}
	}
}

func jsonName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "-" {
		return ""
	}
	return name
}

// path is the manifest path of a change's field, or "" when unknown.
// "net1.bridge" is "spec.net[1].bridge" when the entry has a field bridge.
func (fp *fieldPaths) path(field string) string {
	if fp == nil {
		return ""
	}
	if p, ok := fp.top[field]; ok {
		return p
	}
	if p, ok := fp.top[strings.ToLower(field)]; ok {
		return p
	}
	head, sub, ok := strings.Cut(field, ".")
	if !ok {
		return ""
	}
	p, ok := fp.top[head]
	if !ok {
		return ""
	}
	if et, ok := fp.elems[head]; ok {
		for i := range et.NumField() {
			if n := jsonName(et.Field(i)); n != "" && strings.EqualFold(n, sub) {
				return p + "." + n
			}
		}
	}
	return p
}
