package pve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Int decodes a JSON number or a numeric string (Proxmox answers both,
// depending on the endpoint). An empty string or null is 0.
type Int int64

// UnmarshalJSON accepts 12, 12.0, "12" and "".
func (i *Int) UnmarshalJSON(b []byte) error {
	return decodeNumber(b, i, func(s string) (Int, error) {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return Int(n), nil
		}
		f, err := strconv.ParseFloat(s, 64)
		return Int(math.Round(f)), err
	})
}

// Float decodes a JSON number or numeric string.
type Float float64

// UnmarshalJSON accepts numbers and numeric strings.
func (f *Float) UnmarshalJSON(b []byte) error {
	return decodeNumber(b, f, func(s string) (Float, error) {
		v, err := strconv.ParseFloat(s, 64)
		return Float(v), err
	})
}

// decodeNumber sets *dst to the number b holds, read by parse, or to 0 when
// b holds none; dst is left alone when b is not a number.
func decodeNumber[T Int | Float](b []byte, dst *T, parse func(string) (T, error)) error {
	s, err := numberText(b)
	if err != nil {
		return err
	}
	if s == "" {
		*dst = 0
		return nil
	}
	v, err := parse(s)
	if err != nil {
		return fmt.Errorf("not a number: %s", s)
	}
	*dst = v
	return nil
}

// numberText is the text of a JSON number or numeric string, space
// trimmed: "" for null, nothing or an empty string.
func numberText(b []byte) (string, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || string(b) == "null" {
		return "", nil
	}
	if b[0] != '"' {
		return string(b), nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return "", err
	}
	return strings.TrimSpace(s), nil
}

// Version is GET /version.
type Version struct {
	Version string `json:"version"`
	Release string `json:"release"`
	RepoID  string `json:"repoid"`
}

// Node is one entry of GET /nodes.
type Node struct {
	Node   string `json:"node"`
	Status string `json:"status"`
	MaxCPU Int    `json:"maxcpu"`
	MaxMem Int    `json:"maxmem"`
	Mem    Int    `json:"mem"`
}

// Resource is one entry of GET /cluster/resources.
type Resource struct {
	ID         string `json:"id"`
	Type       string `json:"type"` // qemu, lxc, node, storage, pool, network (sdn before pve-manager 9.0.12)
	Node       string `json:"node"`
	VMID       Int    `json:"vmid"`
	Name       string `json:"name"`
	Status     string `json:"status"`
	Tags       string `json:"tags"`
	Template   Int    `json:"template"`
	Lock       string `json:"lock"`
	Storage    string `json:"storage"`
	Content    string `json:"content"`
	PluginType string `json:"plugintype"`
	Shared     Int    `json:"shared"`
	MaxDisk    Int    `json:"maxdisk"`
	MaxMem     Int    `json:"maxmem"`
	MaxCPU     Float  `json:"maxcpu"` // a container's cpulimit may be fractional
	SDN        string `json:"sdn"`
	// Pool is the resource pool a guest belongs to ("" for none).
	Pool string `json:"pool"`
	// HAState is the state of a guest's HA service, set only for guests in
	// the HA resources ("ignored" for those HA leaves alone).
	HAState string `json:"hastate"`
}

// TagList splits the tags of a guest (Proxmox joins them with ';' and
// accepts ',' and spaces on input).
func (r Resource) TagList() []string { return SplitTags(r.Tags) }

// IsTemplate reports whether the guest is a template.
func (r Resource) IsTemplate() bool { return r.Template != 0 }

// ContentTypes splits a storage's content list.
func (r Resource) ContentTypes() []string { return splitList(r.Content) }

// SplitTags splits a Proxmox tag list on ';', ',' and whitespace.
func SplitTags(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ';' || r == ',' || r == ' ' || r == '\t' })
}

func splitList(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ';' || r == ' ' })
}

// VMStatus is GET /nodes/{node}/qemu/{vmid}/status/current.
type VMStatus struct {
	VMID     Int      `json:"vmid"`
	Name     string   `json:"name"`
	Status   string   `json:"status"` // running, stopped
	QMPState string   `json:"qmpstatus"`
	Lock     string   `json:"lock"`
	Tags     string   `json:"tags"`
	Template Int      `json:"template"`
	Uptime   Int      `json:"uptime"`
	HA       HAStatus `json:"ha"`
}

