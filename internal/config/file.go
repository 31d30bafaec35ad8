package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"io"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// maxFileSize bounds the config file; a real one is a few hundred bytes.
const maxFileSize = 1 << 20

// fileLayer decodes a config file onto c. It walks the YAML syntax tree
// itself, rather than unmarshalling, so every problem carries a line and
// column, every problem is reported, and ${VAR} expansion happens on values
// only (never on keys or YAML syntax).
type fileLayer struct {
	name     string
	lookup   func(string) (string, bool)
	probs    problems
	warnings []string
	set      map[string]bool // keys the file sets
}

func (l *fileLayer) problem(n *yaml.Node, keyPath, format string, args ...any) {
	p := Problem{File: l.name, Key: keyPath, Message: fmt.Sprintf(format, args...)}
	if n != nil {
		p.Line, p.Column = n.Line, n.Column
	}
	l.probs.add(p)
}

func (l *fileLayer) apply(c *Config, data []byte) {
	l.set = map[string]bool{}
	if len(data) > maxFileSize {
		l.problem(nil, "", "file is %d bytes; a config file may be at most %d", len(data), maxFileSize)
		return
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var bodies []*yaml.Node
	for {
		var doc yaml.Node
		if err := dec.Decode(&doc); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			l.syntaxProblem(err)
			return
		}
		if len(doc.Content) > 0 && !isNull(doc.Content[0]) {
			bodies = append(bodies, doc.Content[0])
		}
	}
	if len(bodies) == 0 {
		return // an empty file sets nothing
	}
	if len(bodies) > 1 {
		l.problem(bodies[1], "", "the config file must hold one YAML document, found %d", len(bodies))
		return
	}
	pairs, ok := l.mapping(bodies[0], "")
	if !ok {
		return
	}
	for _, mv := range pairs {
		section, ktk := mv.Key.Value, mv.Key
		known := false
		for _, s := range sectionNames {
			if s == section {
				known = true
			}
		}
		if !known {
			l.problem(ktk, "", "unknown section `%s`%s (sections are %s)", section, didYouMean(section, sectionNames), strings.Join(sectionNames, ", "))
			continue
		}
		switch section {
		case "clusters":
			l.clusters(c, mv.Value)
			continue
		case "notifications":
			l.notifications(c, mv.Value)
			continue
		}
		l.section(c, section, mv.Value)
	}
}

// pair is one key and its value in a mapping.
type pair struct{ Key, Value *yaml.Node }

// mapping returns the key/value pairs of a mapping node, or reports why
// the node is not one. A null node is an empty mapping. A key given twice is
// a problem (the parser accepts it).
func (l *fileLayer) mapping(n *yaml.Node, where string) ([]pair, bool) {
	switch {
	case n == nil || isNull(n):
		return nil, true
	case n.Kind == yaml.AliasNode:
		l.problem(n, where, "YAML aliases are not allowed in the config file")
		return nil, false
	case n.Kind == yaml.MappingNode:
		var pairs []pair
		first := map[string]*yaml.Node{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if f, dup := first[k.Value]; dup {
				l.problem(k, "", "YAML syntax: mapping key %q already defined at [%d:%d]", k.Value, f.Line, f.Column)
				return nil, false
			}
			first[k.Value] = k
			pairs = append(pairs, pair{k, n.Content[i+1]})
		}
		return pairs, true
	}
	if where == "" {
		l.problem(n, "", "the config file must be a mapping of sections (cluster, source, ...), found %s", nodeType(n))
	} else {
		l.problem(n, where, "expected a mapping of keys, found %s", nodeType(n))
	}
	return nil, false
}

// syntaxProblem reports the parser's error at the line it names.
func (l *fileLayer) syntaxProblem(err error) {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	p := Problem{File: l.name}
	if rest, ok := strings.CutPrefix(msg, "line "); ok {
		if i := strings.Index(rest, ": "); i > 0 {
			if n, err := strconv.Atoi(rest[:i]); err == nil {
				p.Line, p.Column, msg = n, 1, rest[i+2:]
				if strings.HasPrefix(msg, "did not find expected") {
					p.Line++ // the parser's own errors count lines from 0
				}
			}
		}
	}
	p.Message = "YAML syntax: " + msg
	l.probs.add(p)
}

