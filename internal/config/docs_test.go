package config

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/pvesim"
)

// What a newcomer reads about the configuration must be what the loader
// accepts: every config file shown, every key and environment variable
// named, and the Proxmox VE role the docs have users create.

const repoRoot = "../.."

// configDocs are the documents that show configuration.
var configDocs = []string{"README.md", "CONTRIBUTING.md", "SECURITY.md", "docs/*.md", "examples/README.md"}

// docText is one document's lines.
type docText struct {
	path  string
	lines []string
}

func readDocs(t *testing.T) []docText {
	t.Helper()
	var out []docText
	for _, pat := range configDocs {
		paths, err := filepath.Glob(filepath.Join(repoRoot, pat))
		if err != nil || len(paths) == 0 {
			t.Fatalf("no document matches %s", pat)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, docText{path: p, lines: strings.Split(string(data), "\n")})
		}
	}
	return out
}

// block is a fenced code block.
type block struct {
	path  string
	first int // line number of its first line
	lang  string
	text  string
}

func fencedBlocks(d docText) []block {
	var out []block
	var cur *block
	var body []string
	for i, line := range d.lines {
		fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case ok && cur == nil:
			cur = &block{path: d.path, first: i + 2, lang: fence}
			body = nil
		case ok:
			cur.text = strings.Join(body, "\n") + "\n"
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			body = append(body, line)
		}
	}
	return out
}

var topKeyRE = regexp.MustCompile(`(?m)^([A-Za-z][A-Za-z0-9]*):`)

// isConfigFile reports whether a YAML block is a proxmops config file: a
// top-level key is a section, and it is no manifest.
func isConfigFile(text string) bool {
	section := false
	for _, m := range topKeyRE.FindAllStringSubmatch(text, -1) {
		if m[1] == "apiVersion" || m[1] == "kind" {
			return false
		}
		section = section || slices.Contains(sectionNames, m[1])
	}
	return section
}

// decodeProblems decodes a config file as Load does, without reading the
// files it names or checking values (the docs show placeholders), and
// returns the problems: unknown keys, wrong types, bad ${VAR} syntax.
func decodeProblems(name, text string) error {
	l := &fileLayer{name: name, lookup: func(string) (string, bool) { return "set", true }}
	l.apply(Defaults(), []byte(text))
	return l.probs.err()
}

