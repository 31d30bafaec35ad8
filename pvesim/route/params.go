// Package route is the simulator's endpoint framework: the parameter
// schema of each method (types, property strings, indexed keys), as
// Proxmox's JSONSchema declares it, and the error answers (APIError,
// Fail, ParamError) as pve-http-server sends them.
package route

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Type is the JSON schema type of a parameter, as Proxmox declares it.
type Type uint8

// Parameter types of the Proxmox schema.
const (
	TString Type = iota
	TInteger
	TNumber
	TBoolean
	TArray
	TObject
)

func (t Type) String() string {
	switch t {
	case TInteger:
		return "integer"
	case TNumber:
		return "number"
	case TBoolean:
		return "boolean"
	case TArray:
		return "array"
	case TObject:
		return "object"
	}
	return "string"
}

// Param defines one parameter of an endpoint (or one key of a property
// string), with the rules the official schema states for it. Build it with
// Str, Int, Num or Bool and the chainable methods below.
type Param struct {
	Name       string // without the "[n]" of an indexed key
	Type       Type
	Optional   bool
	EnumValues []string
	Minimum    *float64
	Maximum    *float64
	MinLength  int // 0: no limit
	MaxLength  int // 0: no limit
	PatternSrc string
	Format     string      // named format, e.g. "pve-vmid" or "pve-tag-list"
	PropFormat *PropFormat // set when the value is a property string
	RequiresP  string      // name of a parameter this one requires
	IndexMax   int         // for indexed keys like scsi[n]: the highest n; -1 otherwise
	IsDefault  bool        // default_key of a property string
	AliasOf    string      // property-string key that is an alias of another key
	KeyAliasOf string      // with AliasOf: the key whose value becomes this key's name (net: virtio=MAC)
	DefaultVal string      // documented default (informational)

	pattern *regexp.Regexp
}

func newParam(name string, t Type) *Param { return &Param{Name: name, Type: t, IndexMax: -1} }

// Str defines a string parameter.
func Str(name string) *Param { return newParam(name, TString) }

// Int defines an integer parameter.
func Int(name string) *Param { return newParam(name, TInteger) }

// Num defines a number parameter.
func Num(name string) *Param { return newParam(name, TNumber) }

// Bool defines a boolean parameter (0/1 on the wire).
func Bool(name string) *Param { return newParam(name, TBoolean) }

// Arr defines an array parameter (only used in a few bodies).
func Arr(name string) *Param { return newParam(name, TArray) }

// Alias defines a property-string key that stands for another key.
func Alias(name, target string) *Param {
	p := newParam(name, TString)
	p.AliasOf = target
	p.Optional = true
	return p
}

// Opt marks the parameter optional.
func (p *Param) Opt() *Param { p.Optional = true; return p }

// Enum restricts the value to the given words.
func (p *Param) Enum(values ...string) *Param { p.EnumValues = values; return p }

// Min sets the minimum value.
func (p *Param) Min(v float64) *Param { p.Minimum = &v; return p }

// Max sets the maximum value.
func (p *Param) Max(v float64) *Param { p.Maximum = &v; return p }

// MaxLen sets the maximum length in characters.
func (p *Param) MaxLen(n int) *Param { p.MaxLength = n; return p }

// MinLen sets the minimum length in characters.
func (p *Param) MinLen(n int) *Param { p.MinLength = n; return p }

// Pattern sets a regular expression the whole value must match (Proxmox anchors it).
func (p *Param) Pattern(re string) *Param {
	p.PatternSrc = re
	p.pattern = regexp.MustCompile(`^(?:` + re + `)$`)
	return p
}

// Fmt sets a named format ("pve-vmid", "pve-storage-id", "pve-tag-list", ...).
func (p *Param) Fmt(name string) *Param {
	p.Format = name
	return p
}

// Props makes the value a property string with the given keys.
func (p *Param) Props(f *PropFormat) *Param { p.PropFormat = f; return p }

// Requires names a parameter that must be present when this one is.
func (p *Param) Requires(name string) *Param { p.RequiresP = name; return p }

// Indexed turns the parameter into an indexed family name0..nameMAX
// (written "name[n]" in the schema).
func (p *Param) Indexed(max int) *Param { p.IndexMax = max; return p }

// DefaultKey marks the key that a bare value in a property string sets.
func (p *Param) DefaultKey() *Param { p.IsDefault = true; return p }

// KeyAlias makes an alias key also record its own name in key (net's "virtio=MAC" sets model=virtio).
func (p *Param) KeyAlias(key string) *Param { p.KeyAliasOf = key; return p }

// Default records the documented default value.
func (p *Param) Default(v string) *Param { p.DefaultVal = v; return p }

