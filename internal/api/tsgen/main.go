// Command tsgen writes the UI's copy of the API's JSON shapes
// (web/src/api/generated.ts) from the Go types of internal/api and
// internal/vocab, so the two cannot drift: `go generate ./internal/api/`
// runs it, and TestGeneratedFileIsCurrent fails when the file on disk is not
// what it would write now.
//
// The shapes come from the types by reflection, as encoding/json sees them:
// a field is optional ("?") when it has omitempty, may be null when it is a
// pointer, slice or map, and a vocabulary word is its union of words. Doc
// comments come from the packages' source.
package main

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/proxmops/proxmops/internal/api"
	"github.com/proxmops/proxmops/internal/manifest"
	"github.com/proxmops/proxmops/internal/vocab"
)

// roots are the documents of the API; every type they reach is written.
var roots = []any{
	api.ResourceList{}, api.ResourceDetail{}, api.PassEvent{}, api.DeletedEvent{},
	api.Plan{}, api.AdoptResult{}, api.AdoptRequest{}, api.SyncOptions{},
	api.RevisionList{}, api.PinRequest{}, api.CommitHistory{},
	api.Manifest{}, api.Live{}, api.TaskLog{},
	api.SnapshotList{}, api.RollbackRequest{}, api.RollbackResult{},
	api.LogLines{}, api.Me{}, api.AuthMethods{}, api.User{}, api.Token{}, api.NewToken{},
	api.TestResult{}, api.Error{}, api.SettingsDocument{},
	api.PullRequestList{}, api.NotificationList{}, api.NotificationBody{},
	api.ReplicaStatus{}, api.Accepted{}, api.DryRun{}, api.PinAccepted{},
	api.SetupState{}, api.UserList{}, api.TokenList{},
	manifest.KindInfo{},
}

// writeKindInfo writes the kind table (manifest.KindTable) as KIND_INFO,
// so the UI reads which kinds are guests, take snapshots or are exported
// from the same rows as the Go code.
func writeKindInfo(b *bytes.Buffer) error {
	b.WriteString("\n// KIND_INFO is manifest.KindTable: one row per kind, in kind order.\n")
	b.WriteString("export const KIND_INFO: Record<Kind, KindInfo> = {\n")
	for _, info := range manifest.KindTable() {
		row, err := json.Marshal(info)
		if err != nil {
			return err
		}
		fmt.Fprintf(b, "  %s: %s,\n", info.Kind, row)
	}
	b.WriteString("};\n")
	return nil
}

// union is a vocabulary word type and its words in documented order.
type union struct {
	name  string
	words []string
	doc   string // its comment when its package's source is not read
}

func wordsOf[W fmt.Stringer](ws []W) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = w.String()
	}
	return out
}

func stringsOf[W ~string](ws []W) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = string(w)
	}
	return out
}

// unions are the vocabularies, keyed by their Go type. Status and Health
// also get a const array (STATUSES, HEALTHS) the UI iterates.
var unions = map[reflect.Type]union{
	reflect.TypeFor[vocab.Status]():          {"Status", wordsOf(vocab.Statuses), ""},
	reflect.TypeFor[vocab.Health]():          {"Health", wordsOf(vocab.Healths), ""},
	reflect.TypeFor[vocab.Action]():          {"Action", wordsOf(vocab.Actions), ""},
	reflect.TypeFor[vocab.SyncPolicy]():      {"SyncPolicy", wordsOf(vocab.SyncPolicies), ""},
	reflect.TypeFor[vocab.Hold]():            {"Hold", wordsOf(vocab.Holds), ""},
	reflect.TypeFor[api.HistoryEvent]():      {"HistoryEvent", stringsOf(api.HistoryEvents), ""},
	reflect.TypeFor[api.ActorKind]():         {"ActorKind", stringsOf(api.ActorKinds), ""},
	reflect.TypeFor[api.Role]():              {"Role", stringsOf(api.Roles), ""},
	reflect.TypeFor[api.Relation]():          {"Relation", stringsOf(api.Relations), ""},
	reflect.TypeFor[api.NotificationEvent](): {"NotificationEvent", stringsOf(api.NotificationEvents), ""},
	reflect.TypeFor[api.CheckLevel]():        {"CheckLevel", stringsOf(api.CheckLevels), ""},
	reflect.TypeFor[api.LogLevel]():          {"LogLevel", stringsOf(api.LogLevels), ""},
	reflect.TypeFor[api.ReplicaRole]():       {"ReplicaRole", stringsOf(api.ReplicaRoles), ""},
	reflect.TypeFor[manifest.Kind]():         {"Kind", stringsOf(manifest.Kinds()), "Kind names a manifest kind; the kinds in the order dependencies usually flow."},
	reflect.TypeFor[manifest.NodeRule]():     {"NodeRule", stringsOf([]manifest.NodeRule{manifest.NodeRequired, manifest.NodeOrSpec, manifest.NodeNone}), ""},
}

