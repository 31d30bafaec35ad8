package importer_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proxmops/proxmops/internal/importer"
	"github.com/proxmops/proxmops/internal/manifest"
)

// fixture copies testdata/proxmox-gitops (the second seed's layout: libs
// with container.env, the global env.json and local/config.json, cookbooks)
// to a temporary directory, with extra files written over it.
func fixture(t *testing.T, extra map[string]string) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "proxmox-gitops")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, content := range extra {
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// importFixture imports and writes into DIR/proxmops, failing on any error.
func importFixture(t *testing.T, dir string, opts importer.Options) (*importer.Import, string) {
	t.Helper()
	imp, err := importer.ProxmoxGitOps(dir, opts)
	if err != nil {
		t.Fatalf("import: %v", err)
	}
	out := filepath.Join(dir, "proxmops")
	if err := imp.Write(out); err != nil {
		t.Fatalf("write: %v", err)
	}
	return imp, out
}

// The seed's ID=42 is below Proxmox's lowest VMID: the import names the
// file and line and suggests --vmid-offset, and writes nothing.
func TestImportRefusesTheSeedsVMIDWithoutAnOffset(t *testing.T) {
	dir := fixture(t, nil)
	_, err := importer.ProxmoxGitOps(dir, importer.Options{})
	var ie *importer.Error
	if !errors.As(err, &ie) {
		t.Fatalf("want an *importer.Error, got %v", err)
	}
	if len(ie.Problems) != 1 {
		t.Fatalf("want one problem (broker's ID 109 is valid), got %v", ie)
	}
	want := "libs/apache/container.env:2: ID: VMID 42 is below 100, the lowest Proxmox accepts; use --vmid-offset N to shift every ID (--vmid-offset 100 makes this one 142)"
	if got := ie.Problems[0].String(); got != want {
		t.Errorf("problem\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(filepath.Join(dir, "proxmops")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("something was written: %v", err)
	}
}

// With --vmid-offset 100 the seed's layout becomes manifests that validate,
// with every container.env value mapped, and the rest in the report.
func TestImportSeedLayoutWritesManifestsThatValidate(t *testing.T) {
	dir := fixture(t, nil)
	imp, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	set, err := manifest.LoadDir(out)
	if err != nil {
		t.Fatalf("the written manifests do not validate: %v", err)
	}
	if c := set.Counts(); c[manifest.KindContainer] != 2 || c[manifest.KindContainerTemplate] != 1 || len(set.Resources) != 3 {
		t.Fatalf("resources %v", c)
	}
	apache := set.Get(manifest.KindContainer, "apache").(*manifest.Container).Spec
	if apache.VMID != 142 || apache.Cores != 2 || apache.Memory != 2048 || *apache.Swap != 512 ||
		apache.RootFS.Storage != "local-lvm" || apache.RootFS.Size.Text != "8G" || apache.OnBoot == nil || !*apache.OnBoot ||
		apache.Hostname != "apache" || apache.Template != "debian-13-standard-13-1-2" {
		t.Errorf("apache spec %+v", apache)
	}
	if n := apache.Net; len(n) != 1 || n[0].IP != "192.168.178.42/24" || n[0].Gw != "192.168.178.1" || n[0].Bridge != "vmbr0" || n[0].Name != "eth0" {
		t.Errorf("apache net %+v", n)
	}
	broker := set.Get(manifest.KindContainer, "broker").(*manifest.Container)
	if s := broker.Spec; s.VMID != 209 || s.OnBoot == nil || *s.OnBoot || s.Cores != 2 || len(s.Mountpoints) != 0 {
		t.Errorf("broker (from the older config.env name) %+v", s)
	}
	if broker.Metadata.Node != "pve1" {
		t.Errorf("node %q, want pve1 from local/config.json", broker.Metadata.Node)
	}
	tpl := set.Get(manifest.KindContainerTemplate, "debian-13-standard-13-1-2").(*manifest.ContainerTemplate)
	if tpl.Spec.Appliance != "debian-13-standard_13.1-2_amd64.tar.zst" || tpl.Spec.Storage != "local" || tpl.Metadata.Node != "pve1" {
		t.Errorf("template %+v %+v", tpl.Metadata, tpl.Spec)
	}
	if imp.Report.Env["LIBS_BROKER_ENDPOINT"] != "mqtt://192.168.178.109:1883" || imp.Report.Env["AUTO_DEPLOY"] != "false" {
		t.Errorf("global variables %v", imp.Report.Env)
	}
	report, err := os.ReadFile(filepath.Join(out, importer.ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	// Everything not mapped is listed, with its file.
	for _, want := range []string{
		"container.env: the Proxmox-GitOps control plane",
		"libs/apache/container.stage.env: a stage's settings",
		"libs/broker/config.env:8: MOUNT share: a CIFS share",
		"libs/broker/config.env:10: PORT: not a key Proxmox-GitOps' pipeline reads",
		"libs/share: no container.env: a cookbook",
		"local/config.json: password: a credential",
		"local/config.json: proxmox.password: a credential",
		"local/config.json: proxmox.host: a credential",
		"| PROXMOX_NODE | `pve1` | local/config.json |",
		"| PROXMOX_BRIDGE | `vmbr0` | Proxmox-GitOps default |",
	} {
		if !strings.Contains(string(report), want) {
			t.Errorf("the report does not say %q:\n%s", want, report)
		}
	}
	// Credentials are never copied anywhere.
	err = filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if strings.Contains(string(data), "fixture-") {
			t.Errorf("%s holds a credential of the fixture", p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// container.local.env is sourced over container.env, as the pipeline does;
// values there are reported with their own file and line.
func TestImportLocalEnvOverridesAndReportsItsOwnLines(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/apache/container.local.env": "# this machine\nIP=10.20.30.40\nCORES=four\n",
	})
	_, err := importer.ProxmoxGitOps(dir, importer.Options{VMIDOffset: 100})
	var ie *importer.Error
	if !errors.As(err, &ie) || len(ie.Problems) != 1 || !strings.HasPrefix(ie.Problems[0].String(), `libs/apache/container.local.env:3: CORES: "four" is not a whole number`) {
		t.Fatalf("want CORES of container.local.env refused, got %v", err)
	}
	dir = fixture(t, map[string]string{"libs/apache/container.local.env": "IP=10.20.30.40\n"})
	imp, _ := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	if ip := imp.Containers[0].Container.Spec.Net[0].IP; ip != "10.20.30.40/24" {
		t.Errorf("ip %q, want container.local.env's", ip)
	}
}

// Global settings come from env.json/globals.json (as variables) and
// local/config.json, config.local.json replacing config.json.
func TestImportGlobalSettings(t *testing.T) {
	dir := fixture(t, map[string]string{
		"globals.json":            `{"PROXMOX_BRIDGE": "vmbr1", "PROXMOX_MASK": 16, "APP_USER": "svc"}`,
		"local/config.local.json": `{"proxmox": {"node": "pve2", "gateway": "10.0.0.1", "storage": "nas:vztmpl", "template": "debian-12-standard_12.7-1", "interface": "lan0"}}`,
	})
	imp, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	if _, err := manifest.LoadDir(out); err != nil {
		t.Fatal(err)
	}
	s := imp.Containers[0].Container
	if s.Metadata.Node != "pve2" || s.Spec.Net[0].Bridge != "vmbr1" || s.Spec.Net[0].IP != "192.168.178.42/16" || s.Spec.Net[0].Gw != "10.0.0.1" || s.Spec.Net[0].Name != "lan0" {
		t.Errorf("container %+v %+v", s.Metadata, s.Spec.Net)
	}
	if tpl := imp.Template; tpl.Spec.Storage != "nas" || tpl.Spec.Appliance != "debian-12-standard_12.7-1_amd64.tar.zst" || tpl.Metadata.Node != "pve2" {
		t.Errorf("template %+v", tpl.Spec)
	}
	if imp.Report.Env["APP_USER"] != "svc" {
		t.Errorf("env %v", imp.Report.Env)
	}
	if got := imp.Report.Settings["PROXMOX_NODE"]; got.From != "local/config.local.json" {
		t.Errorf("node from %q", got.From)
	}
	found := false
	for _, f := range imp.Report.Findings {
		found = found || f.String() == "local/config.json: not read: local/config.local.json replaces it, as in Proxmox-GitOps"
	}
	if !found {
		t.Errorf("config.json's replacement not reported: %v", imp.Report.Findings)
	}
}

// wantImportErrors imports dir and wants an *importer.Error that says each
// of want.
func wantImportErrors(t *testing.T, dir string, want ...string) {
	t.Helper()
	_, err := importer.ProxmoxGitOps(dir, importer.Options{})
	var ie *importer.Error
	if !errors.As(err, &ie) {
		t.Fatalf("want *importer.Error, got %v", err)
	}
	text := ie.Error()
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("errors do not say %q:\n%s", w, text)
		}
	}
}

// Values the pipeline would pass but Proxmox or proxmops cannot take stop
// the import, all of them reported at once.
func TestImportRefusesUnusableValues(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/apache/container.env":   "IP=192.168.178.500\nID=142\nCORES=0\nMEMORY=2048\nSWAP=-1\nDISK=8\nBOOT=maybe\n",
		"libs/dup/container.env":      "IP=192.168.178.43\nID=109\nCORES=1\nMEMORY=512\nSWAP=0\nDISK=local-lvm:2\n",
		"libs/Bad_Name/container.env": "IP=192.168.178.44\nID=150\nCORES=1\nMEMORY=512\nSWAP=0\nDISK=local-lvm:2\n",
		"libs/short/container.env":    "IP=192.168.178.45\nID=151\n",
	})
	wantImportErrors(t, dir,
		`libs/apache/container.env:1: IP: "192.168.178.500" with PROXMOX_MASK "24" is not an IPv4 address`,
		`libs/apache/container.env:3: CORES: "0" is not a whole number of at least 1`,
		`libs/apache/container.env:5: SWAP: "-1" is not a whole number of at least 0`,
		`libs/apache/container.env:6: DISK: "8" is not STORAGE:GiB`,
		`libs/apache/container.env:7: BOOT: "maybe" is not yes or no`,
		`libs/dup/container.env:2: ID: VMID 109 is already used by libs/broker/config.env`,
		`libs/Bad_Name/container.env: folder name: the lib's folder name "Bad_Name" is not a lower-case DNS label`,
		`libs/short/container.env: CORES: missing`,
		`libs/short/container.env: DISK: missing`,
	)
}

// A file's problems are all reported, not only the first: a missing SWAP
// (which Proxmox-GitOps' container role fails on, so it is no default
// here) next to an ID Proxmox refuses and a bad IP, in a folder whose
// name is no DNS label.
func TestImportReportsEveryProblemOfAFileAtOnce(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/low/container.env":     "IP=192.168.178.46\nID=42\nCORES=1\nMEMORY=512\nDISK=local-lvm:2\n",
		"libs/Two_Bad/container.env": "IP=10.0.0.300\nID=160\nMEMORY=x\nSWAP=0\n",
	})
	wantImportErrors(t, dir,
		`libs/low/container.env: SWAP: missing: the container role passes it to community.general.proxmox's swap`,
		`write SWAP=512`,
		`libs/low/container.env:2: ID: VMID 42 is below 100`,
		`libs/Two_Bad/container.env: folder name:`,
		`libs/Two_Bad/container.env: CORES: missing`,
		`libs/Two_Bad/container.env: DISK: missing`,
		`libs/Two_Bad/container.env:3: MEMORY: "x" is not a whole number`,
		`libs/Two_Bad/container.env:1: IP: "10.0.0.300"`,
	)
}

