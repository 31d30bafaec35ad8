package importer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
	"go.yaml.in/yaml/v3"
)

// ReportFile is the report's name in the output directory.
const ReportFile = "proxmox-gitops-import.md"

// CheckOut refuses an output directory the written manifests would not work
// from: the monorepo itself (its Ansible YAML files are not manifests) or a
// folder the import copies from.
func CheckOut(dir, out string) error {
	absDir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	if absOut == absDir {
		return fmt.Errorf("--out %s is the monorepo itself, whose Ansible YAML files are not manifests: write to a folder of its own (default %s)", out, filepath.Join(dir, "proxmops"))
	}
	for _, src := range []string{"libs", "config", "base", "local"} {
		p := filepath.Join(absDir, src)
		if absOut == p || strings.HasPrefix(absOut, p+string(filepath.Separator)) {
			return fmt.Errorf("--out %s is inside the monorepo's %s folder: write to a folder of its own (default %s)", out, src, filepath.Join(dir, "proxmops"))
		}
	}
	if rel, err := filepath.Rel(absOut, absDir); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("--out %s contains the monorepo: write to a folder of its own (default %s)", out, filepath.Join(dir, "proxmops"))
	}
	return nil
}

// generatedMark is the first line of every manifest the import writes: a
// later import removes such a file when its lib is gone.
const generatedMark = "Written by proxmops import proxmox-gitops; importing again rewrites this file."

// Write writes the cookbooks, the manifests and the report under out,
// removes what an earlier import wrote for libs that are gone, then loads
// out as `proxmops validate` does: an import that does not validate is an
// error.
func (imp *Import) Write(out string) error {
	if err := CheckOut(imp.dir, out); err != nil {
		return err
	}
	rep := imp.Report
	rep.Written, rep.Removed = nil, nil
	write := func(rel string, data []byte) error {
		p := filepath.Join(out, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			return err
		}
		rep.Written = append(rep.Written, rel)
		return nil
	}
	keep := map[string]bool{}
	for _, src := range slices.Sorted(maps.Keys(imp.trees)) {
		dst := outLibraries
		if name, ok := strings.CutPrefix(src, "libs/"); ok {
			dst = outCookbooks + "/" + name
		}
		if err := copyTree(imp.dir, src, out, dst, imp.trees[src]); err != nil {
			return err
		}
		keep[dst] = true
		rep.Written = append(rep.Written, fmt.Sprintf("%s/ (%d files from %s)", dst, len(imp.trees[src]), src))
	}
	if err := imp.writeManifests(write); err != nil {
		return err
	}
	for _, w := range rep.Written {
		keep[w] = true
	}
	if err := removeStale(out, keep, rep); err != nil {
		return err
	}
	rep.Written = append(rep.Written, ReportFile)
	if err := os.WriteFile(filepath.Join(out, ReportFile), []byte(rep.Markdown()), 0o644); err != nil {
		return err
	}
	if _, err := manifest.LoadDir(out); err != nil {
		var list manifest.ErrorList
		if errors.As(err, &list) {
			return fmt.Errorf("the written manifests do not validate (please report this):\n%w", err)
		}
		return err
	}
	return nil
}

// writeManifests writes the ContainerTemplate and one Container per lib.
func (imp *Import) writeManifests(write func(string, []byte) error) error {
	rep := imp.Report
	tplHead := fmt.Sprintf("The OS template of every imported container: PROXMOX_STORAGE %s, PROXMOX_TEMPLATE %s.",
		rep.Settings["PROXMOX_STORAGE"].Value, rep.Settings["PROXMOX_TEMPLATE"].Value)
	data, err := renderYAML(tplHead, imp.Template)
	if err != nil {
		return err
	}
	if err := write("templates/"+imp.Template.Metadata.Name+".yaml", data); err != nil {
		return err
	}
	for _, lib := range imp.Containers {
		data, err := renderYAML("Imported from "+lib.EnvFile+".", lib.Container)
		if err != nil {
			return err
		}
		if err := write("containers/"+lib.Name+".yaml", data); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes the manifests an earlier import wrote (they start with
// generatedMark) and the cookbook copies that this import did not write.
func removeStale(out string, keep map[string]bool, rep *Report) error {
	for _, dir := range []string{"containers", "templates"} {
		entries, err := os.ReadDir(filepath.Join(out, dir))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		for _, e := range entries {
			rel := dir + "/" + e.Name()
			if e.IsDir() || !manifest.IsManifestFile(rel) || keep[rel] {
				continue
			}
			data, err := os.ReadFile(filepath.Join(out, dir, e.Name()))
			if err != nil || !strings.HasPrefix(string(data), "# "+generatedMark+"\n") {
				continue // not the import's
			}
			if err := os.Remove(filepath.Join(out, dir, e.Name())); err != nil {
				return err
			}
			rep.Removed = append(rep.Removed, rel)
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, outCookbooks))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range entries {
		rel := outCookbooks + "/" + e.Name()
		if keep[rel] {
			continue
		}
		if err := os.RemoveAll(filepath.Join(out, outCookbooks, e.Name())); err != nil {
			return err
		}
		rep.Removed = append(rep.Removed, rel+"/")
	}
	return nil
}

// renderYAML writes a resource as a block-style YAML document with a head
// comment, keys in the manifest's order.
func renderYAML(head string, r json.Marshaler) ([]byte, error) {
	return manifest.Render(r, func(doc *yaml.Node) { doc.HeadComment = generatedMark + "\n" + head })
}
