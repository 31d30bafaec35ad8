package manifest

import (
	"encoding/json"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Render writes a resource as one block-style YAML document, keys in the
// manifest's order (its JSON form's); decorate, when not nil, adds comments
// to the tree before it is encoded. Export and import both write with it.
func Render(r json.Marshaler, decorate func(doc *yaml.Node)) ([]byte, error) {
	js, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(js, &doc); err != nil {
		return nil, err
	}
	blockStyle(&doc)
	if decorate != nil {
		decorate(&doc)
	}
	var b strings.Builder
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}

// blockStyle turns JSON's flow style and quoting into plain block YAML; the
// encoder quotes the strings that need it.
func blockStyle(n *yaml.Node) {
	n.Style = 0
	for _, c := range n.Content {
		blockStyle(c)
	}
}