// constArrays are the unions also written as a const array.
var constArrays = map[string]string{"Status": "STATUSES", "Health": "HEALTHS", "Kind": "KINDS", "LogLevel": "LOG_LEVELS"}

var (
	timeType = reflect.TypeFor[time.Time]()
	textType = reflect.TypeFor[encoding.TextMarshaler]()
)

type generator struct {
	docs    map[string]string // "Type" and "Type.Field" -> doc comment
	done    map[reflect.Type]bool
	structs []reflect.Type // in the order first reached
	used    map[string]bool
}

// Generate returns the file's text.
func Generate() ([]byte, error) {
	docs, err := readDocs()
	if err != nil {
		return nil, err
	}
	g := &generator{docs: docs, done: map[reflect.Type]bool{}, used: map[string]bool{}}
	for _, r := range roots {
		g.reach(reflect.TypeOf(r))
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by internal/api/tsgen from internal/api and internal/vocab; DO NOT EDIT.\n")
	b.WriteString("// Regenerate with `go generate ./internal/api/`.\n")
	us := make([]union, 0, len(unions))
	for _, u := range unions {
		us = append(us, u)
	}
	slices.SortFunc(us, func(a, b union) int { return strings.Compare(a.name, b.name) })
	for _, u := range us {
		g.writeUnion(&b, u)
	}
	for _, t := range g.structs {
		if err := g.writeStruct(&b, t); err != nil {
			return nil, err
		}
	}
	if err := writeKindInfo(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (g *generator) writeUnion(b *bytes.Buffer, u union) {
	b.WriteString("\n")
	doc := g.docs[u.name]
	if doc == "" {
		doc = u.doc
	}
	writeDoc(b, "", doc)
	quoted := make([]string, len(u.words))
	for i, w := range u.words {
		quoted[i] = "'" + w + "'"
	}
	if c, ok := constArrays[u.name]; ok {
		fmt.Fprintf(b, "export const %s = [%s] as const;\n", c, strings.Join(quoted, ", "))
		fmt.Fprintf(b, "export type %s = (typeof %s)[number];\n", u.name, c)
		return
	}
	fmt.Fprintf(b, "export type %s = %s;\n", u.name, strings.Join(quoted, " | "))
}

// reach records the struct types t leads to.
func (g *generator) reach(t reflect.Type) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		if t.Kind() == reflect.Map {
			g.reach(t.Key())
		}
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == timeType || g.done[t] {
		return
	}
	g.done[t] = true
	g.structs = append(g.structs, t)
	for i := range t.NumField() {
		g.reach(t.Field(i).Type)
	}
}

func (g *generator) writeStruct(b *bytes.Buffer, t reflect.Type) error {
	b.WriteString("\n")
	writeDoc(b, "", g.docs[t.Name()])
	var extends []string
	var body bytes.Buffer
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			extends = append(extends, f.Type.Name())
			continue
		}
		if name == "" {
			name = f.Name
		}
		ts, err := g.tsType(f.Type)
		if err != nil {
			return fmt.Errorf("%s.%s: %w", t.Name(), f.Name, err)
		}
		opt := ""
		if slices.Contains(strings.Split(opts, ","), "omitempty") {
			opt = "?"
		}
		writeDoc(&body, "  ", g.docs[t.Name()+"."+f.Name])
		fmt.Fprintf(&body, "  %s%s: %s;\n", name, opt, ts)
	}
	ext := ""
	if len(extends) > 0 {
		ext = " extends " + strings.Join(extends, ", ")
	}
	fmt.Fprintf(b, "export interface %s%s {\n%s}\n", t.Name(), ext, body.String())
	return nil
}

