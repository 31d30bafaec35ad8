package importer

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/proxmops/proxmops/internal/manifest"
)

// Where the import puts cookbooks: in the output directory, next to the
// manifests (a provision copy may not leave the directory proxmops loads),
// and in the guest.
const (
	outCookbooks   = "cookbooks"
	outLibraries   = "libraries" // the monorepo's config/libraries (Env, Default, Common...)
	guestCookbooks = "/var/lib/proxmops/cookbooks"
)

// basePackages are what Proxmox-GitOps' base role installs in every
// container (base/roles/base/vars/main.yml, default_packages).
var basePackages = []string{"sudo", "locales", "curl", "jq", "unzip", "vim"}

// baseCommands are the rest of the base role that cookbooks rely on: the
// config group and the app user (Default.user and Default.group).
var baseCommands = []string{
	"getent group config >/dev/null || groupadd config",
	"id -u app >/dev/null 2>&1 || useradd --no-create-home --home-dir /app --groups config --shell /bin/bash app",
	"command -v cinc-client >/dev/null || { echo \"cinc-client is not installed in this guest (Proxmox-GitOps installs Cinc in its base role); install it first, see proxmops' docs/migrating.md\" >&2; exit 127; }",
}

// provisionOf is the provisioning of one lib, as the lib's pipeline
// (.gitea/workflows/action.yml) configures its container: the lib's folder
// with the monorepo's libraries inside it, then cinc-client in local mode
// running the lib's cookbook with IP and ID (and the global variables, which
// Env.get falls back to) in its environment.
func (imp *Import) provisionOf(lib *Lib) *manifest.Provision {
	p := &manifest.Provision{Packages: append([]string(nil), basePackages...)}
	for _, cb := range lib.Cookbooks {
		dst := guestCookbooks + "/" + cb
		p.Copy = append(p.Copy, manifest.ProvisionCopy{Source: "../" + outCookbooks + "/" + cb, Path: dst})
		if imp.libraries != "" {
			p.Copy = append(p.Copy, manifest.ProvisionCopy{Source: "../" + outLibraries, Path: dst + "/libraries"})
		}
	}
	env := []string{"IP=" + shellQuote(lib.ip), fmt.Sprintf("ID=%d", lib.Container.Spec.VMID)}
	for _, k := range slices.Sorted(maps.Keys(imp.Report.Env)) {
		env = append(env, k+"="+shellQuote(imp.Report.Env[k]))
	}
	run := fmt.Sprintf("cd %s/%s && env %s cinc-client -z --config-option cookbook_path=%s -o %s",
		guestCookbooks, lib.Name, strings.Join(env, " "), guestCookbooks, lib.Name)
	p.Commands = append(append([]string(nil), baseCommands...), run)
	return p
}

// shellQuote quotes s for /bin/sh when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_-.,:/@%+=", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// treeFile is one file to copy into the output.
type treeFile struct {
	rel  string // slash-separated, relative to the copied folder
	mode fs.FileMode
}

// scanTree lists the regular files under dir (relative to the monorepo) that
// a provision copy takes: hidden entries (.git, .gitea) are left out, as the
// copy leaves them out; symbolic links and YAML files are problems (proxmops
// copies regular files only, and would read YAML files in the output as
// manifests).
func scanTree(root, dir string) ([]treeFile, []Finding) {
	var files []treeFile
	var probs []Finding
	base := filepath.Join(root, filepath.FromSlash(dir))
	err := filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(base, p)
		rel = filepath.ToSlash(rel)
		if p != base && strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if specFile(rel) {
			return nil // the manifests replace it
		}
		switch {
		case d.IsDir():
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			probs = append(probs, Finding{File: dir + "/" + rel, Reason: "a symbolic link: provisioning copies regular files only; replace it with the file"})
		case !d.Type().IsRegular():
			probs = append(probs, Finding{File: dir + "/" + rel, Reason: "not a regular file"})
		case manifest.IsManifestFile(rel):
			probs = append(probs, Finding{File: dir + "/" + rel, Reason: "a YAML file: in the output folder proxmops would read it as a manifest; rename it (e.g. .yaml.erb as a template) or keep it outside the cookbook"})
		default:
			info, err := d.Info()
			if err != nil {
				return err
			}
			files = append(files, treeFile{rel: rel, mode: info.Mode().Perm()})
		}
		return nil
	})
	if err != nil {
		probs = append(probs, Finding{File: dir, Reason: err.Error()})
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	return files, probs
}

