// The aligned diff of the drawer: the manifest's fields and the cluster's config keys
// side by side on one row per Proxmox key (`cores 4 | 2`), disks and NICs by slot,
// cloud-init decoded (sshkeys URL-decoded into keys). The engine's changes (Proxmox key
// in `field`, manifest path in `path`) decide which rows differ; this module only
// lines the two documents up so that every change has its row.

import type { Change } from '../api/types';
import { isGuest } from './kinds';

export type Group = 'general' | 'disks' | 'network' | 'cloud-init' | 'manifest only' | 'not in the manifest';
export const GROUPS: Group[] = ['general', 'disks', 'network', 'cloud-init', 'manifest only', 'not in the manifest'];

export interface AlignedRow {
  // The Proxmox key, or the manifest field for what has no key (`state`, `image`).
  field: string;
  // The manifest path, when the manifest sets it.
  path?: string;
  group: Group;
  // Lines of each side; null when that side does not have it.
  desired: string[] | null;
  observed: string[] | null;
  changed: boolean;
  change?: Change;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => v !== null && typeof v === 'object' && !Array.isArray(v);

function scalar(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'string' || typeof v === 'number') return String(v);
  return JSON.stringify(v);
}

// propertyString renders a manifest object the way Proxmox writes one (k=v,k=v).
function propertyString(o: Obj): string {
  return Object.entries(o)
    .filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([k, v]) => (isObj(v) ? `${k}=${propertyString(v)}` : `${k}=${scalar(v)}`))
    .join(',');
}

// decodeSSHKeys undoes Proxmox's URL encoding of sshkeys (one key per line).
export function decodeSSHKeys(v: string): string[] {
  let s = v;
  try {
    s = decodeURIComponent(v.replace(/\+/g, '%20'));
  } catch {
    /* shown as it is */
  }
  return s
    .split(/\r?\n/)
    .map((k) => k.trim())
    .filter(Boolean);
}

// shortKey shortens an SSH public key's base64 body for a narrow column.
export function shortKey(k: string): string {
  const parts = k.split(/\s+/);
  if (parts.length >= 2 && parts[1].length > 24) parts[1] = `${parts[1].slice(0, 12)}…${parts[1].slice(-8)}`;
  return parts.join(' ');
}

const DISK_KEY = /^(scsi|virtio|sata|ide|efidisk|tpmstate|unused|mp|rootfs)\d*$/;
const NET_KEY = /^(net|ipconfig)\d+$/;
const CI_KEYS = new Set(['ciuser', 'cipassword', 'citype', 'cicustom', 'ciupgrade', 'sshkeys', 'nameserver', 'searchdomain']);

function groupOf(key: string): Group {
  if (DISK_KEY.test(key)) return 'disks';
  if (NET_KEY.test(key) && !key.startsWith('ipconfig')) return 'network';
  if (key.startsWith('ipconfig') || CI_KEYS.has(key)) return 'cloud-init';
  return 'general';
}

const BUS_ORDER = ['scsi', 'virtio', 'sata', 'ide'];
function busRank(k: string): [number, number] {
  const i = BUS_ORDER.findIndex((b) => k.startsWith(b));
  return [i < 0 ? BUS_ORDER.length : i, Number(k.replace(/^\D+/, '')) || 0];
}
const isCdrom = (v: string) => /(^|,)media=cdrom(,|$)/.test(v) || /^(none|cdrom)(,|$)/.test(v);
const isCloudInit = (v: string) => /cloudinit/.test(v);

// bootDisk is the engine's choice of slot for a first disk declared without one
// (engine/guest.go bootDiskSlot): the first disk of the boot order, else the first
// disk by bus.
function bootDisk(cfg: Obj): string {
  const order = /(?:^|,)order=([^,]+)/.exec(scalar(cfg.boot))?.[1];
  for (const dev of order?.split(';') ?? []) {
    const v = cfg[dev.trim()];
    if (/^(scsi|virtio|sata|ide)\d+$/.test(dev.trim()) && typeof v === 'string' && !isCdrom(v)) return dev.trim();
  }
  const disks = Object.keys(cfg)
    .filter((k) => /^(scsi|virtio|sata|ide)\d+$/.test(k) && !isCdrom(scalar(cfg[k])) && !isCloudInit(scalar(cfg[k])))
    .sort((a, b) => {
      const [ra, na] = busRank(a);
      const [rb, nb] = busRank(b);
      return ra - rb || na - nb;
    });
  return disks[0] ?? '';
}

