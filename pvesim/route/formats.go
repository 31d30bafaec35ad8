package route

import "strings"

// Format is a named format: a check function (Proxmox's code formats) or
// a property-string format (its hash formats).
type Format struct {
	Check func(string) error
	Props *PropFormat
}

var formats = map[string]Format{}

// RegisterFormat adds a named format checked by a function. The error text
// should be Proxmox's, with its trailing newline.
func RegisterFormat(name string, check func(string) error) {
	formats[name] = Format{Check: check}
}

// RegisterPropFormat adds a named format that is a property string.
func RegisterPropFormat(name string, f *PropFormat) {
	formats[name] = Format{Props: f}
}

// LookupFormat resolves "name", "name-list" and "name-opt": the format,
// and "", "list" or "opt".
func LookupFormat(name string) (Format, string, bool) {
	if d, ok := formats[name]; ok {
		return d, "", true
	}
	for _, suffix := range []string{"-list", "-opt"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if d, ok := formats[base]; ok && d.Check != nil {
				return d, suffix[1:], true
			}
		}
	}
	return Format{}, "", false
}

// NamedProps is the property-string format registered as name (nil when
// there is none).
func NamedProps(name string) *PropFormat { return formats[name].Props }
