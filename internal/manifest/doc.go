// Package manifest defines the proxmops manifest format (apiVersion
// proxmops.dev/v1): the Go types of every kind, a strict loader that reports
// every error of a tree with its file, line, column and field path, the
// cross-document checks, and the JSON Schema generated from the same types.
//
// The loader is hardened against hostile input: files are size-capped, YAML is
// split per document and bounded in tokens, nesting depth and alias expansion
// before it is parsed, the parser's work per file is bounded, and symbolic
// links are never followed.
//
// Documents written in plain YAML (block and one-line flow collections,
// plain, quoted and literal scalars, comments), which is nearly every
// manifest, are read by the loader's own linear reader (fastyaml.go);
// everything else goes to goccy/go-yaml, which reads such documents the same
// way (checked by tests and the fuzz target) and stays the reference.
// go.yaml.in/yaml/v3 alone was measured as a single parser and not adopted
// (docs/benchmarks.md: several times the CPU, and syntax errors without a column).
//
// Entry points: LoadDir and LoadFS read a tree into a *Set; ParseFile decodes one
// file without the cross-document checks; NewSet runs those checks on resources
// from any source. Schema returns the JSON Schema.
package manifest
