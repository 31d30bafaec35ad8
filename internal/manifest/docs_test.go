package manifest

import (
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
)

// fieldRows lists every field of a struct type, recursively, as markdown
// table rows: path, type, rules, description.
func fieldRows(t reflect.Type, prefix string, out *[]string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, f := range structFields(t) {
		ft := t.FieldByIndex(f.index).Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		typ := ft.Kind().String()
		elem := ft
		switch {
		case ft == reflect.TypeFor[Size]():
			typ = "size"
		case ft == reflect.TypeFor[FromTemplate]():
			typ = "string or object"
		case ft.Kind() == reflect.Slice:
			elem = ft.Elem()
			typ = "list of " + elem.Kind().String()
			if elem.Kind() == reflect.Struct {
				typ = "list of objects"
			}
		case ft.Kind() == reflect.Struct:
			typ = "object"
		case ft.Kind() == reflect.Map:
			typ = "map"
		case ft.Kind() == reflect.Float64:
			typ = "number"
		case ft.Kind() == reflect.Int:
			typ = "integer"
		}
		var rules []string
		if f.required {
			rules = append(rules, "required")
		}
		if len(f.enum) > 0 {
			rules = append(rules, strings.Join(f.enum, " \\| "))
		}
		if f.min != nil {
			rules = append(rules, fmt.Sprintf("≥ %v", *f.min))
		}
		if f.max != nil {
			rules = append(rules, fmt.Sprintf("≤ %v", *f.max))
		}
		if f.format != "" && f.format != "not-empty" {
			rules = append(rules, f.format)
		}
		*out = append(*out, fmt.Sprintf("| `%s%s` | %s | %s | %s |", prefix, f.name, typ, strings.Join(rules, ", "), f.doc))
		if elem.Kind() == reflect.Struct && elem != reflect.TypeFor[Size]() {
			sub := prefix + f.name + "."
			if ft.Kind() == reflect.Slice {
				sub = prefix + f.name + "[]."
			}
			if elem == reflect.TypeFor[FromTemplate]() {
				type plain FromTemplate
				elem = reflect.TypeFor[plain]()
			}
			fieldRows(elem, sub, out)
		}
	}
}

// TestDocsCoverEveryField: docs/manifests.md names every field of every
// kind. Run with PROXMOPS_PRINT_FIELDS=1 to print the tables.
func TestDocsCoverEveryField(t *testing.T) {
	doc, err := os.ReadFile("../../docs/manifests.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	types := []struct {
		title string
		t     reflect.Type
	}{{"metadata", reflect.TypeFor[Metadata]()}}
	for _, k := range Kinds() {
		types = append(types, struct {
			title string
			t     reflect.Type
		}{string(k), k.Info().specType()})
	}
	for _, ty := range types {
		var rows []string
		prefix := "spec."
		if ty.title == "metadata" {
			prefix = "metadata."
		}
		fieldRows(ty.t, prefix, &rows)
		if os.Getenv("PROXMOPS_PRINT_FIELDS") != "" {
			fmt.Printf("\n### %s\n\n| field | type | rules | meaning |\n|---|---|---|---|\n%s\n", ty.title, strings.Join(rows, "\n"))
		}
		for _, r := range rows {
			name := r[3 : 3+strings.Index(r[3:], "`")]
			if !strings.Contains(text, "`"+name+"`") {
				t.Errorf("docs/manifests.md does not document %s `%s`", ty.title, name)
			}
		}
		if !strings.Contains(text, "kind: "+ty.title) && ty.title != "metadata" {
			t.Errorf("docs/manifests.md has no example of kind %s", ty.title)
		}
	}
}
