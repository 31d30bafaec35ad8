package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(SchemaJSON()))
	if err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(SchemaID)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

// yamlDocs decodes every document of a YAML file into JSON values.
func yamlDocs(t *testing.T, path string) []any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []any
	for {
		var v any
		err := dec.Decode(&v)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if v == nil {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		jv, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, jv)
	}
	return out
}

func yamlFiles(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && IsManifestFile(p) {
			files = append(files, p)
		}
		return err
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests under %s: %v", dir, err)
	}
	return files
}

// TestValidManifestsPassSchema: every example and every seed manifest
// validates against the generated schema (the loader test covers the loader).
func TestValidManifestsPassSchema(t *testing.T) {
	sch := compileSchema(t)
	for _, dir := range []string{"../../examples", "testdata/seeds"} {
		for _, f := range yamlFiles(t, dir) {
			for i, doc := range yamlDocs(t, f) {
				if err := sch.Validate(doc); err != nil {
					t.Errorf("%s document %d fails the schema: %v", f, i, err)
				}
			}
		}
	}
}

// TestInvalidManifestsFailBoth: each file of testdata/invalid fails the
// loader with the message its "# want:" line names, and fails the schema.
func TestInvalidManifestsFailBoth(t *testing.T) {
	sch := compileSchema(t)
	for _, f := range yamlFiles(t, "testdata/invalid") {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(data), "\n")
			want, ok := strings.CutPrefix(first, "# want: ")
			if !ok {
				t.Fatalf("first line must be '# want: message'")
			}
			res, errs := ParseFile(filepath.Base(f), data)
			if len(errs) == 0 {
				set, serrs := NewSet(res)
				_ = set
				errs = serrs
			}
			if len(errs) == 0 {
				t.Fatalf("loader accepts it")
			}
			if !strings.Contains(errs.Error(), want) {
				t.Errorf("loader errors do not contain %q:\n%v", want, errs)
			}
			for i, doc := range yamlDocs(t, f) {
				if err := sch.Validate(doc); err == nil {
					t.Errorf("document %d passes the schema", i)
				}
			}
		})
	}
}

// TestMarshalledResourcesPassSchema: the JSON the API serves as "desired" is
// itself a valid manifest.
func TestMarshalledResourcesPassSchema(t *testing.T) {
	sch := compileSchema(t)
	set, err := LoadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range set.Resources {
		b, _ := json.Marshal(r)
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s/%s: %v", r.Kind(), r.Name(), err)
		}
	}
}

func TestSchemaSelectsSpecByKind(t *testing.T) {
	s := Schema()
	if s["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("$schema = %v", s["$schema"])
	}
	defs := s["$defs"].(map[string]any)
	for _, k := range Kinds() {
		if _, ok := defs[string(k)]; !ok {
			t.Errorf("no definition for %s", k)
		}
	}
	if n := len(s["allOf"].([]any)); n != len(Kinds()) {
		t.Errorf("%d if/then branches, want %d", n, len(Kinds()))
	}
}
