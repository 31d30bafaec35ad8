package manifest

import (
	"encoding/json"
	"github.com/proxmops/proxmops/internal/vocab"
	"reflect"
)

// SchemaID is the $id of the generated JSON Schema.
const SchemaID = "https://proxmops.dev/schemas/v1/manifest.schema.json"

// schemaer is implemented by types whose YAML shape is not their Go shape.
type schemaer interface {
	jsonSchema() map[string]any
}

func (Size) jsonSchema() map[string]any {
	return map[string]any{
		"description": "Size with a binary unit K, M, G or T (e.g. 20G), or an integer number of GiB.",
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": sizePattern},
			map[string]any{"type": "integer", "minimum": 1, "maximum": 1 << 20},
		},
	}
}

func (FromTemplate) jsonSchema() map[string]any {
	type plain FromTemplate
	obj := typeSchema(reflect.TypeFor[plain]())
	return map[string]any{
		"description": "A template name (full clone) or {name, linked}.",
		"oneOf": []any{
			map[string]any{"type": "string", "pattern": dnsNamePattern},
			obj,
		},
	}
}

// specRules are the constraints between fields of a spec that JSON Schema
// can say (the loader checks them too, with better messages).
var specRules = map[reflect.Type][]any{
	reflect.TypeFor[VirtualMachineSpec](): {
		map[string]any{"not": map[string]any{"required": []string{"image", "fromTemplate"}}},
		map[string]any{"not": map[string]any{"required": []string{"userData", "cloudInit"}}},
		map[string]any{"not": map[string]any{"required": []string{"userData", "iso"}}},
	},
	reflect.TypeFor[ContainerTemplateSpec](): {
		map[string]any{"oneOf": []any{
			map[string]any{"required": []string{"appliance"}, "not": map[string]any{"required": []string{"source"}}},
			map[string]any{"required": []string{"source"}, "not": map[string]any{"required": []string{"appliance"}}},
		}},
	},
	reflect.TypeFor[SdnZoneSpec](): {
		zoneRequires("vlan", "bridge"),
		zoneRequires("qinq", "bridge", "tag"),
		zoneRequires("vxlan", "peers"),
		zoneRequires("evpn", "controller", "vrfVxlan"),
	},
	reflect.TypeFor[SecretRef](): {
		map[string]any{"oneOf": []any{
			map[string]any{"required": []string{"env"}, "not": map[string]any{"required": []string{"file"}}},
			map[string]any{"required": []string{"file"}, "not": map[string]any{"required": []string{"env"}}},
		}},
	},
	reflect.TypeFor[Mountpoint](): {
		map[string]any{"not": map[string]any{"required": []string{"storage", "bind"}}},
		map[string]any{"anyOf": []any{map[string]any{"required": []string{"storage", "size"}}, map[string]any{"required": []string{"bind"}}}},
	},
}

func zoneRequires(typ string, fields ...string) map[string]any {
	return map[string]any{
		"if":   map[string]any{"properties": map[string]any{"type": map[string]any{"const": typ}}},
		"then": map[string]any{"required": fields},
	}
}

var schemaerType = reflect.TypeFor[schemaer]()

func typeSchema(t reflect.Type) map[string]any {
	if t.Kind() == reflect.Pointer {
		return typeSchema(t.Elem())
	}
	if t.Implements(schemaerType) {
		return reflect.Zero(t).Interface().(schemaer).jsonSchema()
	}
	switch t.Kind() {
	case reflect.Pointer:
		return typeSchema(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Int, reflect.Int32, reflect.Int64:
		return map[string]any{"type": "integer"}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": typeSchema(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": typeSchema(t.Elem())}
	case reflect.Struct:
		props := map[string]any{}
		var required []string
		for _, f := range structFields(t) {
			s := typeSchema(t.FieldByIndex(f.index).Type)
			applyRules(s, &f)
			if f.doc != "" {
				s["description"] = f.doc
			}
			props[f.name] = s
			if f.required {
				required = append(required, f.name)
			}
		}
		out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(required) > 0 {
			out["required"] = required
		}
		if rules := specRules[t]; len(rules) > 0 {
			out["allOf"] = rules
		}
		return out
	}
	panic("manifest: no schema for " + t.String())
}