// diskSlots gives each declared disk its slot as the engine does (resolveDiskSlots).
function diskSlots(disks: Obj[], cfg: Obj): string[] {
  const slots = disks.map((d) => scalar(d.slot));
  if (slots.length > 0 && !slots[0]) slots[0] = bootDisk(cfg) || 'scsi0';
  const used = new Set(slots.filter(Boolean));
  let next = 1;
  return slots.map((s) => {
    if (s) return s;
    while (used.has(`scsi${next}`) || (cfg[`scsi${next}`] !== undefined && !disks.some((d) => d.slot === `scsi${next}`))) next++;
    used.add(`scsi${next}`);
    return `scsi${next}`;
  });
}

interface Want {
  field: string;
  path: string;
  value: string[];
  group?: Group;
}

function ipconfig(v: string): string {
  if (v === 'dhcp') return 'ip=dhcp';
  return v.includes('=') ? v : `ip=${v}`;
}

// listSep joins a manifest list the way the engine writes it to Proxmox
// (engine/network.go bridge_ports "eno1 eno2", engine/kinds.go zone "peers" a,b,
// engine/storage.go content and nodes a,b).
function listSep(kind: string): string {
  if (kind === 'Network') return ' ';
  if (kind === 'SdnZone' || kind === 'Storage') return ',';
  return ', ';
}

// wanted lists what a manifest sets, keyed by the Proxmox key it becomes.
function wanted(desired: Obj, cfg: Obj, kind: string): Want[] {
  const spec = isObj(desired.spec) ? desired.spec : {};
  const meta = isObj(desired.metadata) ? desired.metadata : {};
  const out: Want[] = [];
  const add = (field: string, path: string, value: string | string[], group?: Group) =>
    out.push({ field, path, value: Array.isArray(value) ? value : [value], group });
  const container = kind === 'Container';
  // A guest's name is its Proxmox name; other kinds' names are the manifest's own
  // (unless fieldPaths names the key, as an SDN zone's "zone").
  if (meta.name && !(container && spec.hostname))
    add(container ? 'hostname' : 'name', 'metadata.name', scalar(meta.name), isGuest(kind) ? undefined : 'manifest only');
  if (Array.isArray(meta.tags)) add('tags', 'metadata.tags', (meta.tags as unknown[]).map(scalar).join(';'));
  if (meta.node) add('node', 'metadata.node', scalar(meta.node));
  for (const [k, v] of Object.entries(spec)) {
    const path = `spec.${k}`;
    if (k === 'disks' && Array.isArray(v)) {
      const disks = v.filter(isObj);
      diskSlots(disks, cfg).forEach((slot, i) => {
        const { slot: _slot, ...rest } = disks[i];
        add(slot, `${path}[${i}]`, propertyString(rest), 'disks');
      });
    } else if ((k === 'net' || k === 'mountpoints') && Array.isArray(v)) {
      v.filter(isObj).forEach((n, i) => {
        const slot = scalar(n.slot) || `${k === 'net' ? 'net' : 'mp'}${i}`;
        const { slot: _slot, ...rest } = n;
        add(slot, `${path}[${i}]`, propertyString(rest), k === 'net' ? 'network' : 'disks');
      });
    } else if (k === 'rootfs' && isObj(v)) {
      add('rootfs', path, propertyString(v), 'disks');
    } else if (k === 'cloudInit' && isObj(v)) {
      for (const [ck, cv] of Object.entries(v)) {
        const cpath = `${path}.${ck}`;
        if (ck === 'user') add('ciuser', cpath, scalar(cv));
        else if (ck === 'sshKeys' && Array.isArray(cv)) add('sshkeys', cpath, cv.map(scalar));
        else if (ck === 'ip') add('ipconfig0', cpath, ipconfig(scalar(cv)));
        else if (ck === 'ipConfigs' && Array.isArray(cv))
          cv.filter(isObj).forEach((c, i) => {
            const { slot, ...rest } = c;
            add(`ipconfig${slot ? scalar(slot).replace(/^net/, '') : i}`, `${cpath}[${i}]`, propertyString(rest));
          });
        else if (ck === 'searchDomain') add('searchdomain', cpath, scalar(cv));
        else if (ck === 'upgrade') add('ciupgrade', cpath, scalar(cv));
        else if (ck === 'passwordFrom') add('cipassword', cpath, `from ${propertyString(isObj(cv) ? cv : {})}`);
        else add(ck.toLowerCase(), cpath, scalar(cv));
      }
    } else if (k === 'sshKeys' && Array.isArray(v)) {
      add('ssh-public-keys', path, v.map(scalar), 'manifest only');
    } else if (k === 'vmid') {
      add('vmid', path, scalar(v));
    } else if (k === 'state') {
      add('state', path, scalar(v));
    } else if (['applyMode', 'image', 'fromTemplate', 'template', 'provision', 'userData', 'iso', 'passwordFrom'].includes(k)) {
      add(k, path, isObj(v) ? propertyString(v) : scalar(v), 'manifest only');
    } else if (k === 'searchDomain') {
      add('searchdomain', path, scalar(v));
    } else if (k === 'checksum' && isObj(v) && !isGuest(kind)) {
      // The engine's form (IsoSpec.checksum, lowercased for an Iso): "sha256:…".
      const sum = `${scalar(v.algo)}:${scalar(v.value)}`;
      add('checksum', path, kind === 'Iso' ? sum.toLowerCase() : sum);
    } else if (k === 'vlanIds' && kind === 'Network') {
      // bridge_vids as the engine writes it: space-separated.
      add('bridge_vids', path, scalar(v).split(/[ ,;]+/).filter(Boolean).join(' '));
    } else if (Array.isArray(v) && v.length > 0 && v.every(isObj)) {
      // A list of objects (a security group's rules, an IP set's entries): one line each.
      add(k.toLowerCase(), path, v.map(propertyString));
    } else {
      add(k.toLowerCase(), path, isObj(v) ? propertyString(v) : Array.isArray(v) ? v.map(scalar).join(listSep(kind)) : scalar(v));
    }
  }
  return out;
}

