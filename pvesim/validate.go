package pvesim

import (
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/proxmops/proxmops/pvesim/route"
)

// valueKind says how a parameter arrived: form fields are always strings,
// JSON bodies may carry numbers, booleans, arrays and objects. Proxmox's
// checks differ for each (a JSON true is a boolean, the string "true" is not).
type valueKind uint8

const (
	vString valueKind = iota
	vNumber
	vBool
	vNull
	vArray
	vObject
)

// rawValue is one incoming parameter before validation.
type rawValue struct {
	s    string
	kind valueKind
	arr  []string
}

func (v rawValue) perlRefName() string {
	switch v.kind {
	case vBool:
		return "JSON::PP::Boolean"
	case vArray:
		return "ARRAY"
	case vObject:
		return "HASH"
	}
	return ""
}

// validationErrors collects messages by parameter path, joining repeated
// paths the way Proxmox does (with a literal backslash-n).
type validationErrors map[string]string

func (e validationErrors) add(path, msg string) {
	if path == "" {
		path = "_root"
	}
	if old, ok := e[path]; ok {
		e[path] = old + `\n` + msg
		return
	}
	e[path] = msg
}

var (
	reInteger = regexp.MustCompile(`^[+-]?\d+$`)
	reNumber  = regexp.MustCompile(`^[+-]?(\d+\.\d+|\d+\.|\.\d+|\d+)([eE][+-]?\d+)?$`)
)