func TestDocsConfigFilesUseOnlyKeysTheLoaderAccepts(t *testing.T) {
	checked := 0
	for _, d := range readDocs(t) {
		for _, b := range fencedBlocks(d) {
			if (b.lang != "yaml" && b.lang != "yml") || !isConfigFile(b.text) {
				continue
			}
			checked++
			// Blank lines before it make the loader's line numbers the
			// document's.
			if err := decodeProblems(b.path, strings.Repeat("\n", b.first-1)+b.text); err != nil {
				t.Errorf("%s:%d: the loader refuses this config file:\n%v", b.path, b.first, err)
			}
		}
	}
	// The shipped config file, installed as /etc/proxmops/proxmops.yaml;
	// its commented sections too, once uncommented.
	data, err := os.ReadFile(filepath.Join(repoRoot, "packaging", "proxmops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	uncommented := uncomment(string(data))
	for name, text := range map[string]string{"packaging/proxmops.yaml": string(data), "packaging/proxmops.yaml (uncommented)": uncommented} {
		checked++
		if err := decodeProblems(name, text); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if checked < 4 {
		t.Fatalf("only %d config files found in the docs: the scanner is broken", checked)
	}
}

// uncomment turns the commented sections of packaging/proxmops.yaml into
// YAML, as the README tells users to.
func uncomment(text string) string {
	return regexp.MustCompile(`(?m)^# ?([a-z][A-Za-z]*:.*|  .*)$`).ReplaceAllString(text, "$1")
}

// The shipped config file, its sections uncommented as the README's
// real-cluster steps say and the secret in the file it names, is a whole
// working configuration for serve, plan and apply.
func TestShippedConfigWorksOnceUncommented(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "packaging", "proxmops.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := uncomment(string(data))
	const secretFile = "/etc/proxmops/token-secret"
	if !strings.Contains(text, "tokenSecretFile: "+secretFile) {
		t.Fatalf("packaging/proxmops.yaml no longer names %s, which README.md tells users to write:\n%s", secretFile, text)
	}
	readme, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "-g proxmops /dev/stdin "+secretFile) {
		t.Errorf("README.md's real-cluster steps no longer write %s", secretFile)
	}
	dir := t.TempDir()
	secret := writeFile(t, dir, "token-secret", "0b6c0b36-6a9c-4b8e-8f55-2b8e3f0d3a11\n")
	cfg := writeFile(t, dir, "proxmops.yaml", strings.Replace(text, secretFile, secret, 1))
	c, warnings, err := Load(LoadOptions{File: cfg, Env: []string{}})
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if len(warnings) != 0 {
		t.Errorf("warnings: %v", warnings)
	}
	if err := c.RequireCluster(); err != nil {
		t.Errorf("not enough for plan and serve: %v", err)
	}
	if err := c.RequireSource(); err != nil {
		t.Errorf("not enough for plan and serve: %v", err)
	}
	if c.Cluster.TokenSecret != "0b6c0b36-6a9c-4b8e-8f55-2b8e3f0d3a11" {
		t.Errorf("token secret %q", c.Cluster.TokenSecret)
	}
}

var (
	headingRE  = regexp.MustCompile(`^#{2,4} +(\S+)\s*$`)
	tableRowRE = regexp.MustCompile(`^\|([^|]*)\|([^|]*)\|`)
	codeRE     = regexp.MustCompile("`([^`\n]+)`")
)

// The key tables of docs/configuration.md name every key, each under its
// section with its environment variable, and nothing else.
func TestConfigurationDocTablesListEveryKey(t *testing.T) {
	path := filepath.Join(repoRoot, "docs", "configuration.md")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	documented := map[string]bool{}
	clusterKeyNames := map[string]bool{"name": true, "path": true}
	for _, k := range clusterKeys() {
		clusterKeyNames[k.name] = true
	}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if m := headingRE.FindStringSubmatch(line); m != nil {
			section = ""
			if slices.Contains(sectionNames, m[1]) {
				section = m[1]
			}
			continue
		} else if strings.HasPrefix(line, "#") {
			section = ""
			continue
		}
		m := tableRowRE.FindStringSubmatch(line)
		if section == "" || m == nil || strings.TrimSpace(m[1]) == "key" || strings.HasPrefix(strings.TrimSpace(m[1]), "---") {
			continue
		}
		where := path + ":" + strconv.Itoa(n)
		envs := codeRE.FindAllStringSubmatch(m[2], -1)
		for _, km := range codeRE.FindAllStringSubmatch(m[1], -1) {
			name := km[1]
			if section == "notifications" {
				if !slices.Contains(notificationKeys, name) {
					t.Errorf("%s: notifications entries take no key %q", where, name)
				}
				continue
			}
			if section == "clusters" {
				if !clusterKeyNames[name] {
					t.Errorf("%s: clusters entries take no key %q", where, name)
				}
				continue
			}
			k, ok := keyByPath[section+"."+name]
			if !ok {
				t.Errorf("%s: %s.%s is no configuration key", where, section, name)
				continue
			}
			documented[k.Path()] = true
			found := false
			for _, e := range envs {
				found = found || e[1] == k.EnvName()
			}
			if !found {
				t.Errorf("%s: %s: the environment column lacks %s", where, k.Path(), k.EnvName())
			}
		}
	}
	for _, k := range Keys() {
		if !documented[k] {
			t.Errorf("docs/configuration.md has no table row for %s (env %s)", k, EnvName(k))
		}
	}
}

// The Flags section of docs/configuration.md names every flag whose name
// is not the key in kebab case, with its key.
func TestConfigurationDocNamesEveryFlagThatIsNotTheKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n## Flags\n")
	if !ok {
		t.Fatal("docs/configuration.md has no Flags section")
	}
	section, _, _ = strings.Cut(section, "\n## ")
	text := strings.Join(strings.Fields(section), " ")
	for path, flag := range flagNames {
		if want := "`--" + flag + "` (`" + path + "`)"; !strings.Contains(text, want) {
			t.Errorf("the Flags section of docs/configuration.md lacks %s", want)
		}
	}
}

var dottedKeyRE = regexp.MustCompile(`^([a-z]+)\.([a-z][a-zA-Z]*)$`)

// notKeys look like keys in the docs but name something else.
var notKeys = map[string]string{
	"ha.managed": "a field of Proxmox's guest status (docs/manifests.md)",
}