// observedLines shows a Proxmox value as lines (sshkeys decoded into keys) and marks
// a value waiting for a reboot.
function observedLines(key: string, v: unknown, pending: Obj): string[] {
  // A nested list (a security group's rules, an IP set's entries), in the manifest's form: one line each.
  if (Array.isArray(v) && v.every(isObj)) return v.map(propertyString);
  const s = scalar(v);
  const lines = key === 'sshkeys' ? decodeSSHKeys(s) : [s];
  // The config shown is the one pending changes lead to: say when it waits for a reboot.
  if (key in pending) lines.push(scalar(pending[key]) === s ? 'pending: waits for a reboot' : `pending: ${key === 'sshkeys' ? decodeSSHKeys(scalar(pending[key])).length + ' keys' : scalar(pending[key])}`);
  return lines;
}

// fieldKey is the Proxmox key of a manifest path, from the detail's fieldPaths
// (pvefields.FieldPaths): the one the cluster has, else the one a change names.
function fieldKey(paths: Record<string, string> | null | undefined, path: string, cfg: Obj, changes: Change[]): string | undefined {
  const keys = Object.entries(paths ?? {})
    .filter(([, p]) => p === path)
    .map(([k]) => k);
  return keys.find((k) => k in cfg) ?? keys.find((k) => changes.some((c) => c.field === k)) ?? keys[0];
}

