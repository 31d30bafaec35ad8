package config

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with the configuration. File, Line and
// Column are set when it comes from the config file.
type Problem struct {
	File    string
	Line    int
	Column  int
	Key     string // "section.key" when known
	Message string
}

func (p Problem) String() string {
	var b strings.Builder
	switch {
	case p.File != "" && p.Line > 0:
		fmt.Fprintf(&b, "%s:%d:%d: ", p.File, p.Line, p.Column)
	case p.File != "":
		fmt.Fprintf(&b, "%s: ", p.File)
	}
	if p.Key != "" {
		b.WriteString(p.Key)
		b.WriteString(": ")
	}
	b.WriteString(p.Message)
	return b.String()
}

// Error lists every problem found, not just the first.
type Error struct {
	Problems []Problem
}

func (e *Error) Error() string {
	if len(e.Problems) == 1 {
		return "invalid configuration: " + e.Problems[0].String()
	}
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = "  " + p.String()
	}
	return fmt.Sprintf("invalid configuration (%d problems):\n%s", len(e.Problems), strings.Join(lines, "\n"))
}

// problems collects Problems; err returns nil when there are none.
type problems []Problem

func (ps *problems) add(p Problem) { *ps = append(*ps, p) }

func (ps *problems) addf(key, format string, args ...any) {
	ps.add(Problem{Key: key, Message: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}