// sequence is the items of a section written as a list (clusters,
// notifications); false, with a problem naming what was wanted unless the
// section is null, when it is not a list.
func (l *fileLayer) sequence(n *yaml.Node, section, want string) ([]*yaml.Node, bool) {
	switch {
	case isNull(n):
		return nil, false
	case n.Kind == yaml.SequenceNode:
		return n.Content, true
	}
	l.problem(n, section, "expected %s, found %s", want, nodeType(n))
	return nil, false
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// nodeType names a node's type in problems.
func nodeType(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "Mapping"
	case yaml.SequenceNode:
		return "Sequence"
	case yaml.AliasNode:
		return "Alias"
	}
	switch n.ShortTag() {
	case "!!null":
		return "Null"
	case "!!bool":
		return "Bool"
	case "!!int":
		return "Integer"
	case "!!float":
		return "Float"
	}
	if n.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
		return "Literal"
	}
	return "String"
}

func (l *fileLayer) section(c *Config, section string, n *yaml.Node) {
	l.group(c, section, "", n)
}

// group decodes the keys of a section, or of a group of keys inside one
// (prefix "oidc." for auth.oidc).
func (l *fileLayer) group(c *Config, section, prefix string, n *yaml.Node) {
	where := section + "." + strings.TrimSuffix(prefix, ".")
	if prefix == "" {
		where = section
	}
	pairs, ok := l.mapping(n, where)
	if !ok {
		return
	}
	var names []string
	for _, k := range keysOf(section) {
		if rest, ok := strings.CutPrefix(k.name, prefix); ok {
			first, _, _ := strings.Cut(rest, ".")
			if !slices.Contains(names, first) {
				names = append(names, first)
			}
		}
	}
	for _, mv := range pairs {
		name, ktk := mv.Key.Value, mv.Key
		path := section + "." + prefix + name
		if isGroup(path) {
			l.group(c, section, prefix+name+".", mv.Value)
			continue
		}
		k, ok := keyByPath[path]
		if !ok {
			l.problem(ktk, path, "unknown key `%s` in %s%s", name, where, didYouMean(name, names))
			continue
		}
		l.value(c, k, mv.Value)
	}
}

func (l *fileLayer) value(c *Config, k key, n *yaml.Node) {
	var text string
	switch {
	case isNull(n):
		return // "key:" with nothing leaves the default
	case n.Kind == yaml.ScalarNode:
		text = n.Value
	case n.Kind == yaml.AliasNode:
		l.problem(n, k.Path(), "YAML aliases are not allowed in the config file")
		return
	case n.Kind == yaml.SequenceNode:
		if k.typ != stringsType {
			l.problem(n, k.Path(), "expected a single value, found %s", nodeType(n))
			return
		}
		l.list(c, k, n)
		return
	default:
		l.problem(n, k.Path(), "expected a single value, found %s", nodeType(n))
		return
	}
	text, expanded, err := expandEnv(text, l.lookup)
	if err != nil {
		l.problem(n, k.Path(), "%v", err)
		return
	}
	if err := k.set(c, text); err != nil {
		l.problem(n, k.Path(), "%v", err)
		return
	}
	l.set[k.Path()] = true
	if k.secret && text != "" && !expanded {
		l.warnings = append(l.warnings, fmt.Sprintf(
			"%s:%d: %s is written inline in the config file; prefer %s or %s",
			l.name, n.Line, k.Path(), secretAlternative(k), k.EnvName()))
	}
}

// list decodes a list of strings (auth.oidc.adminGroups).
func (l *fileLayer) list(c *Config, k key, seq *yaml.Node) {
	items := []string{}
	for _, item := range seq.Content {
		if item.Kind != yaml.ScalarNode || isNull(item) || item.Style&(yaml.LiteralStyle|yaml.FoldedStyle) != 0 {
			l.problem(item, k.Path(), "expected a list of names, found %s", nodeType(item))
			return
		}
		text, _, err := expandEnv(item.Value, l.lookup)
		if err != nil {
			l.problem(item, k.Path(), "%v", err)
			return
		}
		items = append(items, text)
	}
	k.field(c).Set(reflect.ValueOf(items))
	l.set[k.Path()] = true
}

// secretAlternative names the *File key that can replace an inline secret.
func secretAlternative(k key) string {
	if fk, ok := keyByPath[k.Path()+"File"]; ok {
		return fk.Path()
	}
	return "${VAR}"
}
