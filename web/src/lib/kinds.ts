// The kind table (Go's manifest.KindTable, generated into KIND_INFO): which
// kinds are guests, take snapshots or are exported. Read it here; never
// list kinds by hand.
import { KIND_INFO, KINDS, type KindInfo } from '../api/generated';

// kindInfo returns a kind's row, undefined for a word that is not a kind.
export function kindInfo(kind: string): KindInfo | undefined {
  return (KIND_INFO as Record<string, KindInfo>)[kind];
}

// isGuest: a Proxmox guest with a VMID (VirtualMachine, Template, Container).
export function isGuest(kind: string): boolean {
  return kindInfo(kind)?.guest ?? false;
}

// takesSnapshots: the kind has guest snapshots (the Snapshots panel).
export function takesSnapshots(kind: string): boolean {
  return kindInfo(kind)?.snapshots ?? false;
}

// GUEST_KINDS are the guest kinds, in kind order.
export const GUEST_KINDS = KINDS.filter((k) => KIND_INFO[k].guest);

// EXPORT_KINDS are the kinds export writes (a row with a folder): the guest
// kinds first, as they are exported by default, then the others.
export const EXPORT_KINDS = [...GUEST_KINDS, ...KINDS.filter((k) => !KIND_INFO[k].guest && KIND_INFO[k].folder)];
