// Package examples holds the example home-lab repository of manifests,
// embedded so that `proxmops demo` can build its Git repository from it
// wherever the binary runs.
package examples

import "embed"

// FS is the examples tree: README.md, every manifest, by directory, and the
// files the manifests' provisioning copies into guests.
//
//go:embed README.md */*.yaml containers/broker
var FS embed.FS