// PendingEntry is one entry of GET .../pending.
type PendingEntry struct {
	Key     string `json:"key"`
	Value   any    `json:"value"`
	Pending any    `json:"pending"`
	Delete  Int    `json:"delete"`
}

// HasPending reports whether the entry carries a pending change.
func (p PendingEntry) HasPending() bool { return p.Pending != nil || p.Delete != 0 }

// StorageInfo is one entry of GET /nodes/{node}/storage.
type StorageInfo struct {
	Storage string `json:"storage"`
	Type    string `json:"type"`
	Content string `json:"content"`
	Active  Int    `json:"active"`
	Enabled Int    `json:"enabled"`
	Shared  Int    `json:"shared"`
	Total   Int    `json:"total"`
	Avail   Int    `json:"avail"`
}

// ContentTypes splits the storage's content list.
func (s StorageInfo) ContentTypes() []string { return splitList(s.Content) }

// Volume is one entry of GET /nodes/{node}/storage/{storage}/content.
type Volume struct {
	VolID   string `json:"volid"`
	Content string `json:"content"`
	Format  string `json:"format"`
	Size    Int    `json:"size"`
	VMID    Int    `json:"vmid"`
	Notes   string `json:"notes"`
	CTime   Int    `json:"ctime"`
}

// FileName is the part of the volume id after "storage:content/".
func (v Volume) FileName() string {
	id := v.VolID
	if i := strings.IndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	if i := strings.LastIndexByte(id, '/'); i >= 0 {
		id = id[i+1:]
	}
	return id
}

// TaskStatus is GET /nodes/{node}/tasks/{upid}/status.
type TaskStatus struct {
	UPID       string `json:"upid"`
	Node       string `json:"node"`
	Type       string `json:"type"`
	ID         string `json:"id"`
	User       string `json:"user"`    // for a token's task, the user alone
	TokenID    string `json:"tokenid"` // for a token's task, the token's name
	Status     string `json:"status"`  // running, stopped
	ExitStatus string `json:"exitstatus"`
	StartTime  Int    `json:"starttime"`
	EndTime    Int    `json:"endtime"` // task lists only
	PID        Int    `json:"pid"`
}

// Issuer is who started the task, from the UPID: a user or a full token id
// (user@realm!name). Proxmox lists and reads a token's task with the user
// and the token's name apart (pve-manager API2/Tasks.pm
// $convert_token_task); only the UPID holds the full token id.
func (t TaskStatus) Issuer() string {
	if u, err := ParseUPID(t.UPID); err == nil {
		return u.User
	}
	if t.TokenID != "" {
		return t.User + "!" + t.TokenID
	}
	return t.User
}

// Running reports whether the task is still running.
func (t TaskStatus) Running() bool { return t.Status == "running" }

// Succeeded reports whether a stopped task ended well: OK or "WARNINGS: N".
func (t TaskStatus) Succeeded() bool {
	return t.Status == "stopped" && (t.ExitStatus == "OK" || strings.HasPrefix(t.ExitStatus, "WARNINGS"))
}

// TaskLogLine is one line of GET .../tasks/{upid}/log.
type TaskLogLine struct {
	N Int    `json:"n"`
	T string `json:"t"`
}

// ConfigValues is a guest configuration with every value as the string
// Proxmox would accept back: numbers rendered without exponent, booleans as
// 0/1, property strings unchanged.
type ConfigValues map[string]string

// UnmarshalJSON accepts Proxmox's mixed number/string config answers.
func (c *ConfigValues) UnmarshalJSON(b []byte) error {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	out := make(ConfigValues, len(raw))
	for k, v := range raw {
		s, ok := scalarString(v)
		if ok {
			out[k] = s
		}
	}
	*c = out
	return nil
}

func scalarString(v json.RawMessage) (string, bool) {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return "", false
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) != nil {
			return "", false
		}
		return s, true
	case 't':
		return "1", true
	case 'f':
		return "0", true
	case '{', '[':
		return string(v), true
	default:
		var n json.Number
		if json.Unmarshal(v, &n) != nil {
			return "", false
		}
		if i, err := n.Int64(); err == nil {
			return strconv.FormatInt(i, 10), true
		}
		if f, err := n.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64), true
		}
		return n.String(), true
	}
}
