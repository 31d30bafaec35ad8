package manifest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// loadWithin loads dir in a goroutine and fails the test if it does not
// return before the deadline: a hang guard, not a speed assertion (the
// deadline is far above the milliseconds these take).
func loadWithin(t *testing.T, dir string) (*Set, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type result struct {
		set *Set
		err error
	}
	done := make(chan result, 1)
	go func() {
		s, err := LoadDir(dir)
		done <- result{s, err}
	}()
	select {
	case r := <-done:
		return r.set, r.err
	case <-ctx.Done():
		t.Fatalf("loading %s did not finish: %v", dir, ctx.Err())
		return nil, nil
	}
}

func billionLaughs() string {
	var b strings.Builder
	b.WriteString("apiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: lol, node: pve1}\nspec:\n  vmid: 100\n")
	b.WriteString("  a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i < 10; i++ {
		fmt.Fprintf(&b, "  a%d: &a%d [*a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d, *a%d]\n", i, i, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1, i-1)
	}
	return b.String()
}

func TestHostileInput(t *testing.T) {
	deepBlock := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(strings.Repeat(" ", i) + "k:\n")
		}
		return b.String()
	}
	manyKeys := func() string {
		var b strings.Builder
		for i := 0; b.Len() < MaxFileSize-100; i++ {
			fmt.Fprintf(&b, "k%d: v\n", i)
		}
		return b.String()
	}
	tests := []struct {
		name    string
		content string
		want    string
	}{
		{"alias bomb", billionLaughs(), "expands to more than 20000 nodes"},
		{"file over 1 MiB", "a: " + strings.Repeat("x", MaxFileSize) + "\n", "larger than the 1048576-byte limit"},
		{"deep flow nesting", strings.Repeat("[", 100000) + strings.Repeat("]", 100000), "nesting deeper than 32 levels"},
		{"deep flow mappings", strings.Repeat("{a: ", 50000) + "1" + strings.Repeat("}", 50000), "nesting deeper than 32 levels"},
		{"deep block nesting", deepBlock(300), "nesting deeper than 32 levels"},
		{"deep sequence on one line", strings.Repeat("- ", 100000) + "x\n", "nesting deeper than 32 levels"},
		{"many keys in one document", manyKeys(), "larger than the 262144-byte limit for one manifest"},
		{"many keys in a small document", manyKeys()[:MaxDocumentSize-1024], "more than 5000 YAML tokens"},
		{"many documents at the token limit", manyMaxTokenDocuments(), "missing required field `kind`"},
		{"binary", "\x7fELF\x02\x01\x01\x00\x00\x00", "binary file: contains a NUL byte"},
		{"not UTF-8", "kind: Virtual\xffMachine\n", "a.yaml:1:14: not valid UTF-8 text"},
		{"unterminated quote", "kind: \"VirtualMachine\n", "YAML syntax error"},
		{"tab indentation", "kind: Iso\nspec:\n\tstorage: local\n", "YAML syntax error"},
		{"unsupported tag", "kind: !!binary aGVsbG8=\n", "unsupported YAML tag !!binary"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := writeTree(t, map[string]string{"a.yaml": tt.content})
			_, err := loadWithin(t, dir)
			var list ErrorList
			if !errors.As(err, &list) {
				t.Fatalf("want an ErrorList, got %v", err)
			}
			if !strings.Contains(list.Error(), tt.want) {
				t.Errorf("want %q in:\n%.2000s", tt.want, list.Error())
			}
		})
	}
}

func TestManySmallDocumentsFinish(t *testing.T) {
	var b strings.Builder
	for b.Len() < MaxFileSize/4 {
		b.WriteString("---\nkind: Nope\n")
	}
	_, err := loadWithin(t, writeTree(t, map[string]string{"a.yaml": b.String()}))
	var list ErrorList
	if !errors.As(err, &list) || len(list) < 10000 || !strings.Contains(list[0].Message, "unknown kind") {
		t.Fatalf("want one error per document, got %d: %.300v", len(list), err)
	}
}

func TestAliasesWithinBudgetWork(t *testing.T) {
	doc := `apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: vm-a, node: pve1}
spec:
  vmid: 100
  disks:
    - &disk {storage: local-lvm, size: 10G, discard: true}
    - <<: *disk
      size: 20G
---
apiVersion: proxmops.dev/v1
kind: VirtualMachine
metadata: {name: vm-b, node: pve1}
spec:
  vmid: 101
  disks: [{storage: local-lvm, size: 10G}]
`
	set, err := loadWithin(t, writeTree(t, map[string]string{"a.yaml": doc}))
	if err != nil {
		t.Fatal(err)
	}
	d := set.Get(KindVirtualMachine, "vm-a").(*VirtualMachine).Spec.Disks
	if len(d) != 2 || d[1].Size.Text != "20G" || !d[1].Discard || d[1].Storage != "local-lvm" || d[1].Slot != "scsi1" {
		t.Errorf("merge key result: %+v", d)
	}
}

