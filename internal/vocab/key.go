package vocab

import "strings"

// Key names one resource across the program, the HTTP API, the history and
// the UI: "Kind/name". Names hold no "/", so the key splits back.
func Key[K ~string](kind K, name string) string { return string(kind) + "/" + name }

// SplitKey is Key read back: the kind and the name, ok false when key has
// no "/".
func SplitKey(key string) (kind, name string, ok bool) { return strings.Cut(key, "/") }
