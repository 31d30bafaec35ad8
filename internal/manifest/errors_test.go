package manifest

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeTree writes files (slash paths relative to a temp dir) and returns the dir.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func loadErrors(t *testing.T, files map[string]string) ErrorList {
	t.Helper()
	_, err := LoadDir(writeTree(t, files))
	if err == nil {
		return nil
	}
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("error is not an ErrorList: %v", err)
	}
	return list
}

const vmHead = "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata:\n  name: vm-a\n  node: pve1\nspec:\n"

// validationCase is one manifest and what loading it says: want is ""
// when it is valid, else a substring of its errors.
type validationCase struct{ name, doc, want string }

// namedDoc is a manifest of kind named name, its spec the block lines spec
// (indented two spaces).
func namedDoc(kind Kind, name, spec string) string {
	return "apiVersion: proxmops.dev/v1\nkind: " + string(kind) + "\nmetadata:\n  name: " + name + "\nspec:\n" + spec
}

// flowDoc is a manifest of kind with its metadata and spec in flow style:
// meta and spec are what stands inside their braces.
func flowDoc(kind Kind, meta, spec string) string {
	return "apiVersion: proxmops.dev/v1\nkind: " + string(kind) + "\nmetadata: {" + meta + "}\nspec: {" + spec + "}\n"
}

// checkValidation loads each case's manifest as a.yaml, beside the files
// of others, and checks its errors.
func checkValidation(t *testing.T, tests []validationCase, others map[string]string) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := map[string]string{"a.yaml": tt.doc}
			maps.Copy(files, others)
			wantErrors(t, loadErrors(t, files), tt.want)
		})
	}
}

// wantErrors checks a load's errors: none when want is "", else one with
// want in it.
func wantErrors(t *testing.T, errs ErrorList, want string) {
	t.Helper()
	switch {
	case want == "" && len(errs) > 0:
		t.Fatalf("valid manifest refused: %v", errs)
	case want != "" && (len(errs) == 0 || !strings.Contains(errs.Error(), want)):
		t.Fatalf("errors %v, want one with %q", errs, want)
	}
}

func TestErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		doc  string
		want []string // each a substring of one error's full text, in order
	}{
		{"misspelt field with position", vmHead + "  vmid: 100\n  coers: 2\n",
			[]string{"a.yaml:8:3: spec.coers: unknown field `coers`, did you mean `cores`?"}},
		{"misspelt enum", vmHead + "  vmid: 100\n  state: runing\n",
			[]string{"a.yaml:8:10: spec.state: \"runing\" is not one of running, stopped, did you mean `running`?"}},
		{"misspelt nested field", vmHead + "  vmid: 100\n  disks:\n    - storage: local-lvm\n      szie: 20G\n",
			[]string{"spec.disks[0].szie: unknown field `szie`, did you mean `size`?"}},
		{"duplicate key", vmHead + "  vmid: 100\n  vmid: 101\n",
			[]string{"a.yaml:8:3: spec.vmid: duplicate key \"vmid\" (first at line 7)"}},
		{"every error reported", vmHead + "  vmid: 5\n  memory: 1\n  cpus: 2\n",
			[]string{"spec.vmid: 5 is below the minimum 100", "spec.memory: 1 is below the minimum 16", "unknown field `cpus`, did you mean `cpu`?"}},
		{"yes is not a boolean", vmHead + "  vmid: 100\n  onboot: yes\n",
			[]string{"expected true or false, got string \"yes\" (write true)"}},
		{"number where a string belongs", vmHead + "  vmid: 100\n  cpu: 1\n",
			[]string{"spec.cpu: expected a string, got integer 1 (quote it: \"1\")"}},
		{"duplicate slots", vmHead + "  vmid: 100\n  disks:\n    - {slot: scsi1, storage: local-lvm, size: 1G}\n    - {slot: scsi1, storage: local-lvm, size: 1G}\n",
			[]string{"spec.disks[1].slot: slot scsi1 is already used by spec.disks[0]"}},
		{"blank disk needs a size", vmHead + "  vmid: 100\n  disks:\n    - storage: local-lvm\n",
			[]string{"spec.disks[0]: missing required field `size`"}},
		{"ip shorthand", vmHead + "  vmid: 100\n  fromTemplate: t\n  cloudInit:\n    ip: \"ip=10.0.0.5/24,gateway=10.0.0.1\"\n",
			[]string{"unknown key \"gateway\""}},
		{"gateway needs a static address", vmHead + "  vmid: 100\n  fromTemplate: t\n  cloudInit:\n    ipConfigs: [{ip: dhcp, gw: 10.0.0.1}]\n",
			[]string{"a gateway needs a static address"}},
		{"image source neither URL nor volume", vmHead + "  vmid: 100\n  image: {source: debian.qcow2}\n",
			[]string{"neither an http(s) URL nor a volume ID"}},
		{"compressed image", vmHead + "  vmid: 100\n  image: {source: https://example.org/noble.img.xz}\n",
			[]string{"spec.image.source: the image is compressed (.xz): Proxmox stores import images as downloaded"}},
		{"image format misspelt", vmHead + "  vmid: 100\n  image: {source: https://example.org/noble.img, format: qcwo2}\n",
			[]string{"spec.image.format: \"qcwo2\" is not one of qcow2, raw, vmdk"}},
		{"file name against the format", vmHead + "  vmid: 100\n  image: {source: https://example.org/a.img, filename: a.qcow2, format: raw}\n",
			[]string{"spec.image.filename: \"a.qcow2\" names a qcow2 image but image.format is raw"}},
		{"format of a volume", vmHead + "  vmid: 100\n  image: {source: \"local:import/a.qcow2\", format: raw}\n",
			[]string{"spec.image.format: format applies only to an image downloaded from a URL"}},
		{"checksum length", "apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: d, node: pve1}\nspec:\n  source: https://example.org/d.iso\n  storage: local\n  checksum: {algo: sha256, value: abcd}\n",
			[]string{"a sha256 checksum has 64 hex digits, this one has 4"}},
		{"spec.node differs", "apiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: d, node: pve1}\nspec:\n  source: https://example.org/d.iso\n  node: pve2\n  storage: local\n",
			[]string{"spec.node \"pve2\" differs from metadata.node \"pve1\""}},
		{"not a mapping", "- a\n- b\n", []string{"a.yaml:1:1: a manifest must be a mapping"}},
		{"syntax error", "kind: [VirtualMachine\n", []string{"a.yaml:1:7: YAML syntax error"}},
		{"unterminated quote", "kind: \"VirtualMachine\n", []string{"a.yaml:1:7: YAML syntax error"}},
		{"unclosed flow list", vmHead + "  vmid: 100\n  net: [{bridge: vmbr0}\n  cores: 2\n", []string{"a.yaml:8:8: YAML syntax error"}},
		{"unclosed flow mapping", vmHead + "  vmid: 100\n  cores: {a: 1\n", []string{"a.yaml:8:10: YAML syntax error"}},
		{"list item among keys", vmHead + "  vmid: 100\n  - cores: 2\n", []string{"a.yaml:8:3: YAML syntax error"}},
		{"over-indented key", vmHead + "  vmid: 100\n  cores: 2\n   memory: 3\n", []string{"a.yaml:9:10: YAML syntax error"}},
		{"tab indentation", "kind: Iso\nspec:\n\tstorage: local\n", []string{"a.yaml:3:1: YAML syntax error"}},
		{"tagged value points past its tag", vmHead + "  vmid: !!str 100\n", []string{"a.yaml:7:15: spec.vmid: expected an integer, got string \"100\""}},
		{"anchored value points past its anchor", vmHead + "  vmid: &v abc\n", []string{"a.yaml:7:12: spec.vmid: expected an integer, got string \"abc\""}},
		{"alias to an earlier document", "a: &x local\n---\napiVersion: proxmops.dev/v1\nkind: Iso\nmetadata: {name: d, node: pve1}\nspec: {source: \"https://example.org/d.iso\", storage: *x}\n",
			[]string{"a.yaml:6:54: alias *x names no anchor defined before it"}},
		{"content after an end marker", vmHead + "  vmid: 100\n...\nkind: x\n", []string{"a.yaml:9:1: content after a document end marker"}},
		{"missing kind", "apiVersion: proxmops.dev/v1\nmetadata: {name: x}\n", []string{"missing required field `kind`"}},
		{"null value", vmHead + "  vmid: 100\n  cores:\n", []string{"spec.cores: no value given"}},
		{"undefined alias", vmHead + "  vmid: *nope\n", []string{"alias *nope names no anchor"}},
		{"unknown annotation", "apiVersion: proxmops.dev/v1\nkind: SdnZone\nmetadata:\n  name: lab\n  annotations: {proxmops.dev/synk: auto}\nspec: {type: simple}\n",
			[]string{"unknown annotation \"proxmops.dev/synk\", did you mean `proxmops.dev/sync`?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := loadErrors(t, map[string]string{"a.yaml": tt.doc})
			if len(errs) < len(tt.want) {
				t.Fatalf("got %d errors, want at least %d:\n%v", len(errs), len(tt.want), errs)
			}
			text := errs.Error()
			last := -1
			for _, w := range tt.want {
				i := strings.Index(text, w)
				if i < 0 {
					t.Fatalf("missing %q in:\n%s", w, text)
				}
				if i < last {
					t.Errorf("errors not in order: %q", w)
				}
				last = i
			}
		})
	}
}