// MOUNT entries the container role turns into mount points become
// mountpoints; the others are listed.
func TestImportMountEntries(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/apache/container.local.env": `MOUNT="share,/mnt/pve/media:/srv/media,local-lvm:16:/data,/dev/ttyUSB0,nas:vol-1:/x"` + "\n",
	})
	imp, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	if _, err := manifest.LoadDir(out); err != nil {
		t.Fatal(err)
	}
	mps := imp.Containers[0].Container.Spec.Mountpoints
	if len(mps) != 2 || mps[0].Bind != "/mnt/pve/media" || mps[0].Path != "/srv/media" || mps[0].Slot != "mp0" ||
		mps[1].Storage != "local-lvm" || mps[1].Size.Text != "16G" || mps[1].Path != "/data" || mps[1].Slot != "mp1" {
		t.Errorf("mountpoints %+v", mps)
	}
	var listed []string
	for _, f := range imp.Report.Findings {
		if strings.HasPrefix(f.Item, "MOUNT ") && f.File == "libs/apache/container.local.env" {
			listed = append(listed, f.Item)
		}
	}
	if strings.Join(listed, ",") != "MOUNT share,MOUNT /dev/ttyUSB0,MOUNT nas:vol-1:/x" {
		t.Errorf("listed %v", listed)
	}
}

