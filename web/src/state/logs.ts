import { LOG_LEVELS, resourceKey, type LogLine } from '../api/types';
import { isCommit, isResourceKey } from '../lib/links';

// The levels of a log line, least severe first (api.LogLevels).
export const LEVELS = LOG_LEVELS;
export const MAX_LINES = 5000;

export function levelRank(level: string): number {
  const i = (LEVELS as readonly string[]).indexOf(level.toUpperCase());
  return i < 0 ? 1 : i;
}

// appendLines adds lines in id order, dropping ones already held (the initial fetch
// and the stream overlap) and keeping at most `max`.
export function appendLines(held: LogLine[], incoming: LogLine[], max = MAX_LINES): LogLine[] {
  if (incoming.length === 0) return held;
  const lastId = held.length ? held[held.length - 1].id : -Infinity;
  const fresh = incoming.filter((l) => l.id > lastId);
  if (fresh.length === 0) return held;
  fresh.sort((a, b) => a.id - b.id);
  const out = held.concat(fresh);
  return out.length > max ? out.slice(out.length - max) : out;
}

export function attrsText(attrs: LogLine['attrs']): string {
  if (!attrs) return '';
  return Object.entries(attrs)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
}

// LogRefs splits a line's attributes into the resource and the commit it
// names (shown as links) and the rest (shown as text).
export interface LogRefs {
  resource: string | null;
  // The resource's UI key (resourceKey): in a clusters list, with the line's cluster.
  key: string | null;
  commit: string | null;
  rest: LogLine['attrs'];
}

export function logRefs(attrs: LogLine['attrs']): LogRefs {
  if (!attrs) return { resource: null, key: null, commit: null, rest: undefined };
  const resource = isResourceKey(attrs.resource) ? attrs.resource : null;
  const commit = isCommit(attrs.commit) ? attrs.commit : null;
  const rest = Object.fromEntries(
    Object.entries(attrs).filter(([k]) => !(k === 'resource' && resource) && !(k === 'commit' && commit)),
  );
  let key: string | null = null;
  if (resource) {
    const slash = resource.indexOf('/');
    key = resourceKey({ cluster: lineCluster(attrs), kind: resource.slice(0, slash), name: resource.slice(slash + 1) });
  }
  return { resource, key, commit, rest: Object.keys(rest).length ? rest : undefined };
}

// lineCluster is the cluster a line is about (its cluster attribute), or "".
export function lineCluster(attrs: LogLine['attrs']): string {
  const c = attrs?.cluster;
  return typeof c === 'string' ? c : '';
}

// lineClusters lists the clusters lines name, sorted.
export function lineClusters(lines: LogLine[]): string[] {
  const s = new Set<string>();
  for (const l of lines) {
    const c = lineCluster(l.attrs);
    if (c) s.add(c);
  }
  return [...s].sort((a, b) => a.localeCompare(b));
}

// filterLines keeps lines at minLevel or above that contain search and, when
// cluster is set, name that cluster.
export function filterLines(lines: LogLine[], minLevel: string, search: string, cluster = ''): LogLine[] {
  const min = levelRank(minLevel);
  const q = search.trim().toLowerCase();
  return lines.filter(
    (l) =>
      levelRank(l.level) >= min &&
      (!cluster || lineCluster(l.attrs) === cluster) &&
      (!q || l.msg.toLowerCase().includes(q) || attrsText(l.attrs).toLowerCase().includes(q)),
  );
}