// Matches says whether s matches the parameter's pattern (true without one).
func (p *Param) Matches(s string) bool { return p.pattern == nil || p.pattern.MatchString(s) }

// SchemaName is the name as the schema writes it ("scsi[n]" for indexed keys).
func (p *Param) SchemaName() string {
	if p.IndexMax >= 0 {
		return p.Name + "[n]"
	}
	return p.Name
}

// clone returns a shallow copy, so a shared definition can be varied.
func (p *Param) clone() *Param { c := *p; return &c }

// PropFormat is the format of a property string: its keys.
type PropFormat struct {
	Keys   map[string]*Param
	order  []string
	defKey string
}

// Props builds a property-string format from its keys.
func Props(keys ...*Param) *PropFormat {
	f := &PropFormat{Keys: map[string]*Param{}}
	for _, k := range keys {
		f.add(k)
	}
	return f
}

func (f *PropFormat) add(k *Param) {
	if _, dup := f.Keys[k.Name]; !dup {
		f.order = append(f.order, k.Name)
	}
	f.Keys[k.Name] = k
	if k.IsDefault {
		f.defKey = k.Name
	}
}

// With returns a copy of the format with more (or replaced) keys.
func (f *PropFormat) With(keys ...*Param) *PropFormat {
	n := &PropFormat{Keys: map[string]*Param{}}
	copyParams(n.add, f.order, f.Keys, nil, keys)
	return n
}

// Without returns a copy of the format without the named keys.
func (f *PropFormat) Without(names ...string) *PropFormat {
	n := &PropFormat{Keys: map[string]*Param{}}
	copyParams(n.add, f.order, f.Keys, names, nil)
	return n
}

// DefaultKeyName is the key a bare value sets ("" when none).
func (f *PropFormat) DefaultKeyName() string { return f.defKey }

// KeyNames lists the keys in definition order.
func (f *PropFormat) KeyNames() []string { return append([]string(nil), f.order...) }

// Params is the parameter set of one endpoint. Path parameters ({node},
// {vmid}) belong to it, as in Proxmox's schema.
type Params struct {
	byName  map[string]*Param
	order   []string
	indexed []*Param
}

// NewParams builds a parameter set.
func NewParams(ps ...*Param) *Params {
	s := &Params{byName: map[string]*Param{}}
	for _, p := range ps {
		s.add(p)
	}
	return s
}

func (s *Params) add(p *Param) {
	if old, dup := s.byName[p.SchemaName()]; dup {
		if old.IndexMax >= 0 {
			for i, ip := range s.indexed {
				if ip == old {
					s.indexed = append(s.indexed[:i], s.indexed[i+1:]...)
					break
				}
			}
		}
	} else {
		s.order = append(s.order, p.SchemaName())
	}
	s.byName[p.SchemaName()] = p
	if p.IndexMax >= 0 {
		s.indexed = append(s.indexed, p)
	}
}

// With returns a copy with more (or replaced) parameters.
func (s *Params) With(ps ...*Param) *Params {
	n := NewParams()
	copyParams(n.add, s.order, s.byName, nil, ps)
	return n
}

// Without returns a copy without the named parameters (schema names, e.g. "scsi[n]").
func (s *Params) Without(names ...string) *Params {
	n := NewParams()
	copyParams(n.add, s.order, s.byName, names, nil)
	return n
}

// copyParams is how With and Without copy an ordered set of parameters
// (a format's keys, an endpoint's parameters): each of order but the
// dropped names, in order, then the extra ones.
func copyParams(add func(*Param), order []string, byName map[string]*Param, drop []string, extra []*Param) {
	for _, name := range order {
		if !slices.Contains(drop, name) {
			add(byName[name])
		}
	}
	for _, p := range extra {
		add(p)
	}
}

// All lists the parameters in definition order.
func (s *Params) All() []*Param {
	out := make([]*Param, 0, len(s.order))
	for _, name := range s.order {
		out = append(out, s.byName[name])
	}
	return out
}

// Lookup finds the definition of a concrete key: "cores", or "scsi3" for
// the indexed family "scsi[n]".
func (s *Params) Lookup(key string) *Param {
	if s == nil {
		return nil
	}
	if p, ok := s.byName[key]; ok && p.IndexMax < 0 {
		return p
	}
	for _, p := range s.indexed {
		if n, ok := IndexOf(key, p.Name); ok && n <= p.IndexMax {
			return p
		}
	}
	return nil
}

// IndexOf parses key as prefix followed by a canonical decimal number.
func IndexOf(key, prefix string) (int, bool) {
	if !strings.HasPrefix(key, prefix) {
		return 0, false
	}
	digits := key[len(prefix):]
	if digits == "" || (len(digits) > 1 && digits[0] == '0') || len(digits) > 4 {
		return 0, false
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}
