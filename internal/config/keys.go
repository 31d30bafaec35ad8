package config

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// key describes one configuration key, found by reflection over Config so
// the file, the environment and the flags can never disagree on names.
type key struct {
	section string // YAML name of the section, e.g. "cluster"
	name    string // YAML name of the key, e.g. "tokenId"
	index   []int  // reflect field index path from Config
	typ     reflect.Type
	secret  bool
	isPath  bool // a file or directory name, resolved against the config file's directory
}

// Path is "section.name", e.g. "cluster.tokenId".
func (k key) Path() string { return k.section + "." + k.name }

// EnvName is PROXMOPS_<SECTION>_<KEY> upper-cased; a key of a group
// inside a section is PROXMOPS_<SECTION>_<GROUP>_<KEY>.
func (k key) EnvName() string {
	return "PROXMOPS_" + strings.ToUpper(k.section) + "_" + strings.ToUpper(strings.ReplaceAll(k.name, ".", "_"))
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	stringsType  = reflect.TypeFor[[]string]()
	allKeys      = buildKeys()
	keyByPath    = indexKeys(allKeys)
	sectionNames = buildSectionNames()
)

func buildKeys() []key {
	var keys []key
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		sf := ct.Field(i)
		if sf.Type.Kind() != reflect.Struct {
			continue // clusters: a list, decoded by clusters.go
		}
		keys = appendKeys(keys, yamlName(sf), "", sf.Type, []int{i})
	}
	return keys
}

// appendKeys adds the keys of struct t, a section or a group of keys
// inside one (auth.oidc: its keys are "oidc.issuer", ...).
func appendKeys(keys []key, section, prefix string, t reflect.Type, index []int) []key {
	for j := range t.NumField() {
		ff := t.Field(j)
		idx := append(append([]int(nil), index...), j)
		if ff.Type.Kind() == reflect.Struct {
			keys = appendKeys(keys, section, prefix+yamlName(ff)+".", ff.Type, idx)
			continue
		}
		keys = append(keys, key{
			section: section,
			name:    prefix + yamlName(ff),
			index:   idx,
			typ:     ff.Type,
			secret:  ff.Tag.Get("secret") == "true",
			isPath:  ff.Tag.Get("path") == "true",
		})
	}
	return keys
}

// isGroup tells whether path ("auth.oidc") is a group of keys.
func isGroup(path string) bool {
	for _, k := range allKeys {
		if strings.HasPrefix(k.Path(), path+".") {
			return true
		}
	}
	return false
}

func buildSectionNames() []string {
	var names []string
	ct := reflect.TypeFor[Config]()
	for i := range ct.NumField() {
		names = append(names, yamlName(ct.Field(i)))
	}
	return names
}

func indexKeys(keys []key) map[string]key {
	m := make(map[string]key, len(keys))
	for _, k := range keys {
		m[k.Path()] = k
	}
	return m
}

func yamlName(sf reflect.StructField) string {
	name, _, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
	return name
}

// keysOf returns the keys of one section, in declaration order.
func keysOf(section string) []key {
	var out []key
	for _, k := range allKeys {
		if k.section == section {
			out = append(out, k)
		}
	}
	return out
}

// Keys lists every configuration key as "section.key", in the order of the
// Config struct (the order docs/configuration.md follows).
func Keys() []string {
	out := make([]string, len(allKeys))
	for i, k := range allKeys {
		out[i] = k.Path()
	}
	return out
}

// EnvName returns the environment variable for a key such as
// "cluster.tokenSecret", or "" when there is no such key.
func EnvName(path string) string {
	k, ok := keyByPath[path]
	if !ok {
		return ""
	}
	return k.EnvName()
}

func (k key) field(c *Config) reflect.Value {
	return reflect.ValueOf(c).Elem().FieldByIndex(k.index)
}

// set parses text for the key's type and stores it in c.
func (k key) set(c *Config, text string) error {
	f := k.field(c)
	switch {
	case k.typ == durationType:
		d, err := parseDuration(text)
		if err != nil {
			return err
		}
		f.SetInt(int64(d))
	case k.typ.Kind() == reflect.String:
		f.SetString(text)
	case k.typ.Kind() == reflect.Bool:
		b, err := parseBool(text)
		if err != nil {
			return err
		}
		f.SetBool(b)
	case k.typ == stringsType:
		f.Set(reflect.ValueOf(splitList(text)))
	case k.typ.Kind() == reflect.Int:
		n, err := strconv.Atoi(strings.TrimSpace(text))
		if err != nil {
			return fmt.Errorf("%q is not a whole number", text)
		}
		f.SetInt(int64(n))
	default:
		return fmt.Errorf("unsupported type %s", k.typ)
	}
	return nil
}

// parseDuration accepts Go durations ("90s", "1m30s") and a bare number of
// seconds ("60").
func parseDuration(text string) (time.Duration, error) {
	text = strings.TrimSpace(text)
	if n, err := strconv.Atoi(text); err == nil {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(text)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration (use e.g. 60s, 5m, 1h30m)", text)
	}
	return d, nil
}

func parseBool(text string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(text)) {
	case "true", "yes", "on", "1":
		return true, nil
	case "false", "no", "off", "0":
		return false, nil
	}
	return false, fmt.Errorf("%q is not a boolean (use true or false)", text)
}

// splitList reads a list given as one text (environment, flag):
// comma-separated, blanks trimmed, empty items dropped.
func splitList(text string) []string {
	var out []string
	for _, item := range strings.Split(text, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
