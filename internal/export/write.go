package export

import (
	"archive/tar"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/manifest"
	"go.yaml.in/yaml/v3"
)

// head is the first comment line of every exported manifest.
const head = "Exported by proxmops export: review it, commit it, and the next plan adopts what it declares."

// render writes one manifest as block YAML, its notes in the head comment
// and its per-field comments next to their fields.
func render(ex Exported) ([]byte, error) {
	return manifest.Render(ex.Resource, func(doc *yaml.Node) {
		lines := []string{head}
		for _, n := range ex.Notes {
			lines = append(lines, "NOTE: "+n)
		}
		doc.HeadComment = strings.Join(lines, "\n")
		for path, c := range ex.Comments {
			if k := keyNode(doc, path); k != nil {
				k.HeadComment = c
			}
		}
	})
}

// keyNode finds the key node of a dotted path ("spec.cloudInit").
func keyNode(doc *yaml.Node, path string) *yaml.Node {
	n := doc
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	var key *yaml.Node
	for _, part := range strings.Split(path, ".") {
		if n == nil || n.Kind != yaml.MappingNode {
			return nil
		}
		var next *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == part {
				key, next = n.Content[i], n.Content[i+1]
				break
			}
		}
		if next == nil {
			return nil
		}
		n = next
	}
	return key
}

// ErrExists is returned by WriteDir when a file to write exists already.
var ErrExists = errors.New("refusing to overwrite existing files")

// WriteDir writes the files under dir. It refuses, before writing any,
// when one of them exists, unless force.
func (r *Result) WriteDir(dir string, force bool) error {
	if !force {
		var exist []string
		for _, f := range r.Files {
			if _, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.Path))); err == nil {
				exist = append(exist, f.Path)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		if len(exist) > 0 {
			return fmt.Errorf("%w: %s already in %s (use --force to overwrite them)", ErrExists, strings.Join(exist, ", "), dir)
		}
	}
	for _, f := range r.Files {
		p := filepath.Join(dir, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// NotExportedFile is the archive's list of the guests an export refused.
const NotExportedFile = "NOT-EXPORTED.txt"

// WriteTarGz writes the files as a gzip-compressed tar archive, under the
// folder prefix (e.g. "proxmops-export/").
func (r *Result) WriteTarGz(w io.Writer, prefix string, mtime time.Time) error {
	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	dirs := map[string]bool{}
	for _, f := range r.Files {
		d := prefix + f.Path[:strings.LastIndex(f.Path, "/")+1]
		if !dirs[d] && d != "" {
			dirs[d] = true
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755, ModTime: mtime}); err != nil {
				return err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + f.Path, Mode: 0o644, Size: int64(len(f.Data)), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return err
		}
	}
	if len(r.Refused) > 0 {
		// The download has no other channel to say what it left out.
		var b strings.Builder
		b.WriteString("Guests not exported: a VM's or template's manifest name is its Proxmox name, and theirs\n" +
			"cannot be one as it is, so a manifest would rename them. Rename them on the cluster and export again.\n\n")
		for _, s := range r.Refused {
			b.WriteString(s + "\n")
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: prefix + NotExportedFile, Mode: 0o644, Size: int64(b.Len()), ModTime: mtime}); err != nil {
			return err
		}
		if _, err := io.WriteString(tw, b.String()); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
