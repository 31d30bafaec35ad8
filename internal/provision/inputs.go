package provision

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Inputs is everything provisioning applies to one guest: its steps and the
// content of every file and copied tree. Its hash decides whether a guest is
// provisioned again.
type Inputs struct {
	Packages []string
	Files    []File
	Copies   []Copy
	Commands []string
}

// File is one file written into the guest.
type File struct {
	Path  string
	Mode  uint32 // default 0644
	Owner string // "" keeps the SSH user's
	Data  []byte
}

// Copy is a repository directory copied into the guest.
type Copy struct {
	Source string // for messages
	Path   string // destination directory
	Owner  string
	Tree   []manifest.TreeFile
}

// FromManifest turns a loaded spec.provision into Inputs. It fails when a
// source was not read (a manifest parsed without its repository).
func FromManifest(p *manifest.Provision) (*Inputs, error) {
	if p == nil {
		return nil, nil
	}
	if !p.Loaded() {
		return nil, fmt.Errorf("the provisioning sources (files[].source, copy[].source) were not read: load the manifests from their repository")
	}
	in := &Inputs{Packages: slices.Clone(p.Packages), Commands: slices.Clone(p.Commands)}
	for _, f := range p.Files {
		mode := uint32(0o644)
		if f.Mode != "" {
			m, err := strconv.ParseUint(f.Mode, 8, 32)
			if err != nil {
				return nil, fmt.Errorf("files %s: mode %q: %w", f.Path, f.Mode, err)
			}
			mode = uint32(m)
		}
		data := f.Data
		if data == nil {
			data = []byte(f.Content)
		}
		in.Files = append(in.Files, File{Path: f.Path, Mode: mode, Owner: f.Owner, Data: data})
	}
	for _, c := range p.Copy {
		in.Copies = append(in.Copies, Copy{Source: c.Source, Path: c.Path, Owner: c.Owner, Tree: c.Tree})
	}
	return in, nil
}

// Summary counts the steps, e.g. "2 packages, 1 file, 1 copy (12 files), 3 commands".
func (in *Inputs) Summary() string {
	var parts []string
	plural := func(n int, one, many string) string {
		if n == 1 {
			return "1 " + one
		}
		return strconv.Itoa(n) + " " + many
	}
	if n := len(in.Packages); n > 0 {
		parts = append(parts, plural(n, "package", "packages"))
	}
	if n := len(in.Files); n > 0 {
		parts = append(parts, plural(n, "file", "files"))
	}
	if n := len(in.Copies); n > 0 {
		files := 0
		for _, c := range in.Copies {
			files += len(c.Tree)
		}
		parts = append(parts, plural(n, "copy", "copies")+" ("+plural(files, "file", "files")+")")
	}
	if n := len(in.Commands); n > 0 {
		parts = append(parts, plural(n, "command", "commands"))
	}
	return strings.Join(parts, ", ")
}

// hasher writes length-prefixed fields, so no two different inputs write
// the same bytes.
type hasher struct{ h hash.Hash }

func newHasher(tag string) *hasher {
	h := &hasher{sha256.New()}
	h.str("proxmops-provision/v1/" + tag)
	return h
}

func (h *hasher) bytes(b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.h.Write(n[:])
	h.h.Write(b)
}

func (h *hasher) str(s string) { h.bytes([]byte(s)) }
func (h *hasher) num(v uint32) { h.str(strconv.FormatUint(uint64(v), 8)) }
func (h *hasher) sum() []byte  { return h.h.Sum(nil) }

func (f *File) hash() []byte {
	h := newHasher("file")
	h.str(f.Path)
	h.num(f.Mode)
	h.str(f.Owner)
	h.bytes(f.Data)
	return h.sum()
}

func (c *Copy) hash() []byte {
	h := newHasher("copy")
	h.str(c.Path)
	h.str(c.Owner)
	for _, f := range c.Tree {
		h.str(f.Path)
		h.num(f.Mode)
		h.bytes(f.Data)
	}
	return h.sum()
}

func listHash(tag string, items []string) []byte {
	h := newHasher(tag)
	for _, s := range items {
		h.str(s)
	}
	return h.sum()
}

// shortLen is the number of hex digits kept per part in the record.
const shortLen = 8

func short(b []byte) string { return hex.EncodeToString(b)[:shortLen] }

// Record is what proxmops writes into the guest's description after a
// successful run: the hash of all inputs and a short hash per part, so that
// a plan can name what changed without contacting the guest.
type Record struct {
	Hash     string   // "sha256:<64 hex>"
	Packages string   // short hash, "" when there are none
	Files    []string // short hash per file, in order
	Copies   []string
	Commands string
}