// The output may not be the monorepo (its Ansible YAML is not manifests)
// nor a folder the import reads.
func TestImportRefusesAnOutputInsideWhatItReads(t *testing.T) {
	dir := fixture(t, nil)
	for _, out := range []string{dir, filepath.Join(dir, "libs", "x"), filepath.Join(dir, "config"), filepath.Dir(dir)} {
		if err := importer.CheckOut(dir, out); err == nil {
			t.Errorf("--out %s accepted", out)
		}
	}
	if err := importer.CheckOut(dir, filepath.Join(dir, "proxmops")); err != nil {
		t.Errorf("the default output refused: %v", err)
	}
}

// An empty lib folder is most often a submodule that was not checked out:
// the report says so.
func TestImportReportsAnEmptyLibAsASubmoduleNotCheckedOut(t *testing.T) {
	dir := fixture(t, nil)
	if err := os.MkdirAll(filepath.Join(dir, "libs", "proxy"), 0o755); err != nil {
		t.Fatal(err)
	}
	imp, _ := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	for _, f := range imp.Report.Findings {
		if f.File == "libs/proxy" && strings.Contains(f.Reason, "--recurse-submodules") {
			return
		}
	}
	t.Errorf("empty lib not reported: %v", imp.Report.Findings)
}

// Each container is provisioned as its lib's pipeline configures it: the
// base role's packages and users, the lib's folder with the monorepo's
// libraries inside it, then cinc-client in local mode running the lib's
// cookbook with IP, ID and the global variables. The cookbooks are copied
// next to the manifests, where the loader reads them.
func TestImportProvisionsTheLibsCookbookWithCinc(t *testing.T) {
	dir := fixture(t, nil)
	_, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	set, err := manifest.LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	p := set.Get(manifest.KindContainer, "apache").(*manifest.Container).Spec.Provision
	if p == nil || !p.Loaded() {
		t.Fatalf("provision %+v not loaded", p)
	}
	if strings.Join(p.Packages, " ") != "sudo locales curl jq unzip vim" {
		t.Errorf("packages %v", p.Packages)
	}
	if len(p.Copy) != 2 || p.Copy[0].Source != "../cookbooks/apache" || p.Copy[0].Path != "/var/lib/proxmops/cookbooks/apache" ||
		p.Copy[1].Source != "../libraries" || p.Copy[1].Path != "/var/lib/proxmops/cookbooks/apache/libraries" {
		t.Fatalf("copy %+v", p.Copy)
	}
	var files []string
	for _, f := range p.Copy[0].Tree {
		files = append(files, f.Path)
	}
	if strings.Join(files, ",") != "recipes/default.rb" {
		t.Errorf("the lib's copy holds %v; its container*.env files are replaced by the manifest", files)
	}
	recipe, _ := os.ReadFile(filepath.Join(dir, "libs", "apache", "recipes", "default.rb"))
	if string(p.Copy[0].Tree[0].Data) != string(recipe) {
		t.Error("the copied recipe differs from the lib's")
	}
	if len(p.Copy[1].Tree) != 3 {
		t.Errorf("config/libraries copy %+v", p.Copy[1].Tree)
	}
	last := p.Commands[len(p.Commands)-1]
	want := "cd /var/lib/proxmops/cookbooks/apache && env IP=192.168.178.42 ID=142 AUTO_DEPLOY=false LIBS_BROKER_ENDPOINT=mqtt://192.168.178.109:1883 " +
		"cinc-client -z --config-option cookbook_path=/var/lib/proxmops/cookbooks -o apache"
	if last != want {
		t.Errorf("cookbook run\n%s\nwant\n%s", last, want)
	}
	if addr, port, user, _ := set.Get(manifest.KindContainer, "apache").(*manifest.Container).ProvisionTarget(); addr != "192.168.178.42" || port != 22 || user != "root" {
		t.Errorf("provisioning reaches %s:%d as %s", addr, port, user)
	}
}

