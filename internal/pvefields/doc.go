// Package pvefields holds how proxmops reads, compares and shows Proxmox
// configuration values, apart from any one kind: sizes ("20G"), booleans
// ("on" is "1"), property strings of disks and NICs, tags, lists, the boot
// order, volume and image file names, and the one mapping of Proxmox keys
// to manifest paths (FieldPaths, PathsOf). The engine's field tables
// compare with these readings, and internal/export writes manifests from
// the same readings, so an exported manifest plans in sync.
//
// It does no I/O: it imports the manifest's types and internal/pve only
// for its value parsers (property strings, tags), never a client or the
// store.
package pvefields
