// Package examples holds the example home-lab repository of manifests,
// embedded so that `proxmops demo` can build its Git repository from it
// wherever the binary runs.
package examples

import "embed"

// FS is the examples tree: README.md and every manifest, by directory.
//
//go:embed README.md */*.yaml
var FS embed.FS