// Inline mentions such as `server.trustProxy` name keys that exist.
func TestDocsNameOnlyConfigKeysThatExist(t *testing.T) {
	checked := 0
	for _, d := range readDocs(t) {
		for i, line := range d.lines {
			for _, m := range codeRE.FindAllStringSubmatch(line, -1) {
				km := dottedKeyRE.FindStringSubmatch(m[1])
				if km == nil || !slices.Contains(sectionNames, km[1]) || km[2] == "md" || notKeys[m[1]] != "" {
					continue
				}
				checked++
				if _, ok := keyByPath[m[1]]; !ok {
					t.Errorf("%s:%d: `%s` is no configuration key%s", d.path, i+1, m[1], didYouMean(m[1], Keys()))
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d key mentions found: the scanner is broken", checked)
	}
}

var envNameRE = regexp.MustCompile(`PROXMOPS_[A-Z0-9_]*[A-Z0-9]_?`)

// envNotKeys are PROXMOPS_<SECTION>_ names the docs show on purpose that
// are no key.
var envNotKeys = map[string]string{
	"PROXMOPS_CLUSTER_TOKEN_SECRET": "the misspelling whose warning docs/configuration.md shows",
}

// envNotRead are variables the docs name that no code in the repository
// reads, with the reason.
var envNotRead = map[string]string{
	"PROXMOPS_PROTO_V3": "docs/benchmarks.md: the switch of a prototype loader measured once and not kept",
}

// Every PROXMOPS_ variable the docs and the shipped files name is a key's,
// a cluster's, or one the code reads by that name.
func TestDocsNameOnlyEnvironmentVariablesThatExist(t *testing.T) {
	sources := codeTexts(t)
	docs := readDocs(t)
	for _, extra := range []string{"packaging/proxmops.yaml", "packaging/proxmops.service", "Dockerfile"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, extra))
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, docText{path: extra, lines: strings.Split(string(data), "\n")})
	}
	envOfKey := map[string]bool{EnvConfigFile: true, EnvGitToken: true}
	for _, k := range allKeys {
		envOfKey[k.EnvName()] = true
	}
	var clusterSuffixes []string
	for _, k := range clusterKeys() {
		clusterSuffixes = append(clusterSuffixes, "_"+strings.ToUpper(k.name))
	}
	clusterSuffixes = append(clusterSuffixes, "_PATH")
	read := map[string]bool{} // every PROXMOPS_ name the code spells out
	for _, name := range regexp.MustCompile(`PROXMOPS_[A-Z0-9_]+`).FindAllString(sources, -1) {
		read[name] = true
	}
	checked := 0
	for _, d := range docs {
		for i, line := range d.lines {
			for _, name := range envNameRE.FindAllString(line, -1) {
				where := d.path + ":" + strconv.Itoa(i+1)
				checked++
				switch {
				case strings.HasSuffix(name, "_"): // a prefix: PROXMOPS_CLUSTER_…
				case envOfKey[name] || envNotKeys[name] != "":
				case strings.HasPrefix(name, "PROXMOPS_CLUSTERS_"):
					if !slices.ContainsFunc(clusterSuffixes, func(s string) bool { return strings.HasSuffix(name, s) }) {
						t.Errorf("%s: %s names no key of a clusters entry", where, name)
					}
				case slices.ContainsFunc(sectionNames, func(s string) bool { return strings.HasPrefix(name, "PROXMOPS_"+strings.ToUpper(s)+"_") }):
					t.Errorf("%s: %s is no configuration key's variable%s", where, name, didYouMean(name, slices.Collect(mapKeys(envOfKey))))
				case envNotRead[name] != "":
				case !read[name]:
					t.Errorf("%s: %s: nothing in the code reads this variable", where, name)
				}
			}
		}
	}
	if checked < 30 {
		t.Fatalf("only %d variables found: the scanner is broken", checked)
	}
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// codeTexts is every program text of the repository that may read an
// environment variable (Go, shell, TypeScript, the Makefile, the CI
// script), joined.
func codeTexts(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	exts := map[string]bool{".go": true, ".sh": true, ".ts": true, ".mjs": true, ".js": true}
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", ".git", "dist", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if p == filepath.Join(repoRoot, "internal", "config", "docs_test.go") {
			return nil // names variables to check, reads none
		}
		if exts[filepath.Ext(p)] || d.Name() == "Makefile" || d.Name() == "run" || d.Name() == "Dockerfile" {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			b.Write(data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

var (
	privilegeRE = regexp.MustCompile(`^(VM|Datastore|Sys|SDN|Pool|Realm|User|Group|Permissions|Mapping)(\.[A-Z][A-Za-z]*)+$`)
	pveumRoleRE = regexp.MustCompile(`pveum role add \S+ --privs "([^"]+)"`)
)

func privilegeSet(ps []Privilege) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		out[p.Name] = true
	}
	return out
}

// The role docs/configuration.md has users create grants exactly
// RequiredPrivileges, and its table explains each of them.
func TestConfigurationDocRoleGrantsTheRequiredPrivileges(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "configuration.md"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	required, optional := privilegeSet(RequiredPrivileges), privilegeSet(OptionalPrivileges)
	m := pveumRoleRE.FindStringSubmatch(text)
	if m == nil {
		t.Fatal(`docs/configuration.md has no "pveum role add NAME --privs "..."" line`)
	}
	// Proxmox VE 9 refuses a role naming an unknown privilege (VM.Monitor,
	// which 8.4 had): the simulator's list is AccessControl.pm's.
	if _, err := pvesim.ParsePrivilegeList(m[1]); err != nil {
		t.Errorf("pveum role add would fail on Proxmox VE 9: %v", err)
	}
	for p := range optional {
		if !pvesim.ValidPrivilege(p) {
			t.Errorf("the optional privilege %s does not exist on Proxmox VE 9", p)
		}
	}
	granted := map[string]bool{}
	for _, p := range strings.Split(m[1], ",") {
		if granted[p] {
			t.Errorf("the pveum role names %s twice", p)
		}
		granted[p] = true
		if !required[p] {
			t.Errorf("the pveum role grants %s, which config.RequiredPrivileges does not list", p)
		}
	}
	for p := range required {
		if !granted[p] {
			t.Errorf("the pveum role lacks %s, which proxmops needs (config.RequiredPrivileges)", p)
		}
	}
	tabled := map[string]bool{}
	for _, line := range strings.Split(text, "\n") {
		row := tableRowRE.FindStringSubmatch(line)
		if row == nil {
			continue
		}
		for _, c := range codeRE.FindAllStringSubmatch(row[1], -1) {
			if privilegeRE.MatchString(c[1]) {
				tabled[c[1]] = true
			}
		}
	}
	for p := range required {
		if !tabled[p] {
			t.Errorf("the privilege table of docs/configuration.md has no row for %s", p)
		}
	}
	for p := range tabled {
		if !required[p] {
			t.Errorf("the privilege table lists %s, which config.RequiredPrivileges does not", p)
		}
	}
	for p := range optional {
		if !strings.Contains(text, "`"+p+"`") {
			t.Errorf("docs/configuration.md does not mention the optional privilege %s", p)
		}
	}
}

// Every privilege name in the code's checks (the engine's privilege rules
// and anything else outside the simulator) is in the documented role or
// among the optional ones: a new rule cannot need a privilege the docs do
// not grant.
func TestEveryPrivilegeTheCodeNeedsIsRequiredOrOptional(t *testing.T) {
	known := privilegeSet(RequiredPrivileges)
	for p := range privilegeSet(OptionalPrivileges) {
		known[p] = true
	}
	for p := range privilegeSet(LegacyPrivileges) {
		if pvesim.ValidPrivilege(p) {
			t.Errorf("%s exists on Proxmox VE 9: it is no legacy name", p)
		}
		known[p] = true
	}
	found := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
				return err
			}
			if filepath.Base(filepath.Dir(p)) == "config" && filepath.Base(p) == "privileges.go" {
				return nil
			}
			f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			ast.Inspect(f, func(n ast.Node) bool {
				lit, ok := n.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING {
					return true
				}
				if s, err := strconv.Unquote(lit.Value); err == nil && privilegeRE.MatchString(s) {
					found[s] = fset.Position(lit.Pos()).String()
				}
				return true
			})
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(found) < 15 {
		t.Fatalf("only %d privilege names found in the code: the scanner is broken (%v)", len(found), found)
	}
	for p, where := range found {
		if !known[p] {
			t.Errorf("%s: the code needs %s, which neither config.RequiredPrivileges nor OptionalPrivileges lists", where, p)
		}
	}
}
