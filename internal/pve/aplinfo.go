package pve

import (
	"context"
	"strings"
)

// Appliance is one entry of the appliance template catalogue (GET
// /nodes/{node}/aplinfo, what `pveam available` lists).
type Appliance struct {
	Package      string `json:"package"`
	Version      string `json:"version"`
	OS           string `json:"os"`
	Type         string `json:"type"` // lxc (or turnkeylinux)
	Section      string `json:"section"`
	Template     string `json:"template"` // file name, e.g. debian-12-standard_12.7-1_amd64.tar.zst
	Headline     string `json:"headline"`
	Architecture string `json:"architecture"`
	SHA512Sum    string `json:"sha512sum"`
	MD5Sum       string `json:"md5sum"`
	Location     string `json:"location"`
}

// Appliances lists the appliance catalogue a node knows.
func (c *Client) Appliances(ctx context.Context, node string) ([]Appliance, error) {
	var out []Appliance
	err := c.Get(ctx, "nodes/"+PathEscape(node)+"/aplinfo", nil, &out)
	return out, err
}

// DownloadAppliance has a node fetch a catalogue template onto a storage
// (a task; Proxmox verifies the catalogue's checksum itself).
func (c *Client) DownloadAppliance(ctx context.Context, node, storage, template string) (string, error) {
	var upid string
	err := c.Post(ctx, "nodes/"+PathEscape(node)+"/aplinfo", NewParams().Set("storage", storage).Set("template", template), &upid)
	return upid, err
}

// ApplianceVersionLess orders appliance versions the way Debian compares
// them for the usual "12.7-1" and "20250617" forms: numeric runs
// numerically, the rest by bytes.
func ApplianceVersionLess(a, b string) bool {
	for a != "" && b != "" {
		da, ra := leadingRun(a)
		db, rb := leadingRun(b)
		if da != db {
			if isDigits(da) && isDigits(db) {
				na, nb := strings.TrimLeft(da, "0"), strings.TrimLeft(db, "0")
				if len(na) != len(nb) {
					return len(na) < len(nb)
				}
				return na < nb
			}
			return da < db
		}
		a, b = ra, rb
	}
	return len(a) < len(b)
}

// leadingRun splits off the first run of digits or of non-digits.
func leadingRun(s string) (string, string) {
	digit := s[0] >= '0' && s[0] <= '9'
	i := 1
	for i < len(s) && (s[i] >= '0' && s[i] <= '9') == digit {
		i++
	}
	return s[:i], s[i:]
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
