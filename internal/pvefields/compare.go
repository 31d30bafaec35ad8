package pvefields

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/pve"
)

// SameBool compares two Proxmox booleans by what they mean ("on" is "1").
func SameBool(have, want string) bool {
	return FormatBool(ParseBool(have)) == FormatBool(ParseBool(want))
}

// Spaced is a space-separated list in its compared form: single spaces.
func Spaced(v string) string { return strings.Join(strings.Fields(v), " ") }

// SameSpaced compares two space-separated lists as Spaced writes them.
func SameSpaced(have, want string) bool { return Spaced(have) == Spaced(want) }

// SameFloat compares two numbers by value ("1" is "1.0").
func SameFloat(have, want string) bool {
	a, _ := strconv.ParseFloat(have, 64)
	b, _ := strconv.ParseFloat(want, 64)
	return a == b
}

// TrimDescription is a description as the plan compares it: Proxmox drops
// trailing white space.
func TrimDescription(v string) string { return strings.TrimRight(v, " \n\r\t") }

// SameDescription compares two descriptions as TrimDescription writes them.
func SameDescription(have, want string) bool { return TrimDescription(have) == TrimDescription(want) }

// ShowDescription is a description shortened to one line for a plan.
func ShowDescription(v string) string { return Abbreviate(TrimDescription(v)) }

// ShowTags is a tags value de-duplicated and sorted, ";"-separated.
func ShowTags(v string) string { return strings.Join(NormalTags(pve.SplitTags(v)), ";") }

// SameTags compares tags as sets: exactly on a cluster whose tag-style is
// case-sensitive, else as Proxmox stores them, lower-cased. caseSensitive
// is asked only when the two differ in case alone (nil: not case-sensitive).
func SameTags(caseSensitive func() bool) func(have, want string) bool {
	return func(have, want string) bool {
		if ShowTags(have) == ShowTags(want) {
			return true
		}
		h, w := FoldTags(pve.SplitTags(have)), FoldTags(pve.SplitTags(want))
		return slices.Equal(h, w) && (caseSensitive == nil || !caseSensitive())
	}
}

// PropertyPart reads one key of a property string whose first value has
// the default key dk (memory's current, cpu's cputype, agent's enabled).
func PropertyPart(dk string) func(string) string {
	return func(v string) string { return pve.ParsePropertyString(v, dk).Values[dk] }
}

// NormalKeys is a list of SSH public keys in its compared form: each
// key's white space collapsed, empty lines dropped, sorted.
func NormalKeys(keys []string) []string {
	var out []string
	for _, k := range keys {
		if k = strings.Join(strings.Fields(k), " "); k != "" {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}

// KeysSummary shows SSH public keys by their count and comments.
func KeysSummary(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	names := make([]string, 0, len(keys))
	for _, k := range keys {
		f := strings.Fields(k)
		switch {
		case len(f) >= 3:
			names = append(names, f[len(f)-1])
		case len(f) == 2 && len(f[1]) > 12:
			names = append(names, f[0]+" …"+f[1][len(f[1])-8:])
		default:
			names = append(names, k)
		}
	}
	return fmt.Sprintf("%d key(s): %s", len(keys), strings.Join(names, ", "))
}

// Abbreviate puts a text on one line of at most 60 characters.
func Abbreviate(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 60 {
		return s[:57] + "..."
	}
	return s
}

// NormalList is a ';'-, ','- or space-separated list in its compared form:
// sorted, ';'-separated.
func NormalList(v string) string {
	return strings.Join(sortedStrings(strings.FieldsFunc(v, func(r rune) bool { return r == ';' || r == ',' || r == ' ' })), ";")
}

// NormalFeatures is a features value in a canonical form.
func NormalFeatures(v string) string {
	ps := pve.ParsePropertyString(v, "")
	var parts []string
	for _, k := range ps.Keys {
		val := ps.Values[k]
		if k == "mount" {
			val = NormalList(val)
		} else {
			val = FormatBool(ParseBool(val))
		}
		if val == "0" || val == "" {
			continue
		}
		parts = append(parts, k+"="+val)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// sortedStrings returns a sorted copy.
func sortedStrings(in []string) []string {
	out := append([]string(nil), in...)
	sort.Strings(out)
	return out
}

// NormalRanges puts DHCP ranges ("start-address=a,end-address=b", one per
// line, or NUL-separated) in a canonical form.
func NormalRanges(v string) string {
	var out []string
	for _, r := range strings.FieldsFunc(v, func(c rune) bool { return c == '\n' || c == 0 }) {
		r = strings.TrimSpace(r)
		var obj map[string]string
		if strings.HasPrefix(r, "{") && json.Unmarshal([]byte(r), &obj) == nil {
			// Read back as objects: {"start-address": ..., "end-address": ...}.
			out = append(out, obj["start-address"]+"-"+obj["end-address"])
			continue
		}
		ps := pve.ParsePropertyString(r, "")
		out = append(out, ps.Values["start-address"]+"-"+ps.Values["end-address"])
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}
