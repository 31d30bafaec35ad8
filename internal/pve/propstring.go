package pve

import "strings"

// PropertyString is a parsed Proxmox property string such as
// "virtio=BC:24:11:00:00:01,bridge=vmbr0,firewall=1" or
// "local-lvm:vm-120-disk-0,size=20G". Keys keep their order.
type PropertyString struct {
	Keys   []string
	Values map[string]string
}

// ParsePropertyString splits s on commas; an element without '=' is stored
// under defaultKey (the "file" of a disk, for example).
func ParsePropertyString(s, defaultKey string) PropertyString {
	ps := PropertyString{Values: map[string]string{}}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		if !ok {
			k, v = defaultKey, part
		}
		ps.Set(k, v)
	}
	return ps
}

// Get returns a value and whether it was present.
func (p PropertyString) Get(k string) (string, bool) {
	v, ok := p.Values[k]
	return v, ok
}

// Set adds or replaces a key, keeping its first position.
func (p *PropertyString) Set(k, v string) {
	if p.Values == nil {
		p.Values = map[string]string{}
	}
	if _, ok := p.Values[k]; !ok {
		p.Keys = append(p.Keys, k)
	}
	p.Values[k] = v
}

// Del removes a key.
func (p *PropertyString) Del(k string) {
	if _, ok := p.Values[k]; !ok {
		return
	}
	delete(p.Values, k)
	for i, kk := range p.Keys {
		if kk == k {
			p.Keys = append(p.Keys[:i:i], p.Keys[i+1:]...)
			break
		}
	}
}

// String renders the property string; defaultKey is written bare first.
func (p PropertyString) String(defaultKey string) string {
	parts := make([]string, 0, len(p.Keys))
	if v, ok := p.Values[defaultKey]; ok && defaultKey != "" {
		parts = append(parts, v)
	}
	for _, k := range p.Keys {
		if k == defaultKey && defaultKey != "" {
			continue
		}
		parts = append(parts, k+"="+p.Values[k])
	}
	return strings.Join(parts, ",")
}