// validateParams checks the incoming parameters against the endpoint's
// definitions exactly as PVE::JSONSchema::validate does, and returns the
// values as strings (JSON booleans become "1"/"0").
func validateParams(set *route.Params, in map[string]rawValue) (map[string]string, validationErrors) {
	errs := validationErrors{}
	// Proxmox joins arrays given for "-list" formats before validating.
	for k, v := range in {
		if p := set.Lookup(k); p != nil && v.kind == vArray && p.Type == route.TString && strings.HasSuffix(p.Format, "-list") {
			in[k] = rawValue{s: strings.Join(v.arr, ","), kind: vString}
		}
		// A form sends an array as repeated keys; one value is an array of
		// one (the HTTP server splits form values of array parameters).
		if p := set.Lookup(k); p != nil && v.kind == vString && p.Type == route.TArray {
			in[k] = rawValue{kind: vArray, arr: strings.Split(v.s, "\x00")}
		}
	}
	for _, p := range set.All() {
		if p.IndexMax >= 0 {
			continue
		}
		v, ok := in[p.Name]
		checkProp(p, v, ok && v.kind != vNull, p.Name, errs)
	}
	for _, k := range sortedKeys(in) {
		p := set.Lookup(k)
		if p == nil {
			errs.add(k, "property is not defined in schema and the schema does not allow additional properties")
			continue
		}
		if p.IndexMax >= 0 {
			v := in[k]
			checkProp(p, v, v.kind != vNull, k, errs)
		}
		if p.RequiresP != "" {
			if r, ok := in[p.RequiresP]; !ok || r.kind == vNull {
				errs.add(p.RequiresP, fmt.Sprintf("missing property required by '%s'", k))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errs
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		switch v.kind {
		case vNull:
			continue
		case vArray:
			out[k] = strings.Join(v.arr, "\x00")
		default:
			out[k] = v.s
		}
	}
	return out, nil
}

// checkProp is PVE::JSONSchema::check_prop for one scalar parameter.
func checkProp(p *route.Param, v rawValue, present bool, path string, errs validationErrors) {
	if p.AliasOf != "" {
		return
	}
	if !present {
		if !p.Optional {
			errs.add(path, "property is missing and it is not optional")
		}
		return
	}
	if !checkType(p, v, path, errs) {
		return
	}
	if v.kind == vArray || v.kind == vObject {
		return
	}
	if msg := checkScalar(p, v.s, path); msg != "" {
		errs.add(path, msg)
	}
}

func checkType(p *route.Param, v rawValue, path string, errs validationErrors) bool {
	t := p.Type.String()
	switch p.Type {
	case route.TArray:
		if v.kind != vArray {
			errs.add(path, fmt.Sprintf("type check ('%s') failed", t))
			return false
		}
		return true
	case route.TObject:
		if v.kind != vObject {
			errs.add(path, fmt.Sprintf("type check ('%s') failed", t))
			return false
		}
		return true
	}
	if ref := v.perlRefName(); ref != "" {
		if p.Type == route.TBoolean && v.kind == vBool {
			return true
		}
		errs.add(path, fmt.Sprintf("type check ('%s') failed - got %s", t, ref))
		return false
	}
	ok := true
	switch p.Type {
	case route.TBoolean:
		ok = v.s == "0" || v.s == "1"
	case route.TInteger:
		ok = reInteger.MatchString(v.s)
	case route.TNumber:
		ok = reNumber.MatchString(v.s)
	}
	if !ok {
		errs.add(path, fmt.Sprintf("type check ('%s') failed - got '%s'", t, v.s))
	}
	return ok
}

// checkScalar applies format, pattern, length, range and enumeration, in
// Proxmox's order, stopping at the first failure. It returns "" when fine.
func checkScalar(p *route.Param, s, path string) string {
	if p.PropFormat != nil {
		if _, err := parsePropString(p.PropFormat, s, path); err != nil {
			return "invalid format - " + err.Error()
		}
	} else if p.Format != "" {
		if err := checkFormat(p.Format, s, path); err != nil {
			return "invalid format - " + err.Error()
		}
	}
	if !p.Matches(s) {
		return "value does not match the regex pattern"
	}
	n := utf8.RuneCountInString(s)
	if p.MaxLength > 0 && n > p.MaxLength {
		return fmt.Sprintf("value may only be %d characters long", p.MaxLength)
	}
	if p.MinLength > 0 && n < p.MinLength {
		return fmt.Sprintf("value must be at least %d characters long", p.MinLength)
	}
	if reNumber.MatchString(s) {
		f, _ := strconv.ParseFloat(s, 64)
		if p.Maximum != nil && f > *p.Maximum {
			return "value must have a maximum value of " + perlNum(*p.Maximum)
		}
		if p.Minimum != nil && f < *p.Minimum {
			return "value must have a minimum value of " + perlNum(*p.Minimum)
		}
	}
	if p.EnumValues != nil {
		for _, e := range p.EnumValues {
			if e == s {
				return ""
			}
		}
		return fmt.Sprintf("value '%s' does not have a value in the enumeration '%s'", s, strings.Join(p.EnumValues, ", "))
	}
	return ""
}

func perlNum(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// parseBoolean is PVE::JSONSchema::parse_boolean: words Proxmox accepts
// inside property strings.
func parseBoolean(s string) (string, bool) {
	switch strings.ToLower(s) {
	case "1", "on", "yes", "true":
		return "1", true
	case "0", "off", "no", "false":
		return "0", true
	}
	return s, false
}

// parsePropString is PVE::JSONSchema::parse_property_string: it splits
// "virtio,bridge=vmbr0,tag=10" into keys, resolves the default key and
// aliases, and checks every key. Errors carry Proxmox's texts, including
// the trailing newline its die messages have.
func parsePropString(f *route.PropFormat, data, path string) (map[string]string, error) {
	res := map[string]string{}
	defKey := f.DefaultKeyName()
	defaultSeen := ""
	for _, part := range strings.Split(data, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		eq := strings.IndexByte(part, '=')
		switch {
		case eq > 0 && eq < len(part)-1:
			k, v := part[:eq], part[eq+1:]
			if _, dup := res[k]; dup {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", k)
			}
			schema := f.Keys[k]
			if schema != nil && schema.AliasOf != "" {
				if ka := schema.KeyAliasOf; ka != "" {
					if _, dup := res[ka]; dup {
						return nil, fmt.Errorf("key alias '%s' is already defined\n", ka)
					}
					res[ka] = k
				}
				k = schema.AliasOf
				schema = f.Keys[k]
				if _, dup := res[k]; dup {
					return nil, fmt.Errorf("key '%s' is already defined (via alias)\n", k)
				}
			}
			if schema == nil {
				return nil, fmt.Errorf("invalid key in comma-separated list property: %s\n", k)
			}
			if schema.Type == route.TBoolean {
				v, _ = parseBoolean(v)
			}
			res[k] = v
		case eq < 0:
			if defaultSeen != "" {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", defaultSeen)
			}
			if defKey == "" {
				return nil, errors.New("value without key, but schema does not define a default key\n")
			}
			defaultSeen = defKey
			if old := res[defKey]; old != "" && old != "0" {
				return nil, fmt.Errorf("duplicate key in comma-separated list property: %s\n", defKey)
			}
			if f.Keys[defKey].Type == route.TBoolean {
				part, _ = parseBoolean(part)
			}
			res[defKey] = part
		default:
			return nil, errors.New("missing key in comma-separated list property\n")
		}
	}
	errs := validationErrors{}
	join := func(k string) string {
		if path == "" {
			return k
		}
		return path + "." + k
	}
	for _, k := range f.KeyNames() {
		schema := f.Keys[k]
		v, ok := res[k]
		checkProp(schema, rawValue{s: v}, ok, join(k), errs)
	}
	for _, k := range sortedKeys(res) {
		if schema := f.Keys[k]; schema != nil && schema.RequiresP != "" {
			if _, ok := res[schema.RequiresP]; !ok {
				errs.add(join(schema.RequiresP), fmt.Sprintf("missing property required by '%s'", join(k)))
			}
		}
	}
	if len(errs) > 0 {
		var b strings.Builder
		b.WriteString("format error\n")
		keys := make([]string, 0, len(errs))
		for k := range errs {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k, errs[k])
		}
		return nil, errors.New(b.String())
	}
	return res, nil
}

// printPropString writes keys back in Proxmox's order: the default key's
// bare value first, then the others sorted by name.
func printPropString(f *route.PropFormat, vals map[string]string) string {
	var parts []string
	defKey := f.DefaultKeyName()
	if defKey != "" {
		if v, ok := vals[defKey]; ok {
			parts = append(parts, v)
		}
	}
	for _, k := range sortedKeys(vals) {
		if k == defKey {
			continue
		}
		parts = append(parts, k+"="+vals[k])
	}
	return strings.Join(parts, ",")
}
