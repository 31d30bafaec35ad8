package manifest

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Test-only shapes: a struct embedded in two others, and one embedded two
// levels deep, as QemuHardware is in VirtualMachineSpec and TemplateSpec.
type embedInner struct {
	Depth int `json:"depth" pm:"required,min=1" doc:"Innermost."`
}

type embedShared struct {
	Cores int    `json:"cores,omitempty" pm:"min=1" doc:"Shared cores."`
	Mode  string `json:"mode,omitempty" pm:"enum=fast|slow" doc:"Shared mode."`
	embedInner
}

type embedOuter struct {
	ID int `json:"id" pm:"required" doc:"Own field."`
	embedShared
	Note string `json:"note,omitempty" doc:"Own field after the embedded ones."`
}

type embedClash struct {
	Cores int `json:"cores"`
	embedShared
}

type embedPointer struct {
	*embedInner
}

// decodeYAML decodes one YAML document into v and returns the errors as
// "line:col: path: message".
func decodeYAML(t *testing.T, text string, v any) []string {
	t.Helper()
	docs, perrs := parseYAML([]byte(text))
	if len(perrs) > 0 || len(docs) != 1 {
		t.Fatalf("parse %q: %v", text, perrs)
	}
	d := newDecoder()
	d.decode(docs[0].root, reflect.ValueOf(v).Elem(), nil)
	var out []string
	for _, e := range d.errs {
		out = append(out, fmt.Sprintf("%d:%d: %s: %s", e.line, e.col, e.path, e.msg))
	}
	return out
}

func TestEmbeddedStructFieldsArePromoted(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want embedOuter
		errs []string
	}{
		{"promoted fields decode at the embedding level", "id: 1\ncores: 2\nmode: fast\ndepth: 3\nnote: n\n",
			embedOuter{ID: 1, embedShared: embedShared{Cores: 2, Mode: "fast", embedInner: embedInner{Depth: 3}}, Note: "n"}, nil},
		{"a misspelt promoted field gets a suggestion", "id: 1\ndepth: 1\ncoers: 2\n",
			embedOuter{ID: 1, embedShared: embedShared{embedInner: embedInner{Depth: 1}}},
			[]string{"3:1: coers: unknown field `coers`, did you mean `cores`?"}},
		{"an unknown field lists every field in declaration order", "id: 1\ndepth: 1\nzzzzzzzz: 2\n",
			embedOuter{ID: 1, embedShared: embedShared{embedInner: embedInner{Depth: 1}}},
			[]string{"3:1: zzzzzzzz: unknown field `zzzzzzzz`; allowed: id, cores, mode, depth, note"}},
		{"promoted fields keep their rules", "id: 1\ndepth: 0\nmode: fats\n",
			embedOuter{ID: 1},
			[]string{"2:8: depth: 0 is below the minimum 1", "3:7: mode: \"fats\" is not one of fast, slow, did you mean `fast`?"}},
		{"a required promoted field is required of the embedding struct", "id: 1\n",
			embedOuter{ID: 1},
			// A block mapping's position is its first colon.
			[]string{"1:3: : missing required field `depth`"}},
		{"the embedded struct's Go name is no field", "id: 1\ndepth: 1\nembedShared: {}\n",
			embedOuter{ID: 1, embedShared: embedShared{embedInner: embedInner{Depth: 1}}},
			[]string{"3:1: embedShared: unknown field `embedShared`; allowed: id, cores, mode, depth, note"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got embedOuter
			errs := decodeYAML(t, tt.yaml, &got)
			if !slices.Equal(errs, tt.errs) {
				t.Errorf("errors:\n got %q\nwant %q", errs, tt.errs)
			}
			if got != tt.want {
				t.Errorf("value:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestEmbeddedStructSchemaHasPromotedProperties(t *testing.T) {
	s := typeSchema(reflect.TypeFor[embedOuter]())
	props := s["properties"].(map[string]any)
	var names []string
	for k := range props {
		names = append(names, k)
	}
	slices.Sort(names)
	if want := []string{"cores", "depth", "id", "mode", "note"}; !slices.Equal(names, want) {
		t.Errorf("properties %v, want %v", names, want)
	}
	if req := s["required"].([]string); !slices.Equal(req, []string{"id", "depth"}) {
		t.Errorf("required %v, want [id depth]", req)
	}
	mode := props["mode"].(map[string]any)
	if !slices.Equal(mode["enum"].([]string), []string{"fast", "slow"}) || mode["description"] != "Shared mode." {
		t.Errorf("mode schema %v lost its rules or doc", mode)
	}
}

func TestEmbeddingMistakesPanic(t *testing.T) {
	tests := []struct {
		name string
		t    reflect.Type
		want string
	}{
		{"a field name given twice", reflect.TypeFor[embedClash](), "field cores declared twice"},
		{"an embedded pointer", reflect.TypeFor[embedPointer](), "only structs may be embedded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if msg, _ := r.(string); !strings.Contains(msg, tt.want) {
					t.Errorf("panic %v, want one containing %q", r, tt.want)
				}
			}()
			structInfoOf(tt.t)
		})
	}
}

// TestTemplateSharesVirtualMachineHardware: the hardware fields are one
// declaration, decoded with the same rules and suggestions in both kinds.
func TestTemplateSharesVirtualMachineHardware(t *testing.T) {
	hw := structFields(reflect.TypeFor[QemuHardware]())
	for _, spec := range []reflect.Type{reflect.TypeFor[VirtualMachineSpec](), reflect.TypeFor[TemplateSpec]()} {
		fields := structFields(spec)
		for _, h := range hw {
			i := slices.IndexFunc(fields, func(f fieldInfo) bool { return f.name == h.name })
			if i < 0 {
				t.Fatalf("%s has no field %s", spec.Name(), h.name)
			}
			if f := spec.FieldByIndex(fields[i].index); f.Type != reflect.TypeFor[QemuHardware]().FieldByIndex(h.index).Type {
				t.Errorf("%s.%s is not QemuHardware's", spec.Name(), h.name)
			}
		}
	}
	doc := "apiVersion: proxmops.dev/v1\nkind: Template\nmetadata:\n  name: tpl\n  node: pve1\nspec:\n  vmid: 9000\n  image:\n    source: https://example.com/a.img\n  coers: 2\n  memory: 1\n"
	errs := loadErrors(t, map[string]string{"a.yaml": doc})
	want := []string{
		"a.yaml:10:3: spec.coers: unknown field `coers`, did you mean `cores`?",
		"a.yaml:11:11: spec.memory: 1 is below the minimum 16",
	}
	var got []string
	for _, e := range errs {
		got = append(got, e.Error())
	}
	if !slices.Equal(got, want) {
		t.Errorf("errors:\n got %q\nwant %q", got, want)
	}
}
