package pve

import (
	"net/url"
	"strconv"
	"strings"
)

// Params are request parameters in insertion order. Values are strings as
// Proxmox receives them; use SetBool for booleans (sent as 1/0, never
// true/false) and EncodeSSHKeys for the sshkeys value.
type Params struct {
	keys   []string
	values map[string]string
	more   map[string][]string // further values of array parameters, sent as repeated keys
}

// NewParams returns empty parameters.
func NewParams() *Params { return &Params{values: map[string]string{}} }

// Set sets key to value, keeping the key's first position.
func (p *Params) Set(key, value string) *Params {
	if p.values == nil {
		p.values = map[string]string{}
	}
	delete(p.more, key)
	if _, ok := p.values[key]; !ok {
		p.keys = append(p.keys, key)
	}
	p.values[key] = value
	return p
}

// SetList sets an array parameter (dhcp-range): the key is repeated once
// per value, which Proxmox reads as an array. An empty list sets nothing.
func (p *Params) SetList(key string, values []string) *Params {
	if len(values) == 0 {
		return p
	}
	p.Set(key, values[0])
	if len(values) > 1 {
		if p.more == nil {
			p.more = map[string][]string{}
		}
		p.more[key] = append([]string(nil), values[1:]...)
	}
	return p
}

// SetInt sets an integer parameter.
func (p *Params) SetInt(key string, v int) *Params { return p.Set(key, strconv.Itoa(v)) }

// SetBool sets a boolean parameter as Proxmox wants it: 1 or 0.
func (p *Params) SetBool(key string, v bool) *Params {
	if v {
		return p.Set(key, "1")
	}
	return p.Set(key, "0")
}

// Get returns the value of key.
func (p *Params) Get(key string) (string, bool) {
	if p == nil {
		return "", false
	}
	v, ok := p.values[key]
	return v, ok
}

// Del removes key.
func (p *Params) Del(key string) {
	if p == nil {
		return
	}
	if _, ok := p.values[key]; !ok {
		return
	}
	delete(p.values, key)
	delete(p.more, key)
	for i, k := range p.keys {
		if k == key {
			p.keys = append(p.keys[:i], p.keys[i+1:]...)
			break
		}
	}
}

// Keys returns the keys in insertion order.
func (p *Params) Keys() []string {
	if p == nil {
		return nil
	}
	return append([]string(nil), p.keys...)
}

// Len is the number of parameters.
func (p *Params) Len() int {
	if p == nil {
		return 0
	}
	return len(p.keys)
}

// Encode renders the parameters as application/x-www-form-urlencoded, in
// insertion order, with spaces as %20.
func (p *Params) Encode() string {
	if p == nil {
		return ""
	}
	var b strings.Builder
	for i, k := range p.keys {
		if i > 0 {
			b.WriteByte('&')
		}
		b.WriteString(formEscape(k))
		b.WriteByte('=')
		b.WriteString(formEscape(p.values[k]))
		for _, v := range p.more[k] {
			b.WriteString("&" + formEscape(k) + "=" + formEscape(v))
		}
	}
	return b.String()
}

// Values returns the parameters as url.Values (for query strings).
func (p *Params) Values() url.Values {
	v := url.Values{}
	if p == nil {
		return v
	}
	for _, k := range p.keys {
		v.Set(k, p.values[k])
	}
	return v
}

func formEscape(s string) string {
	// QueryEscape turns a literal '+' into %2B, so any '+' left is a space.
	return strings.ReplaceAll(url.QueryEscape(s), "+", "%20")
}

// PathEscape escapes one path segment (a node, storage, volume id or UPID).
func PathEscape(seg string) string { return url.PathEscape(seg) }

// PercentEncode encodes every byte except the RFC 3986 unreserved characters,
// as Proxmox's own tools do for "urlencoded" values (spaces become %20, never +).
func PercentEncode(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}

// EncodeSSHKeys renders public keys as the sshkeys value of a QEMU config:
// one key per line, percent-encoded.
func EncodeSSHKeys(keys []string) string {
	clean := make([]string, 0, len(keys))
	for _, k := range keys {
		if k = strings.TrimSpace(k); k != "" {
			clean = append(clean, k)
		}
	}
	return PercentEncode(strings.Join(clean, "\n"))
}

// DecodeSSHKeys reverses EncodeSSHKeys on a value read back from a config.
// Blank lines are dropped and whitespace inside each key is normalised.
func DecodeSSHKeys(v string) []string {
	dec, err := url.PathUnescape(v)
	if err != nil {
		dec = v
	}
	var out []string
	for _, line := range strings.Split(dec, "\n") {
		if line = strings.Join(strings.Fields(line), " "); line != "" {
			out = append(out, line)
		}
	}
	return out
}
