package config

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
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

func (l *fileLayer) problem(tk *token.Token, keyPath, format string, args ...any) {
	p := Problem{File: l.name, Key: keyPath, Message: fmt.Sprintf(format, args...)}
	if tk != nil {
		p.Line, p.Column = tk.Position.Line, tk.Position.Column
	}
	l.probs.add(p)
}

func (l *fileLayer) apply(c *Config, data []byte) {
	l.set = map[string]bool{}
	if len(data) > maxFileSize {
		l.problem(nil, "", "file is %d bytes; a config file may be at most %d", len(data), maxFileSize)
		return
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		var ye interface{ GetToken() *token.Token }
		var tk *token.Token
		msg := err.Error()
		if errors.As(err, &ye) {
			tk = ye.GetToken()
			if m, ok := err.(interface{ GetMessage() string }); ok {
				msg = m.GetMessage()
			}
		}
		l.problem(tk, "", "YAML syntax: %s", msg)
		return
	}
	var bodies []ast.Node
	for _, doc := range f.Docs {
		if doc != nil && doc.Body != nil {
			bodies = append(bodies, doc.Body)
		}
	}
	if len(bodies) == 0 {
		return // an empty file sets nothing
	}
	if len(bodies) > 1 {
		l.problem(bodies[1].GetToken(), "", "the config file must hold one YAML document, found %d", len(bodies))
		return
	}
	pairs, ok := l.mapping(bodies[0], "")
	if !ok {
		return
	}
	for _, mv := range pairs {
		section, ktk := keyText(mv)
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

// mapping returns the key/value pairs of a mapping node, or reports why
// the node is not one. A null node is an empty mapping.
func (l *fileLayer) mapping(n ast.Node, where string) ([]*ast.MappingValueNode, bool) {
	n = unwrap(n)
	switch v := n.(type) {
	case *ast.MappingNode:
		return v.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{v}, true
	case *ast.NullNode, nil:
		return nil, true
	case *ast.AliasNode:
		l.problem(v.GetToken(), where, "YAML aliases are not allowed in the config file")
		return nil, false
	}
	if where == "" {
		l.problem(n.GetToken(), "", "the config file must be a mapping of sections (cluster, source, ...), found %s", n.Type())
	} else {
		l.problem(n.GetToken(), where, "expected a mapping of keys, found %s", n.Type())
	}
	return nil, false
}

func (l *fileLayer) section(c *Config, section string, n ast.Node) {
	l.group(c, section, "", n)
}

// group decodes the keys of a section, or of a group of keys inside one
// (prefix "oidc." for auth.oidc).
func (l *fileLayer) group(c *Config, section, prefix string, n ast.Node) {
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
		name, ktk := keyText(mv)
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

func (l *fileLayer) value(c *Config, k key, n ast.Node) {
	n = unwrap(n)
	var text string
	switch v := n.(type) {
	case nil, *ast.NullNode:
		return // "key:" with nothing leaves the default
	case *ast.StringNode:
		text = v.Value
	case *ast.LiteralNode:
		text = v.Value.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		text = v.GetToken().Value
	case *ast.AliasNode:
		l.problem(v.GetToken(), k.Path(), "YAML aliases are not allowed in the config file")
		return
	case *ast.SequenceNode:
		if k.typ != stringsType {
			l.problem(n.GetToken(), k.Path(), "expected a single value, found %s", n.Type())
			return
		}
		l.list(c, k, v)
		return
	default:
		l.problem(n.GetToken(), k.Path(), "expected a single value, found %s", n.Type())
		return
	}
	text, expanded, err := expandEnv(text, l.lookup)
	if err != nil {
		l.problem(n.GetToken(), k.Path(), "%v", err)
		return
	}
	if err := k.set(c, text); err != nil {
		l.problem(n.GetToken(), k.Path(), "%v", err)
		return
	}
	l.set[k.Path()] = true
	if k.secret && text != "" && !expanded {
		tk := n.GetToken()
		l.warnings = append(l.warnings, fmt.Sprintf(
			"%s:%d: %s is written inline in the config file; prefer %s or %s",
			l.name, tk.Position.Line, k.Path(), secretAlternative(k), k.EnvName()))
	}
}

// list decodes a list of strings (auth.oidc.adminGroups).
func (l *fileLayer) list(c *Config, k key, seq *ast.SequenceNode) {
	items := []string{}
	for _, item := range seq.Values {
		var text string
		switch v := unwrap(item).(type) {
		case *ast.StringNode:
			text = v.Value
		case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode:
			text = v.GetToken().Value
		default:
			l.problem(item.GetToken(), k.Path(), "expected a list of names, found %s", item.Type())
			return
		}
		text, _, err := expandEnv(text, l.lookup)
		if err != nil {
			l.problem(item.GetToken(), k.Path(), "%v", err)
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

func keyText(mv *ast.MappingValueNode) (string, *token.Token) {
	kn := unwrap(mv.Key)
	if kn == nil {
		return "", mv.GetToken()
	}
	if s, ok := kn.(*ast.StringNode); ok {
		return s.Value, kn.GetToken()
	}
	return kn.GetToken().Value, kn.GetToken()
}

// unwrap strips anchors, tags and mapping-key wrappers.
func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		case *ast.MappingKeyNode:
			n = v.Value
		default:
			return n
		}
	}
}