// copyTree replaces out/dst with the files of the monorepo's src.
func copyTree(root, src, out, dst string, files []treeFile) error {
	target := filepath.Join(out, filepath.FromSlash(dst))
	if err := os.RemoveAll(target); err != nil {
		return err
	}
	if err := os.MkdirAll(target, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(src), filepath.FromSlash(f.rel)))
		if err != nil {
			return err
		}
		p := filepath.Join(target, filepath.FromSlash(f.rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if f.mode&0o111 != 0 {
			mode = 0o755
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			return err
		}
	}
	return nil
}

// scanCookbooks lists the files of every cookbook the containers run and
// of config/libraries.
func (imp *Import) scanCookbooks() []Finding {
	var probs []Finding
	dirs := []string{}
	for _, lib := range imp.Containers {
		for _, cb := range lib.Cookbooks {
			dirs = append(dirs, "libs/"+cb)
		}
	}
	if imp.libraries != "" {
		dirs = append(dirs, imp.libraries)
	}
	for _, d := range dirs {
		if _, done := imp.trees[d]; done {
			continue
		}
		files, p := scanTree(imp.dir, d)
		imp.trees[d] = files
		probs = append(probs, p...)
	}
	return probs
}

var (
	envWriteRE = regexp.MustCompile(`\bEnv\.(set|set_variable|dump)\b`)
	envGetRE   = regexp.MustCompile(`\bEnv\.get\(\s*[^,()]+,\s*['":]([A-Za-z0-9_]+)['"]?\s*\)`)
)

// checkRecipes lists what the cookbooks ask of Proxmox-GitOps' control
// plane (its Gitea variables), which the guest no longer has.
func (imp *Import) checkRecipes() {
	for _, d := range slices.Sorted(maps.Keys(imp.trees)) {
		if d == imp.libraries {
			continue
		}
		for _, f := range imp.trees[d] {
			if !strings.HasSuffix(f.rel, ".rb") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(imp.dir, filepath.FromSlash(d), filepath.FromSlash(f.rel)))
			if err != nil {
				continue
			}
			file := d + "/" + f.rel
			for _, m := range uniq(envWriteRE.FindAllStringSubmatch(string(data), -1), 1) {
				imp.Report.add(Finding{File: file, Item: "Env." + m, Reason: "writes a variable of the Proxmox-GitOps control plane (its Gitea API), which proxmops does not run: the call fails unless HOST, LOGIN and PASSWORD reach a Gitea"})
			}
			for _, key := range uniq(envGetRE.FindAllStringSubmatch(string(data), -1), 1) {
				if _, ok := imp.Report.Env[strings.ToUpper(key)]; ok || key == "ip" || key == "id" {
					continue
				}
				reason := fmt.Sprintf("not passed to cinc-client (Proxmox-GitOps would ask its Gitea): set %s in env.json, or as a node attribute of the cookbook", strings.ToUpper(key))
				if isCredential(strings.ToUpper(key)) {
					reason = "a credential of Proxmox-GitOps' services, which the import never writes into manifests: provide it in the guest yourself"
				}
				imp.Report.add(Finding{File: file, Item: "Env.get " + key, Reason: reason})
			}
		}
	}
}

func uniq(ms [][]string, group int) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		if !seen[m[group]] {
			seen[m[group]] = true
			out = append(out, m[group])
		}
	}
	return out
}

// specFile tells a lib's own container settings (container.env,
// container.local.env, a stage's, or the older config.env) apart from its
// cookbook's files.
func specFile(rel string) bool {
	return !strings.Contains(rel, "/") && strings.HasSuffix(rel, ".env") &&
		(strings.HasPrefix(rel, "container.") || strings.HasPrefix(rel, "config."))
}
