package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Setting is one cluster-wide value the import uses, with where it came from.
type Setting struct {
	Value string
	From  string // a file of the monorepo, or "Proxmox-GitOps default"
}

// settings are the values Proxmox-GitOps' container role takes from its
// PROXMOX_* variables (base/.gitea/workflows/action.yml sets the defaults),
// and the environment its cookbooks read with Env.get.
type settings struct {
	vals map[string]*Setting // PROXMOX_NODE, PROXMOX_BRIDGE, ...
	env  map[string]string   // other global variables, upper-case keys
	// envFrom is the file each env entry came from.
	envFrom map[string]string
}

const pgDefault = "Proxmox-GitOps default"

// proxmoxDefaults are Proxmox-GitOps' own defaults for the PROXMOX_*
// variables its container role reads.
var proxmoxDefaults = map[string]string{
	"PROXMOX_NODE":      "pve",
	"PROXMOX_STORAGE":   "local:vztmpl",
	"PROXMOX_TEMPLATE":  "debian-13-standard_13.1-2",
	"PROXMOX_GATEWAY":   "192.168.178.1",
	"PROXMOX_MASK":      "24",
	"PROXMOX_INTERFACE": "eth0",
	"PROXMOX_BRIDGE":    "vmbr0",
}

// PROXMOX_* variables that are not container settings.
var proxmoxIgnored = map[string]string{
	"PROXMOX_DIR":   "the control plane's checkout directory; proxmops has none",
	"PROXMOX_SHARE": "the control plane's share directory (keys, certificates, snapshots); not used by proxmops",
}

// globalFiles are the files whose keys become Proxmox-GitOps' environment,
// in the order it applies them (a later file wins): env.json was renamed
// globals.json; the .local. variants are the git-ignored overrides.
var globalFiles = []string{"env.json", "env.local.json", "globals.json", "globals.local.json"}

// readSettings reads the monorepo's global files. Problems (a file that is
// not JSON) are errors; keys it cannot use are findings.
func readSettings(dir string, rep *Report) (*settings, []Finding) {
	s := &settings{vals: map[string]*Setting{}, env: map[string]string{}, envFrom: map[string]string{}}
	for k, v := range proxmoxDefaults {
		s.vals[k] = &Setting{Value: v, From: pgDefault}
	}
	var errs []Finding
	files := append([]string(nil), globalFiles...)
	// The control plane reads local/config.local.json instead of
	// local/config.json when it exists (base/roles/container/tasks/env.yml).
	cfg := "local/config.json"
	if _, err := os.Stat(filepath.Join(dir, "local", "config.local.json")); err == nil {
		cfg = "local/config.local.json"
		if _, err := os.Stat(filepath.Join(dir, "local", "config.json")); err == nil {
			rep.add(Finding{File: "local/config.json", Reason: "not read: local/config.local.json replaces it, as in Proxmox-GitOps"})
		}
	}
	files = append(files, cfg)
	for _, name := range files {
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(name)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, Finding{File: name, Reason: err.Error()})
			continue
		}
		var obj map[string]any
		dec := json.NewDecoder(strings.NewReader(string(data)))
		dec.UseNumber()
		if err := dec.Decode(&obj); err != nil {
			errs = append(errs, Finding{File: name, Reason: "not a JSON object: " + err.Error()})
			continue
		}
		rep.Read = append(rep.Read, name)
		s.apply(name, obj, rep)
	}
	return s, errs
}

// apply takes one file's keys as Proxmox-GitOps' Env.dump does: a nested
// object's keys are joined to its own with '_' (proxmox.node is
// PROXMOX_NODE), every key upper-cased.
func (s *settings) apply(file string, obj map[string]any, rep *Report) {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch v := obj[k].(type) {
		case map[string]any:
			sub := make([]string, 0, len(v))
			for sk := range v {
				sub = append(sub, sk)
			}
			sort.Strings(sub)
			for _, sk := range sub {
				s.set(file, k+"."+sk, envKey(k+"_"+sk), v[sk], rep)
			}
		default:
			s.set(file, k, envKey(k), v, rep)
		}
	}
}

func envKey(k string) string {
	return strings.ToUpper(strings.ReplaceAll(k, "-", "_"))
}

// credentialKeys are keys that hold credentials or accounts of Proxmox-GitOps'
// own services: never written into manifests, and their values never shown.
func isCredential(key string) bool {
	switch key {
	case "PROXMOX_HOST", "PROXMOX_USER", "LOGIN", "EMAIL", "HOST":
		return true
	}
	for _, w := range []string{"PASSWORD", "SECRET", "TOKEN", "PASS", "KEY"} {
		if strings.Contains(key, w) {
			return true
		}
	}
	return false
}

func (s *settings) set(file, shown, key string, raw any, rep *Report) {
	var val string
	switch v := raw.(type) {
	case nil:
		return // Utils.mapping drops empty values
	case string:
		val = v
	case json.Number:
		val = v.String()
	case bool:
		val = strconv.FormatBool(v)
	default:
		rep.add(Finding{File: file, Item: shown, Reason: "a nested list or object is not a setting proxmops can use"})
		return
	}
	if val == "" {
		return
	}
	switch {
	case isCredential(key):
		rep.add(Finding{File: file, Item: shown, Reason: "a credential or account of Proxmox-GitOps' own services: not written into manifests (proxmops reads its own from its configuration)"})
	case proxmoxIgnored[key] != "":
		rep.add(Finding{File: file, Item: shown, Reason: proxmoxIgnored[key]})
	case s.vals[key] != nil:
		s.vals[key] = &Setting{Value: val, From: file}
	case strings.HasPrefix(key, "PROXMOX_"):
		rep.add(Finding{File: file, Item: shown, Reason: "not a container setting proxmops knows"})
	default:
		s.env[key] = val
		s.envFrom[key] = file
	}
}

func (s *settings) get(key string) string { return s.vals[key].Value }

// storageID is the storage of PROXMOX_STORAGE ("local:vztmpl" is storage
// local, content vztmpl).
func (s *settings) storageID() (string, error) {
	st := s.vals["PROXMOX_STORAGE"]
	id, content, _ := strings.Cut(st.Value, ":")
	if id == "" || (content != "" && content != "vztmpl") {
		return "", fmt.Errorf("%s: PROXMOX_STORAGE %q is not a storage with vztmpl content (e.g. local:vztmpl)", st.From, st.Value)
	}
	return id, nil
}
