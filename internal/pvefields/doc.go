// Package pvefields is the one home of proxmops' Proxmox field rules,
// apart from any HTTP request: the guest field tables (a row per managed
// key: how the manifest's value becomes the Proxmox parameter, how a
// read-back value is compared and shown, what a create sends, when a
// running guest takes a change; qemu.go for VirtualMachine and Template,
// container.go for Container, the row type and its walk in table.go), the
// guest diff they fill (Diff, guestdiff.go) from their input (GuestSpec,
// ContainerConfig and the component specs, guestspec.go), how Proxmox
// values are read, compared and shown (sizes, "on" is "1", property
// strings of disks and NICs, tags, lists, the boot order, volume and image
// file names), and the one mapping of Proxmox keys to manifest paths
// (FieldPaths, PathsOf). The engine plans and applies what DiffQemu and
// DiffCT find, and internal/export writes manifests from the same rows
// (FieldRows) and readings, so an exported manifest plans in sync.
//
// It does no I/O: it imports the manifest's types, internal/pve for its
// value parsers (property strings, tags, parameters) and
// internal/cloudinit for the seed's volume name, never a client, the
// store nor the engine (which passes in what it knows of a guest:
// Observed).
package pvefields