// align builds the rows of the aligned diff for a resource's detail. fieldPaths
// (the detail's) maps Proxmox keys to manifest paths where their names differ.
export function align(
  kind: string,
  desired: unknown,
  observed: unknown,
  changes: Change[] | null | undefined,
  fieldPaths?: Record<string, string> | null,
): AlignedRow[] {
  const obs = isObj(observed) ? observed : null;
  const des = isObj(desired) ? desired : null;
  // A Network's keys are under "interface", an SDN zone's or vnet's under "config",
  // a cluster-wide collection's item under its noun ({"security group": {…}}), with its
  // nested list beside it when it has one ("rules": […]).
  const { config, pending, interface: iface, ...facts } = obs ?? {};
  const objects = Object.values(facts).filter(isObj);
  const lists = Object.entries(facts).filter(([, v]) => Array.isArray(v));
  const item =
    config === undefined && iface === undefined && objects.length === 1 && objects.length + lists.length === Object.keys(facts).length
      ? { ...objects[0], ...Object.fromEntries(lists) }
      : null;
  const cfg: Obj = isObj(config) ? config : item ? item : obs ? { ...facts, ...(isObj(iface) ? iface : {}) } : {};
  const pend: Obj = isObj(pending) ? pending : {};
  // Facts beside the config: the power state and where the guest is.
  const extra: Obj = isObj(config) ? { state: facts.status, node: facts.node, vmid: facts.vmid } : {};
  const rows = new Map<string, AlignedRow>();
  const keyOf = (f: string) => f.toLowerCase();
  if (des) {
    for (const w of wanted(des, { ...cfg }, kind)) {
      const key = fieldKey(fieldPaths, w.path, cfg, changes ?? []);
      if (key) {
        w.field = key;
        if (w.group === 'manifest only') w.group = undefined;
      }
      rows.set(keyOf(w.field), { field: w.field, path: w.path, group: w.group ?? groupOf(w.field), desired: w.value, observed: null, changed: false });
    }
  }
  if (obs) {
    for (const [k, v] of Object.entries({ ...cfg, ...extra })) {
      if (k === 'digest' || v === undefined || v === null) continue;
      const row = rows.get(keyOf(k));
      const lines = observedLines(k, v, pend);
      if (row) {
        if (row.group !== 'manifest only') row.observed = lines;
      } else rows.set(keyOf(k), { field: k, group: des ? 'not in the manifest' : groupOf(k), desired: null, observed: lines, changed: false });
    }
  }
  for (const c of changes ?? []) {
    const k = keyOf(c.field);
    const row = rows.get(k) ?? { field: c.field, group: groupOf(c.field), desired: null, observed: null, changed: true };
    row.changed = true;
    row.change = c;
    row.path ??= c.path;
    if (row.group === 'not in the manifest' || row.group === 'manifest only') row.group = groupOf(c.field);
    if (row.desired === null && c.to) row.desired = [c.to];
    if (row.observed === null && c.from) row.observed = [c.from];
    rows.set(k, row);
  }
  const natural = (a: string, b: string) => a.localeCompare(b, undefined, { numeric: true });
  return [...rows.values()].sort((a, b) => {
    const g = GROUPS.indexOf(a.group) - GROUPS.indexOf(b.group);
    if (g) return g;
    // Slots in order (net0, net1, net10); the general group keeps the manifest's order.
    return a.group === 'general' ? 0 : natural(a.field, b.field);
  });
}

// toYAML writes a JSON value as YAML, for the live config as Proxmox answers it.
export function toYAML(v: unknown, indent = ''): string {
  const quote = (s: string) =>
    s === '' || /^[\s-?:,[\]{}#&*!|>'"%@`]|[:#]\s|\s$|^(true|false|null|yes|no|~|[-+]?\d[\d._]*)$/i.test(s) || s.includes('\n')
      ? JSON.stringify(s)
      : s;
  if (Array.isArray(v)) {
    if (v.length === 0) return '[]';
    return v.map((x) => `\n${indent}- ${isObj(x) || Array.isArray(x) ? toYAML(x, indent + '  ').trimStart() : toYAML(x, indent + '  ')}`).join('');
  }
  if (isObj(v)) {
    const keys = Object.keys(v);
    if (keys.length === 0) return '{}';
    return keys
      .map((k) => {
        const x = v[k];
        const body = isObj(x) || (Array.isArray(x) && x.length) ? toYAML(x, indent + '  ') : ` ${toYAML(x, indent + '  ')}`;
        return `\n${indent}${quote(k)}:${body}`;
      })
      .join('');
  }
  if (typeof v === 'string') return quote(v);
  if (v === null || v === undefined) return 'null';
  return String(v);
}

// yaml is a whole YAML document of v.
export function yaml(v: unknown): string {
  return `${toYAML(v).replace(/^\n/, '')}\n`;
}
