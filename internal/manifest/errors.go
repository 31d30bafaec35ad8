package manifest

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem found in the manifests, located as precisely as the
// input allows: File is relative to the loaded root (slash-separated), Line
// and Column are 1-based (0 when unknown), Path is the field path inside the
// document (e.g. "spec.disks[0].size").
type Error struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	Column  int    `json:"column"`
	Path    string `json:"path"`
	Message string `json:"message"`
}

// Error formats the error as "file:line:col: path: message", the form
// compilers use, so editors can jump to it.
func (e Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ":%d", e.Column)
		}
	}
	b.WriteString(": ")
	if e.Path != "" {
		b.WriteString(e.Path)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// ErrorList is every error found in one load, sorted by file, line and column.
type ErrorList []Error

// Error joins all errors, one per line.
func (l ErrorList) Error() string {
	parts := make([]string, len(l))
	for i, e := range l {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Sort orders the list by file, line, column, path and message.
func (l ErrorList) Sort() {
	slices.SortStableFunc(l, func(a, b Error) int {
		return cmp.Or(
			cmp.Compare(a.File, b.File),
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Column, b.Column),
			cmp.Compare(a.Path, b.Path),
			cmp.Compare(a.Message, b.Message),
		)
	})
}

// Err returns the sorted list as an error, or nil when it is empty.
func (l ErrorList) Err() error {
	if len(l) == 0 {
		return nil
	}
	l.Sort()
	return l
}