// tsType is the TypeScript type of a Go type as encoding/json writes it.
func (g *generator) tsType(t reflect.Type) (string, error) {
	if u, ok := unions[t]; ok {
		return u.name, nil
	}
	switch {
	case t == timeType:
		return "string", nil
	case t.Kind() == reflect.Pointer:
		s, err := g.tsType(t.Elem())
		return s + " | null", err
	case t.Kind() == reflect.Slice:
		s, err := g.tsType(t.Elem())
		if strings.Contains(s, "|") {
			s = "(" + s + ")"
		}
		return s + "[] | null", err
	case t.Kind() == reflect.Map:
		k, err := g.tsType(t.Key())
		if err != nil {
			return "", err
		}
		v, err := g.tsType(t.Elem())
		if _, word := unions[t.Key()]; word {
			// Not every word need be a key.
			return "Partial<Record<" + k + ", " + v + ">> | null", err
		}
		return "Record<" + k + ", " + v + "> | null", err
	case t.Kind() == reflect.Struct:
		return t.Name(), nil
	case t.Kind() == reflect.Interface:
		return "unknown", nil
	case t.Implements(textType):
		return "", fmt.Errorf("%s is written as text but is no known vocabulary", t)
	case t.Kind() == reflect.String:
		return "string", nil
	case t.Kind() == reflect.Bool:
		return "boolean", nil
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Float64:
		return "number", nil
	}
	return "", fmt.Errorf("no TypeScript type for %s", t)
}

func writeDoc(b *bytes.Buffer, indent, doc string) {
	doc = strings.TrimSpace(doc)
	if doc == "" {
		return
	}
	for l := range strings.SplitSeq(doc, "\n") {
		b.WriteString(strings.TrimRight(indent+"// "+l, " ") + "\n")
	}
}

// readDocs reads the doc comments of the types, fields and typed constant
// groups of internal/api and internal/vocab from their source.
func readDocs() (map[string]string, error) {
	_, self, _, _ := runtime.Caller(0)
	apiDir := filepath.Dir(filepath.Dir(self))
	docs := map[string]string{}
	for _, pattern := range []string{filepath.Join(apiDir, "*.go"), filepath.Join(apiDir, "..", "vocab", "*.go"), filepath.Join(apiDir, "..", "manifest", "kinds.go")} {
		fset := token.NewFileSet()
		files, err := filepath.Glob(pattern)
		if err != nil {
			return nil, err
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				return nil, err
			}
			collectDocs(f, docs)
		}
	}
	return docs, nil
}

func collectDocs(f *ast.File, docs map[string]string) {
	for _, d := range f.Decls {
		gd, ok := d.(*ast.GenDecl)
		if !ok || gd.Tok != token.TYPE {
			continue
		}
		for _, s := range gd.Specs {
			ts := s.(*ast.TypeSpec)
			doc := ts.Doc
			if doc == nil && len(gd.Specs) == 1 {
				doc = gd.Doc
			}
			docs[ts.Name.Name] = doc.Text()
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, fl := range st.Fields.List {
				text := fl.Doc.Text()
				if text == "" {
					text = fl.Comment.Text()
				}
				for _, n := range fl.Names {
					docs[ts.Name.Name+"."+n.Name] = text
				}
			}
		}
	}
}

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: tsgen OUTPUT.ts")
		os.Exit(2)
	}
	b, err := Generate()
	if err == nil {
		err = os.WriteFile(os.Args[1], b, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tsgen:", err)
		os.Exit(1)
	}
}