// What the cookbooks ask of the control plane's Gitea is listed; a YAML
// file or a symbolic link in a cookbook stops the import (the output would
// not load).
func TestImportChecksTheCookbooks(t *testing.T) {
	dir := fixture(t, nil)
	imp, _ := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	var got []string
	for _, f := range imp.Report.Findings {
		if strings.HasPrefix(f.Item, "Env.") {
			got = append(got, f.File+" "+f.Item)
		}
	}
	if strings.Join(got, "; ") != "libs/apache/recipes/default.rb Env.get login; libs/broker/recipes/default.rb Env.set" {
		t.Errorf("cookbook findings %v", got)
	}

	dir = fixture(t, map[string]string{"libs/apache/files/default/conf.yaml": "a: 1\n"})
	if err := os.Symlink("default.rb", filepath.Join(dir, "libs", "apache", "recipes", "link.rb")); err != nil {
		t.Fatal(err)
	}
	_, err := importer.ProxmoxGitOps(dir, importer.Options{VMIDOffset: 100})
	var ie *importer.Error
	if !errors.As(err, &ie) {
		t.Fatalf("want *importer.Error, got %v", err)
	}
	for _, want := range []string{"libs/apache/files/default/conf.yaml: a YAML file", "libs/apache/recipes/link.rb: a symbolic link"} {
		if !strings.Contains(ie.Error(), want) {
			t.Errorf("errors do not say %q:\n%s", want, ie)
		}
	}
}