// applyRules adds a field's enum, range and format to its schema (to the
// items of a list).
func applyRules(s map[string]any, f *fieldInfo) {
	target := s
	if s["type"] == "array" {
		target = s["items"].(map[string]any)
	}
	if len(f.enum) > 0 {
		target["enum"] = f.enum
	}
	if f.min != nil {
		target["minimum"] = *f.min
	}
	if f.max != nil {
		target["maximum"] = *f.max
	}
	if f.format != "" && formats[f.format].pattern != "" && target["type"] == "string" {
		target["pattern"] = formats[f.format].pattern
		if n := formats[f.format].maxLen; n > 0 {
			target["maxLength"] = n
		}
	}
	if f.format == "not-empty" {
		target["minLength"] = 1
	}
}

// Schema returns the JSON Schema (draft 2020-12) of a manifest document of
// any kind, usable by YAML language servers: the kind selects the spec.
func Schema() map[string]any {
	meta := typeSchema(reflect.TypeFor[Metadata]())
	meta["properties"].(map[string]any)["annotations"] = map[string]any{
		"type":        "object",
		"description": "Free-form annotations; proxmops.dev/sync: auto | manual | disabled.",
		"properties": map[string]any{
			AnnotationSync:  map[string]any{"enum": syncWords()},
			AnnotationAdopt: map[string]any{"enum": []string{"true", "false"}},
		},
		"additionalProperties": map[string]any{"type": "string"},
	}
	dependsOn := meta["properties"].(map[string]any)["dependsOn"].(map[string]any)
	dependsOn["items"] = map[string]any{"type": "string", "pattern": dependencyPattern()}
	dependsOn["uniqueItems"] = true
	defs := map[string]any{"Metadata": meta}
	var branches []any
	for _, info := range kindTable {
		k := info.Kind
		spec := typeSchema(info.specType())
		metaRef := map[string]any{"$ref": "#/$defs/Metadata"}
		var metaRules []any
		if info.Name != nil {
			name := map[string]any{"pattern": info.Name.Pattern}
			if info.Name.MaxLength > 0 {
				name["maxLength"] = info.Name.MaxLength
			}
			metaRules = append(metaRules, map[string]any{"properties": map[string]any{"name": name}})
		}
		switch info.Node {
		case NodeNone:
			metaRules = append(metaRules, map[string]any{"not": map[string]any{"required": []string{"node"}}})
		case NodeRequired:
			metaRules = append(metaRules, map[string]any{"required": []string{"node"}})
		}
		if len(metaRules) > 0 {
			metaRef = map[string]any{"allOf": append([]any{map[string]any{"$ref": "#/$defs/Metadata"}}, metaRules...)}
		}
		defs[string(k)] = map[string]any{
			"type":                 "object",
			"description":          info.Doc,
			"additionalProperties": false,
			"required":             []string{"apiVersion", "kind", "metadata", "spec"},
			"properties": map[string]any{
				"apiVersion": map[string]any{"const": APIVersion},
				"kind":       map[string]any{"const": string(k)},
				"metadata":   metaRef,
				"spec":       spec,
			},
		}
		branches = append(branches, map[string]any{
			"if":   map[string]any{"required": []string{"kind"}, "properties": map[string]any{"kind": map[string]any{"const": string(k)}}},
			"then": map[string]any{"$ref": "#/$defs/" + string(k)},
		})
	}
	return map[string]any{
		"$schema":     "https://json-schema.org/draft/2020-12/schema",
		"$id":         SchemaID,
		"title":       "proxmops manifest",
		"description": "One proxmops resource (apiVersion " + APIVersion + "); kind selects the spec.",
		"type":        "object",
		"required":    []string{"apiVersion", "kind", "metadata", "spec"},
		"properties": map[string]any{
			"apiVersion": map[string]any{"const": APIVersion},
			"kind":       map[string]any{"enum": kindNames()},
		},
		"allOf": branches,
		"$defs": defs,
	}
}

// SchemaJSON returns Schema as indented JSON.
func SchemaJSON() []byte {
	b, err := json.MarshalIndent(Schema(), "", "  ")
	if err != nil {
		panic("manifest: schema does not marshal: " + err.Error())
	}
	return append(b, '\n')
}

// syncWords are the words of the sync annotation, from the vocabulary.
func syncWords() []string {
	out := make([]string, 0, len(vocab.SyncPolicies))
	for _, p := range vocab.SyncPolicies {
		out = append(out, p.String())
	}
	return out
}
