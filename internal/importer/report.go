package importer

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Finding is something of the monorepo the import did not map (or, in an
// Error, could not accept). File is relative to the monorepo.
type Finding struct {
	File   string
	Line   int
	Item   string // the key, entry or file concerned; "" for the whole file
	Reason string
}

func (f Finding) String() string {
	var b strings.Builder
	b.WriteString(f.File)
	if f.Line > 0 {
		fmt.Fprintf(&b, ":%d", f.Line)
	}
	if f.Item != "" {
		fmt.Fprintf(&b, ": %s", f.Item)
	}
	fmt.Fprintf(&b, ": %s", f.Reason)
	return b.String()
}

// Error is an import that wrote nothing, with every problem found.
type Error struct {
	Problems []Finding
}

func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	return strings.Join(lines, "\n")
}

// Report is what an import read, wrote and left out.
type Report struct {
	Source   string             // the monorepo directory
	Read     []string           // files read, relative to Source
	Settings map[string]Setting // PROXMOX_* values used, with their origin
	Env      map[string]string  // global variables passed to the cookbooks
	Written  []string           // files written, relative to the output directory
	Removed  []string           // what an earlier import wrote for libs that are gone
	Findings []Finding          // everything not mapped
}

func (r *Report) add(f Finding) { r.Findings = append(r.Findings, f) }

func (r *Report) sortFindings() { sortFindings(r.Findings) }

// sortFindings orders findings by file, then line.
func sortFindings(fs []Finding) {
	sort.SliceStable(fs, func(i, j int) bool {
		a, b := fs[i], fs[j]
		if a.File != b.File {
			return a.File < b.File
		}
		return a.Line < b.Line
	})
}

// WriteFindings writes one line per finding (for stderr).
func (r *Report) WriteFindings(w io.Writer) {
	for _, f := range r.Findings {
		fmt.Fprintf(w, "not mapped: %s\n", f)
	}
}

// Markdown renders the report file written next to the manifests.
func (r *Report) Markdown() string {
	var b strings.Builder
	b.WriteString("# Import from Proxmox-GitOps\n\n")
	b.WriteString("Written by `proxmops import proxmox-gitops`. Re-running the import rewrites the\n")
	b.WriteString("manifests, the copied cookbooks and this report.\n\n")
	b.WriteString("## Read\n\n")
	for _, f := range r.Read {
		fmt.Fprintf(&b, "- `%s`\n", f)
	}
	b.WriteString("\n## Settings used\n\n| Variable | Value | From |\n|---|---|---|\n")
	for _, k := range slices.Sorted(maps.Keys(r.Settings)) {
		fmt.Fprintf(&b, "| %s | `%s` | %s |\n", k, r.Settings[k].Value, r.Settings[k].From)
	}
	if len(r.Env) > 0 {
		b.WriteString("\n## Global variables passed to every cookbook run\n\n")
		for _, k := range slices.Sorted(maps.Keys(r.Env)) {
			fmt.Fprintf(&b, "- `%s=%s`\n", k, r.Env[k])
		}
	}
	b.WriteString("\n## Written\n\n")
	for _, f := range r.Written {
		fmt.Fprintf(&b, "- `%s`\n", f)
	}
	if len(r.Removed) > 0 {
		b.WriteString("\n## Removed (written by an earlier import for libs that are gone)\n\n")
		for _, f := range r.Removed {
			fmt.Fprintf(&b, "- `%s`\n", f)
		}
	}
	b.WriteString("\n## Not mapped\n\n")
	if len(r.Findings) == 0 {
		b.WriteString("Nothing: every setting was mapped.\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "- %s\n", f)
	}
	return b.String()
}