// A lib's metadata.rb dependencies on other libs are copied and
// provisioned with it; re-importing replaces the copies (a file removed
// from the lib is gone from the output).
func TestImportCopiesDependenciesAndReplacesOldCopies(t *testing.T) {
	dir := fixture(t, map[string]string{
		"libs/apache/metadata.rb":      "name 'apache'\ndepends 'share'\ndepends 'config'\n",
		"libs/apache/recipes/extra.rb": "log 'x'\n",
	})
	imp, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	set, err := manifest.LoadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	p := set.Get(manifest.KindContainer, "apache").(*manifest.Container).Spec.Provision
	var paths []string
	for _, c := range p.Copy {
		paths = append(paths, c.Source+"="+c.Path)
	}
	if strings.Join(paths, " ") != "../cookbooks/apache=/var/lib/proxmops/cookbooks/apache ../libraries=/var/lib/proxmops/cookbooks/apache/libraries "+
		"../cookbooks/share=/var/lib/proxmops/cookbooks/share ../libraries=/var/lib/proxmops/cookbooks/share/libraries" {
		t.Errorf("copies %v", paths)
	}
	found := false
	for _, f := range imp.Report.Findings {
		found = found || (f.File == "libs/apache/metadata.rb" && f.Item == "depends 'config'")
	}
	if !found {
		t.Errorf("the dependency on the control plane's cookbook is not listed: %v", imp.Report.Findings)
	}
	if err := os.Remove(filepath.Join(dir, "libs", "apache", "recipes", "extra.rb")); err != nil {
		t.Fatal(err)
	}
	importFixture(t, dir, importer.Options{VMIDOffset: 100})
	if _, err := os.Stat(filepath.Join(out, "cookbooks", "apache", "recipes", "extra.rb")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a file removed from the lib stays in the output: %v", err)
	}
}

// A lib removed from the monorepo loses its manifest and cookbook copy at
// the next import (the report says so); files of the user's in the output
// folder are left alone.
func TestImportAgainRemovesWhatItWroteForAGoneLib(t *testing.T) {
	dir := fixture(t, nil)
	_, out := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	mine := filepath.Join(out, "containers", "extra.yaml")
	own := "apiVersion: proxmops.dev/v1\nkind: ContainerTemplate\nmetadata: {name: alpine, node: pve1}\nspec: {appliance: alpine-3.22-default_20250617_amd64.tar.xz, storage: local}\n"
	if err := os.WriteFile(mine, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "libs", "broker")); err != nil {
		t.Fatal(err)
	}
	imp, _ := importFixture(t, dir, importer.Options{VMIDOffset: 100})
	for _, gone := range []string{"containers/broker.yaml", "cookbooks/broker"} {
		if _, err := os.Stat(filepath.Join(out, gone)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s is still there: %v", gone, err)
		}
	}
	if strings.Join(imp.Report.Removed, ",") != "containers/broker.yaml,cookbooks/broker/" {
		t.Errorf("removed %v", imp.Report.Removed)
	}
	if data, err := os.ReadFile(mine); err != nil || string(data) != own {
		t.Errorf("the user's manifest was touched: %v", err)
	}
	report, _ := os.ReadFile(filepath.Join(out, importer.ReportFile))
	if !strings.Contains(string(report), "- `containers/broker.yaml`") {
		t.Errorf("the report does not list the removal:\n%s", report)
	}
}
