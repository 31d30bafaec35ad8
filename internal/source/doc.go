// Package source brings the Git repository of manifests onto the local disk.
//
// A Syncer clones or fetches one repository URL at one revision (branch, tag
// or commit) into its own cache directory, then writes the watched path of
// the resolved commit, submodules included, into a fresh directory named
// after the commit and returns it. Checked-out trees are never modified in
// place: a failed fetch leaves the last good tree untouched, so an
// unreachable Git server can never look like "every manifest was deleted".
//
// Sources: HTTPS with a token, SSH with a key, git://, file:// (read in
// process, no git program needed) and plain local directories (read in
// place). Pure Go, on go-git.
package source