func TestCrossDocumentErrors(t *testing.T) {
	vm := func(name string, vmid int, extra string) string {
		return "apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: " + name + ", node: pve1}\nspec:\n  vmid: " + itoa(vmid) + "\n" + extra
	}
	ct := "apiVersion: proxmops.dev/v1\nkind: Container\nmetadata: {name: ct, node: pve1}\nspec:\n  vmid: 300\n  template: debian-12-standard\n  rootfs: {storage: local-lvm, size: 8G}\n"
	tpl := "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata: {name: tpl, node: pve2}\nspec:\n  vmid: 9000\n  image: {source: \"local:import/d.qcow2\"}\n"
	errs := loadErrors(t, map[string]string{
		"a/one.yaml":   vm("app", 300, ""),
		"b/two.yaml":   vm("app", 301, "") + "---\n" + vm("linked", 302, "  fromTemplate: {name: tpl, linked: true}\n"),
		"c/three.yaml": ct + "---\n" + tpl,
	})
	text := errs.Error()
	for _, w := range []string{
		"b/two.yaml:3:18: metadata.name: VirtualMachine \"app\" is already declared at a/one.yaml:1",
		"c/three.yaml:5:9: spec.vmid: VMID 300 is already used by VirtualMachine \"app\" at a/one.yaml:1",
		"b/two.yaml:12:17: spec.fromTemplate: a linked clone must be on its template's node (pve2), not pve1",
	} {
		if !strings.Contains(text, w) {
			t.Errorf("missing %q in:\n%s", w, text)
		}
	}
	// Sorted by file then line.
	for i := 1; i < len(errs); i++ {
		a, b := errs[i-1], errs[i]
		if a.File > b.File || (a.File == b.File && a.Line > b.Line) {
			t.Errorf("not sorted: %v before %v", a, b)
		}
	}
}

func TestVnetTagByZoneType(t *testing.T) {
	errs := loadErrors(t, map[string]string{"sdn.yaml": `apiVersion: proxmops.dev/v1
kind: SdnZone
metadata: {name: vlans}
spec: {type: vlan, bridge: vmbr1}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: novlan}
spec: {zone: vlans}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: toobig}
spec: {zone: vlans, tag: 5000}
---
apiVersion: proxmops.dev/v1
kind: SdnVnet
metadata: {name: ext}
spec: {zone: other, tag: 5000}
`})
	text := errs.Error()
	if !strings.Contains(text, "sdn.yaml:9:7: spec: vnets of the vlan zone vlans need a tag") ||
		!strings.Contains(text, "sdn.yaml:14:26: spec.tag: a VLAN tag is 1-4094") || len(errs) != 2 {
		t.Errorf("got:\n%s", text)
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Repeat(" ", 0) + func() string { return fmtInt(i) }())
}

func fmtInt(i int) string {
	if i == 0 {
		return "0"
	}
	var b []byte
	for i > 0 {
		b = append([]byte{byte('0' + i%10)}, b...)
		i /= 10
	}
	return string(b)
}

// TestLineBreakStyles checks that CR LF and lone CR line breaks count as
// lines everywhere, as YAML counts them: the same manifest loads the same and
// its errors name the same lines whatever the line breaks.
func TestLineBreakStyles(t *testing.T) {
	doc := vmHead + "  vmid: 100\n  coers: 2\n---\nkind: Nope\n"
	want := []string{
		"a.yaml:8:3: spec.coers: unknown field `coers`, did you mean `cores`?",
		"a.yaml:10:7: kind: unknown kind \"Nope\"",
	}
	for name, lb := range map[string]string{"LF": "\n", "CR LF": "\r\n", "CR": "\r"} {
		t.Run(name, func(t *testing.T) {
			list := loadErrors(t, map[string]string{"a.yaml": strings.ReplaceAll(doc, "\n", lb)})
			if len(list) != len(want) {
				t.Fatalf("want %d errors, got:\n%v", len(want), list)
			}
			for i, w := range want {
				if !strings.HasPrefix(list[i].Error(), w) {
					t.Errorf("error %d = %q, want prefix %q", i, list[i].Error(), w)
				}
			}
		})
	}
}
