package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The whole manifests the docs show (a YAML block with an apiVersion) are
// what a newcomer copies first: each passes `proxmops validate` on its own.
// The skeleton with `spec: {}` only shows the common fields.
func TestDocsManifestExamplesValidate(t *testing.T) {
	checked := 0
	for path, text := range docTexts(t) {
		for _, b := range yamlBlocks(text) {
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

// placeholderTests are test names the docs use as placeholders.
var placeholderTests = map[string]bool{"TestName": true}

// The tests, benchmarks and fuzz targets the docs name (to run, or as the
// proof of a claim) exist.
func TestDocsNameOnlyTestsThatExist(t *testing.T) {
	var code strings.Builder
	err := filepath.WalkDir(filepath.Join("..", ".."), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git") {
			return filepath.SkipDir
		}
		if strings.HasSuffix(p, "_test.go") {
			code.WriteString(readText(t, p))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz)[A-Z0-9]\w*)\(|"((?:Test|Benchmark|Fuzz)[A-Z0-9]\w*)"`).FindAllStringSubmatch(code.String(), -1) {
		defined[m[1]+m[2]] = true
	}
	nameRE := regexp.MustCompile(`\b((?:Test|Benchmark|Fuzz)[A-Z0-9]\w*)`)
	checked := 0
	for path, text := range docTexts(t) {
		for i, line := range strings.Split(text, "\n") {
			for _, m := range nameRE.FindAllStringSubmatch(line, -1) {
				checked++
				if !defined[m[1]] && !placeholderTests[m[1]] {
					t.Errorf("%s:%d: %s: no such test, benchmark or fuzz target", path, i+1, m[1])
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d test names found in the docs: the scanner is broken", checked)
	}
}

var (
	mdLinkRE    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeadingRE = regexp.MustCompile(`^#+\s+(.*)$`)
	anchorDrop  = regexp.MustCompile(`[^\w\- ]`)
)

// anchorsOf returns the anchors GitHub makes of a Markdown file's headings.
func anchorsOf(t *testing.T, path string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	fenced := false
	for _, line := range strings.Split(readText(t, path), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
		}
		if m := mdHeadingRE.FindStringSubmatch(line); m != nil && !fenced {
			h := anchorDrop.ReplaceAllString(strings.ToLower(strings.TrimSpace(m[1])), "")
			out[strings.ReplaceAll(h, " ", "-")] = true
		}
	}
	return out
}

// Relative links in the docs (the README's to the token's pveum commands
// among them) reach a file, and a heading where they name one.
func TestDocsLinksReachTheirFilesAndHeadings(t *testing.T) {
	checked := 0
	for path, text := range docTexts(t) {
		fenced := false
		for i, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fenced = !fenced
			}
			if fenced {
				continue
			}
			for _, m := range mdLinkRE.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				file, anchor, _ := strings.Cut(target, "#")
				resolved := path
				if file != "" {
					resolved = filepath.Join(filepath.Dir(path), file)
				}
				if _, err := os.Stat(resolved); err != nil {
					t.Errorf("%s:%d: link %s: %v", path, i+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(resolved, ".md") && !anchorsOf(t, resolved)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no such heading", path, i+1, target, resolved)
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d links found: the scanner is broken", checked)
	}
}
