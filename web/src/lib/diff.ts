// Field-by-field comparison of the desired manifest and the observed cluster state,
// for the detail drawer. The engine already says which fields differ (`changes`);
// this module flattens both documents into rows and marks the rows those changes
// are about, on both sides, so the eye finds them at once.

import type { Change } from '../api/types';

export interface FlatRow {
  path: string;
  value: string;
  depth: number;
  // Set on a row that is a parent object or list: no value of its own.
  isParent: boolean;
}

export type Mark = 'changed' | 'none';

export interface MarkedRow extends FlatRow {
  mark: Mark;
  change?: Change;
}

export function formatValue(v: unknown): string {
  if (v === null || v === undefined) return '—';
  if (typeof v === 'string') return v;
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

// flatten turns a JSON value into rows with dotted paths; lists use [i].
export function flatten(value: unknown, prefix = '', depth = 0, out: FlatRow[] = []): FlatRow[] {
  if (value !== null && typeof value === 'object') {
    const entries = Array.isArray(value)
      ? value.map((v, i) => [`[${i}]`, v] as const)
      : Object.entries(value as Record<string, unknown>);
    if (prefix) {
      if (entries.length === 0) {
        out.push({ path: prefix, value: Array.isArray(value) ? '[]' : '{}', depth, isParent: false });
        return out;
      }
      // A list of scalars reads best on one line.
      if (Array.isArray(value) && value.every((v) => v === null || typeof v !== 'object')) {
        out.push({ path: prefix, value: value.map(formatValue).join(', '), depth, isParent: false });
        return out;
      }
      out.push({ path: prefix, value: '', depth, isParent: true });
    }
    for (const [k, v] of entries) {
      const path = prefix ? (k.startsWith('[') ? `${prefix}${k}` : `${prefix}.${k}`) : k;
      flatten(v, path, prefix ? depth + 1 : depth, out);
    }
    return out;
  }
  out.push({ path: prefix, value: formatValue(value), depth, isParent: false });
  return out;
}

// normalise strips the document-level prefix so `spec.cores`, `config.cores` and the
// change field `cores` compare equal, and writes list indexes as dotted segments.
export function normalisePath(path: string): string {
  return path
    .replace(/\[(\d+)\]/g, '.$1')
    .replace(/^(spec|config|metadata|pending)\./, '')
    .toLowerCase();
}

// changeFor finds the change a row is about: the same field, a field inside it
// (a parent row contains a change), or the row being inside the changed field
// (`disks.scsi0.size` inside a change on `disks.scsi0`).
export function changeFor(path: string, changes: Change[]): Change | undefined {
  const p = normalisePath(path);
  let best: Change | undefined;
  for (const c of changes) {
    const f = normalisePath(c.field);
    if (p === f) return c;
    if (p.startsWith(f + '.') || f.startsWith(p + '.')) best ??= c;
  }
  return best;
}

export function markRows(rows: FlatRow[], changes: Change[] | null | undefined): MarkedRow[] {
  const list = changes ?? [];
  return rows.map((row) => {
    const change = list.length ? changeFor(row.path, list) : undefined;
    return { ...row, mark: change ? 'changed' : 'none', change };
  });
}

// unmatchedChanges lists the changes no row of either side shows, so the drawer can
// still list them (a field the cluster lacks entirely, for example).
export function unmatchedChanges(changes: Change[] | null | undefined, ...sides: FlatRow[][]): Change[] {
  return (changes ?? []).filter(
    (c) => !sides.some((rows) => rows.some((r) => normalisePath(r.path) === normalisePath(c.field))),
  );
}

// leafName is the last segment of a path, as shown indented under its parent.
export function leafName(path: string): string {
  const m = /(\[\d+\]|[^.[\]]+)$/.exec(path);
  return m ? m[1] : path;
}
