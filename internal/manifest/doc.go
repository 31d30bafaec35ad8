// Package manifest defines the proxmops manifest format (apiVersion
// proxmops.dev/v1): the Go types of every kind, a strict loader that reports
// every error of a tree with its file, line, column and field path, the
// cross-document checks, and the JSON Schema generated from the same types.
//
// The loader is hardened against hostile input: files are size-capped, YAML is
// split per document and bounded in tokens, nesting depth and alias expansion
// before it is parsed, and symbolic links are never followed.
//
// Entry points: LoadDir and LoadFS read a tree into a *Set; ParseFile decodes one
// file without the cross-document checks; NewSet runs those checks on resources
// from any source. Schema returns the JSON Schema.
package manifest
