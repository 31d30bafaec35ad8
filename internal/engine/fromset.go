package engine

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/pvefields"
	"github.com/proxmops/proxmops/internal/vocab"
)

// SecretReader resolves a manifest's secret reference (passwordFrom).
type SecretReader func(ref *manifest.SecretRef) (string, error)

// ReadSecret is the default SecretReader: an environment variable of this
// process, or a file with its trailing newline removed.
func ReadSecret(ref *manifest.SecretRef) (string, error) {
	switch {
	case ref == nil:
		return "", nil
	case ref.Env != "":
		v, ok := os.LookupEnv(ref.Env)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", ref.Env)
		}
		return v, nil
	case ref.File != "":
		b, err := os.ReadFile(ref.File)
		if err != nil {
			return "", fmt.Errorf("reading secret file: %w", err)
		}
		return strings.TrimRight(string(b), "\r\n"), nil
	}
	return "", fmt.Errorf("secret reference names neither env nor file")
}

// DesiredFromSet turns a loaded, validated manifest set into the engine's
// desired state. secrets may be nil (ReadSecret is used). A secret that
// cannot be read makes its resource Invalid, not the whole set.
func DesiredFromSet(set *manifest.Set, secrets SecretReader) *Desired {
	if secrets == nil {
		secrets = ReadSecret
	}
	d := &Desired{}
	if set == nil {
		return d
	}
	for _, row := range kinds {
		if row.desired == nil {
			continue
		}
		for _, r := range set.OfKind(manifest.Kind(row.kind)) {
			d.Add(row.desired(r, secrets))
		}
	}
	return d
}

// referenceKeys are the keys of r's spec references to declared resources
// (manifest.Dependencies, the function the UI's graph reads too).
func referenceKeys(r manifest.Resource) []string {
	var out []string
	for _, e := range manifest.Dependencies(r) {
		if e.Relation != manifest.RelationDependsOn {
			out = append(out, e.Key())
		}
	}
	return out
}

// needs returns the keys of m's references to resources of the kinds:
// the edges of manifest.Dependencies a reconciler orders an action after.
func (m *Meta) needs(kinds ...string) []string {
	var out []string
	for _, k := range m.Needs {
		if kind, _, _ := vocab.SplitKey(k); slices.Contains(kinds, kind) {
			out = append(out, k)
		}
	}
	return out
}

func metaOf(r manifest.Resource) Meta {
	md := r.Meta()
	return Meta{Kind: string(r.Kind()), Name: r.Name(), Node: r.Node(), Tags: md.Tags,
		Sync: md.Sync(), Adopt: md.Adopt(), File: r.Source().File, DependsOn: manifest.DependsOnKeys(r), Needs: referenceKeys(r), paths: pvefields.PathsOf(r)}
}

func imageFromManifest(img *manifest.Image) *ImageSpec {
	if img == nil {
		return nil
	}
	out := &ImageSpec{Storage: img.Storage, FileName: img.Filename, Format: img.Format}
	if img.IsURL() || strings.HasPrefix(img.Source, "http://") || strings.HasPrefix(img.Source, "https://") {
		out.URL = img.Source
	} else {
		out.Volume = img.Source
	}
	if img.Checksum != nil {
		out.ChecksumAlgo, out.ChecksumValue = strings.ToLower(img.Checksum.Algo), strings.ToLower(img.Checksum.Value)
	}
	return out
}

func disksFromManifest(disks []manifest.Disk) []DiskSpec {
	var out []DiskSpec
	for _, d := range disks {
		opts := map[string]string{}
		if d.Cache != "" {
			opts["cache"] = d.Cache
		}
		if d.Discard {
			opts["discard"] = "on"
		}
		if d.SSD {
			opts["ssd"] = "1"
		}
		if d.IOThread {
			opts["iothread"] = "1"
		}
		if d.Backup != nil {
			opts["backup"] = pvefields.FormatBool(*d.Backup)
		}
		if len(opts) == 0 {
			opts = nil
		}
		out = append(out, DiskSpec{Slot: d.Slot, Storage: d.Storage, Size: d.Size.Bytes, Options: opts, Format: d.Format})
	}
	return out
}

func nicsFromManifest(nics []manifest.NIC) []NICSpec {
	var out []NICSpec
	for _, n := range nics {
		s := NICSpec{Slot: n.Slot, Model: n.Model, Bridge: n.Bridge, MAC: n.MACAddr}
		if s.Model == "" {
			s.Model = manifest.DefaultNICModel
		}
		tag := n.Tag
		s.Tag = &tag
		fw := n.Firewall
		s.Firewall = &fw
		if n.MTU > 0 {
			mtu := n.MTU
			s.MTU = &mtu
		}
		if n.Rate > 0 {
			s.Rate = strconv.FormatFloat(n.Rate, 'f', -1, 64)
		}
		extra := map[string]string{}
		if n.Queues > 0 {
			extra["queues"] = strconv.Itoa(n.Queues)
		}
		if n.LinkDown {
			extra["link_down"] = "1"
		}
		if len(extra) > 0 {
			s.Extra = extra
		}
		out = append(out, s)
	}
	return out
}

func cloudInitFromManifest(ci *manifest.CloudInit, secrets SecretReader) (*CloudInitSpec, error) {
	if ci == nil {
		return nil, nil
	}
	out := &CloudInitSpec{User: ci.User, SSHKeys: ci.SSHKeys, Nameserver: ci.Nameserver,
		Searchdomain: ci.SearchDomain, Upgrade: ci.Upgrade}
	if ipc := ci.EffectiveIPConfigs(); len(ipc) > 0 {
		out.IPConfigs = map[string]string{}
		for slot, c := range ipc {
			out.IPConfigs[slot] = c.String()
		}
	}
	if ci.PasswordFrom != nil {
		pw, err := secrets(ci.PasswordFrom)
		if err != nil {
			return out, fmt.Errorf("cloudInit.passwordFrom: %w", err)
		}
		out.Password, out.PasswordSet = pw, true
	}
	return out, nil
}

// qemuHW is the one conversion from the manifest's hardware. A Go
// conversion needs the same fields in the same order, so a field added to
// manifest.QemuHardware and not to QemuHW (or the reverse) does not compile.
func qemuHW(h manifest.QemuHardware) QemuHW { return QemuHW(h) }