func TestSymlinks(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.yaml": "kind: Nope\n", "dir/x.yaml": "kind: Nope\n"})
	dir := writeTree(t, map[string]string{"real/iso.yaml": `apiVersion: proxmops.dev/v1
kind: Iso
metadata: {name: d, node: pve1}
spec: {source: "https://example.org/d.iso", storage: local}
`})
	for _, l := range []struct{ target, name string }{
		{filepath.Join(outside, "secret.yaml"), "abs.yaml"},
		{"../../" + filepath.Base(outside) + "/secret.yaml", "rel.yaml"},
		{filepath.Join(outside, "dir"), "linkdir"},
		{"real/iso.yaml", "inside.yaml"},
		{"real", "insidedir"},
	} {
		if err := os.Symlink(l.target, filepath.Join(dir, l.name)); err != nil {
			t.Skipf("symlinks not supported: %v", err)
		}
	}
	set, err := loadWithin(t, dir)
	var list ErrorList
	if !errors.As(err, &list) {
		t.Fatalf("want errors for links leaving the tree, got %v", err)
	}
	if len(list) != 3 {
		t.Errorf("want 3 errors (abs.yaml, linkdir, rel.yaml), got:\n%v", list)
	}
	for _, e := range list {
		if !strings.Contains(e.Message, "leaves the source tree; not followed") {
			t.Errorf("unexpected error %v", e)
		}
	}
	if len(set.Resources) != 1 || set.Resources[0].Source().File != "real/iso.yaml" {
		t.Errorf("links inside the tree must not load their target twice: %d resources", len(set.Resources))
	}
}

func TestEmptyAndOddTrees(t *testing.T) {
	set, err := loadWithin(t, t.TempDir())
	if err != nil || len(set.Resources) != 0 || set.Files != 0 {
		t.Fatalf("empty tree: %v, %+v", err, set)
	}
	dir := writeTree(t, map[string]string{
		"empty.yaml":             "",
		"comments.yml":           "# nothing here\n---\n# still nothing\n",
		"notes.txt":              "kind: ignored, not YAML by name\n",
		".hidden.yaml":           "kind: Nope\n",
		".git/config.yaml":       "kind: Nope\n",
		"sub/.github/ci.yaml":    "kind: Nope\n",
		"sub/dir.yaml/x.txt":     "a directory named like a manifest",
		"deeper/a/b/c/zone.yaml": "apiVersion: proxmops.dev/v1\nkind: SdnZone\nmetadata: {name: lab}\nspec: {type: simple}\n",
	})
	set, err = loadWithin(t, dir)
	if err != nil {
		t.Fatalf("odd tree: %v", err)
	}
	if len(set.Resources) != 1 || set.Files != 3 {
		t.Errorf("want 1 resource from 3 manifest files, got %d from %d", len(set.Resources), set.Files)
	}
	if _, err := LoadDir(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing directory must be an error")
	}
}

// manyMaxTokenDocuments is a file of about 1 MiB of documents just under
// MaxDocumentTokens each (BenchmarkHostileFile).
func manyMaxTokenDocuments() string {
	doc := "---\n" + strings.Repeat("a: b\n", (MaxDocumentTokens-10)/3)
	return strings.Repeat(doc, MaxFileSize/len(doc))
}

// TestLargeDocumentsAreEachRead checks that a file of documents just under
// the token limit is read to its end, one error per document: the parser is
// linear in its input, so no file needs to be left half read.
func TestLargeDocumentsAreEachRead(t *testing.T) {
	data := manyMaxTokenDocuments()
	docs := strings.Count(data, "---\n")
	docLines := strings.Count(data, "\n") / docs
	_, errs := ParseFile("a.yaml", []byte(data))
	errs.Sort()
	if len(errs) != docs {
		t.Fatalf("want one error for each of %d documents, got %d:\n%.2000v", docs, len(errs), errs)
	}
	for i, e := range errs {
		if !strings.Contains(e.Message, "missing required field `kind`") || e.Line != i*docLines+2 {
			t.Fatalf("document %d: want its missing kind at line %d, got %v", i, i*docLines+2, e)
		}
	}
}

// TestAnchoredManifestsInOneFile checks that hundreds of manifests using
// anchors and merge keys load from one file.
func TestAnchoredManifestsInOneFile(t *testing.T) {
	var b strings.Builder
	for i := range 400 {
		fmt.Fprintf(&b, "---\napiVersion: proxmops.dev/v1\nkind: VirtualMachine\nmetadata: {name: vm-%d, node: pve1}\nspec:\n  vmid: %d\n  disks:\n    - &d {storage: local-lvm, size: 10G}\n    - <<: *d\n      size: 20G\n", i, 1000+i)
	}
	set, err := loadWithin(t, writeTree(t, map[string]string{"a.yaml": b.String()}))
	if err != nil {
		t.Fatalf("400 anchored manifests in one file: %v", err)
	}
	if len(set.Resources) != 400 {
		t.Fatalf("got %d resources, want 400", len(set.Resources))
	}
}
