package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The whole manifests the docs show (a YAML block with an apiVersion) are
// what a newcomer copies first: each passes `proxmops validate` on its own.
// The skeleton with `spec: {}` only shows the common fields.
func TestDocsManifestExamplesValidate(t *testing.T) {
	checked := 0
	for _, path := range docPaths(t) {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range yamlBlocks(string(data)) {
			if !strings.Contains(b.text, "apiVersion: proxmops.dev/v1") || strings.Contains(b.text, "\nspec: {}") {
				continue
			}
			checked++
			file := filepath.Join(t.TempDir(), "manifest.yaml")
			if err := os.WriteFile(file, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
			if code, out, errs := runCLI(t, "validate", file); code != 0 {
				t.Errorf("%s:%d: the example does not validate:\n%s%s", path, b.line, out, errs)
			}
		}
	}
	if checked < 5 {
		t.Fatalf("only %d manifests found in the docs: the scanner is broken", checked)
	}
}

type docBlock struct {
	line int // of the block's first line
	text string
}

// yamlBlocks returns the fenced yaml blocks of a Markdown text.
func yamlBlocks(text string) []docBlock {
	var out []docBlock
	var cur *docBlock
	for i, line := range strings.Split(text, "\n") {
		fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```")
		switch {
		case ok && cur == nil && (fence == "yaml" || fence == "yml"):
			cur = &docBlock{line: i + 2}
		case ok && cur != nil:
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
	}
	return out
}