// Record computes the record of the inputs.
func (in *Inputs) Record() Record {
	var r Record
	all := newHasher("all")
	if len(in.Packages) > 0 {
		b := listHash("packages", in.Packages)
		r.Packages = short(b)
		all.str("packages")
		all.bytes(b)
	}
	for i := range in.Files {
		b := in.Files[i].hash()
		r.Files = append(r.Files, short(b))
		all.str("file")
		all.bytes(b)
	}
	for i := range in.Copies {
		b := in.Copies[i].hash()
		r.Copies = append(r.Copies, short(b))
		all.str("copy")
		all.bytes(b)
	}
	if len(in.Commands) > 0 {
		b := listHash("commands", in.Commands)
		r.Commands = short(b)
		all.str("commands")
		all.bytes(b)
	}
	r.Hash = "sha256:" + hex.EncodeToString(all.sum())
	r.Files, r.Copies = capItems(r.Files), capItems(r.Copies)
	return r
}

// maxItems bounds the per-item hashes in the record (the description has
// a size limit); past it, one combined hash marked "*" stands for them all.
const maxItems = 32

func capItems(hs []string) []string {
	if len(hs) <= maxItems {
		return hs
	}
	return []string{"*" + short(listHash("items", hs))}
}

// Hash is the hash of all inputs, "sha256:<hex>".
func (in *Inputs) Hash() string { return in.Record().Hash }

// LinePrefix starts the line of a guest's description that proxmops owns.
const LinePrefix = "proxmops-provisioned:"

// Line renders the record as its description line:
// "proxmops-provisioned: sha256:<hex> packages=<h> files=<h>,<h> copy=<h> commands=<h>".
func (r Record) Line() string {
	var b strings.Builder
	b.WriteString(LinePrefix + " " + r.Hash)
	if r.Packages != "" {
		b.WriteString(" packages=" + r.Packages)
	}
	if len(r.Files) > 0 {
		b.WriteString(" files=" + strings.Join(r.Files, ","))
	}
	if len(r.Copies) > 0 {
		b.WriteString(" copy=" + strings.Join(r.Copies, ","))
	}
	if r.Commands != "" {
		b.WriteString(" commands=" + r.Commands)
	}
	return b.String()
}

// ParseLine reads a record line (as Line writes it); ok is false for
// anything else.
func ParseLine(line string) (Record, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), LinePrefix)
	if !ok {
		return Record{}, false
	}
	fields := strings.Fields(rest)
	if len(fields) == 0 || !strings.HasPrefix(fields[0], "sha256:") || len(fields[0]) != len("sha256:")+64 {
		return Record{}, false
	}
	r := Record{Hash: fields[0]}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "packages":
			r.Packages = v
		case "files":
			r.Files = strings.Split(v, ",")
		case "copy":
			r.Copies = strings.Split(v, ",")
		case "commands":
			r.Commands = v
		}
	}
	return r, true
}

// Changes names what differs between a recorded run and the inputs, e.g.
// "files /etc/motd, commands"; "" when the hashes are equal.
func (in *Inputs) Changes(old Record) string {
	now := in.Record()
	if now.Hash == old.Hash {
		return ""
	}
	var parts []string
	if now.Packages != old.Packages {
		parts = append(parts, "packages")
	}
	named := func(what, names string) {
		switch names {
		case "":
		case "*":
			parts = append(parts, what)
		default:
			parts = append(parts, what+" "+names)
		}
	}
	named("files", changedItems(now.Files, old.Files, func(i int) string { return in.Files[i].Path }))
	named("copy", changedItems(now.Copies, old.Copies, func(i int) string { return in.Copies[i].Path }))
	if now.Commands != old.Commands {
		parts = append(parts, "commands")
	}
	if len(parts) == 0 {
		parts = append(parts, "order of steps")
	}
	return strings.Join(parts, ", ")
}

// changedItems names the items whose hash is not among the recorded ones,
// and counts the recorded ones no item has any more.
func changedItems(now, old []string, name func(int) string) string {
	if len(now) == 1 && strings.HasPrefix(now[0], "*") || len(old) == 1 && strings.HasPrefix(old[0], "*") {
		if slices.Equal(now, old) {
			return ""
		}
		return "*"
	}
	left := map[string]int{}
	for _, h := range old {
		left[h]++
	}
	var out []string
	for i, h := range now {
		if left[h] > 0 {
			left[h]--
			continue
		}
		out = append(out, name(i))
	}
	removed := -len(out)
	for _, n := range left {
		removed += n
	}
	if removed > 0 {
		out = append(out, strconv.Itoa(removed)+" removed")
	}
	return strings.Join(out, " ")
}

// SplitDescription separates a guest's description into the text the user
// manages and proxmops' record line (the last one wins when several are
// there). ok is false when there is no record line.
func SplitDescription(desc string) (user string, rec Record, ok bool) {
	if !strings.Contains(desc, LinePrefix) {
		return desc, Record{}, false
	}
	lines := strings.Split(desc, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if r, isRec := ParseLine(l); isRec {
			rec, ok = r, true
			continue
		}
		kept = append(kept, l)
	}
	return strings.TrimRight(strings.Join(kept, "\n"), " \n\r\t"), rec, ok
}

// JoinDescription appends a record line to the user's description.
func JoinDescription(user string, rec Record) string {
	user = strings.TrimRight(user, " \n\r\t")
	if user == "" {
		return rec.Line()
	}
	return user + "\n\n" + rec.Line()
}
