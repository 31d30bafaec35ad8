// Package manifest defines the proxmops manifest format (apiVersion
// proxmops.dev/v1): the Go types of every kind, a strict loader that reports
// every error of a tree with its file, line, column and field path, the
// cross-document checks, and the JSON Schema generated from the same types.
//
// The loader is hardened against hostile input: files are size-capped, YAML is
// split per document, each bounded in size and flow nesting before it is
// parsed and in nodes, depth and alias expansion while its tree is built, and
// symbolic links are never followed.
//
// YAML is read and written with go.yaml.in/yaml/v3 only: its Node API keeps
// every node's line and column; the loader turns that tree into its own
// (aliases shared, merge keys applied, a mapping placed at its first colon)
// and decodes it strictly against the Go types.
//
// Entry points: LoadDir and LoadFS read a tree into a *Set; ParseFile decodes one
// file without the cross-document checks; NewSet runs those checks on resources
// from any source. Schema returns the JSON Schema.
package manifest
