// Overview filters, kept in the URL query so that a view can be shared as a link.

import type { Resource, Status } from '../api/types';
import { DEFAULT_CLUSTER, STATUSES } from '../api/types';

export type GroupBy = 'kind' | 'node' | 'tag' | 'cluster';
export type ViewMode = 'graph' | 'cards';

export interface Filters {
  // Clusters of a clusters list (resourceCluster's names); empty: every cluster.
  cluster: string[];
  kind: string[];
  status: Status[];
  node: string[];
  tag: string[];
  q: string;
  group: GroupBy;
  view: ViewMode;
  driftOnly: boolean;
  highlight: Status | '';
}

export const defaultFilters: Filters = {
  cluster: [],
  kind: [],
  status: [],
  node: [],
  tag: [],
  q: '',
  group: 'kind',
  view: 'graph',
  driftOnly: false,
  highlight: '',
};

function list(params: URLSearchParams, key: string): string[] {
  const out: string[] = [];
  for (const v of params.getAll(key)) {
    for (const part of v.split(',')) {
      const t = part.trim();
      if (t && !out.includes(t)) out.push(t);
    }
  }
  return out;
}

function isStatus(s: string): s is Status {
  return (STATUSES as readonly string[]).includes(s);
}

export function parseFilters(search: string | URLSearchParams): Filters {
  const p = typeof search === 'string' ? new URLSearchParams(search) : search;
  const group = p.get('group');
  const view = p.get('view');
  const hl = p.get('hl') ?? '';
  return {
    cluster: list(p, 'cluster'),
    kind: list(p, 'kind'),
    status: list(p, 'status').filter(isStatus),
    node: list(p, 'node'),
    tag: list(p, 'tag'),
    q: p.get('q') ?? '',
    group: group === 'node' || group === 'tag' || group === 'cluster' ? group : 'kind',
    view: view === 'cards' ? 'cards' : 'graph',
    driftOnly: p.get('drift') === '1',
    highlight: isStatus(hl) ? hl : '',
  };
}

// writeFilters returns the query with the filters set, keeping parameters it does not
// own (such as the open drawer's `r`). Defaults are left out so links stay short.
export function writeFilters(f: Filters, base: string | URLSearchParams = ''): URLSearchParams {
  const p = new URLSearchParams(base);
  for (const k of ['cluster', 'kind', 'status', 'node', 'tag', 'q', 'group', 'view', 'drift', 'hl']) p.delete(k);
  if (f.cluster.length) p.set('cluster', f.cluster.join(','));
  if (f.kind.length) p.set('kind', f.kind.join(','));
  if (f.status.length) p.set('status', f.status.join(','));
  if (f.node.length) p.set('node', f.node.join(','));
  if (f.tag.length) p.set('tag', f.tag.join(','));
  if (f.q) p.set('q', f.q);
  if (f.group !== 'kind') p.set('group', f.group);
  if (f.view !== 'graph') p.set('view', f.view);
  if (f.driftOnly) p.set('drift', '1');
  if (f.highlight) p.set('hl', f.highlight);
  return p;
}

export function isDrifted(r: Resource): boolean {
  return r.status !== 'Synced';
}

// resourceCluster names a resource's cluster ("default" for the single
// cluster section and for older daemons, which name none).
export function resourceCluster(r: { cluster?: string }): string {
  return r.cluster || DEFAULT_CLUSTER;
}

function haystack(r: Resource): string {
  return [resourceCluster(r), r.kind, r.name, r.node ?? '', r.vmid ?? '', ...(r.tags ?? []), r.reason ?? '', r.file ?? '', r.status, r.health ?? '']
    .join(' ')
    .toLowerCase();
}

// matchesFilters: every filter that is set must match; values within one filter are
// alternatives. Search terms separated by spaces must all appear.
export function matchesFilters(r: Resource, f: Filters): boolean {
  if (f.cluster.length && !f.cluster.includes(resourceCluster(r))) return false;
  if (f.kind.length && !f.kind.includes(r.kind)) return false;
  if (f.status.length && !f.status.includes(r.status)) return false;
  if (f.node.length && !f.node.includes(r.node ?? '')) return false;
  if (f.tag.length && !(r.tags ?? []).some((t) => f.tag.includes(t))) return false;
  if (f.driftOnly && !isDrifted(r)) return false;
  const terms = f.q.toLowerCase().split(/\s+/).filter(Boolean);
  if (terms.length) {
    const h = haystack(r);
    if (!terms.every((t) => h.includes(t))) return false;
  }
  return true;
}

export function applyFilters(resources: Iterable<Resource>, f: Filters): Resource[] {
  const out: Resource[] = [];
  for (const r of resources) if (matchesFilters(r, f)) out.push(r);
  out.sort(compareResources);
  return out;
}

export function compareResources(a: Resource, b: Resource): number {
  return a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name) || resourceCluster(a).localeCompare(resourceCluster(b));
}

// facetValues lists the values present, for the filter menus.
export function facetValues(resources: Iterable<Resource>): { cluster: string[]; kind: string[]; node: string[]; tag: string[] } {
  const cluster = new Set<string>();
  const kind = new Set<string>();
  const node = new Set<string>();
  const tag = new Set<string>();
  for (const r of resources) {
    cluster.add(resourceCluster(r));
    kind.add(r.kind);
    if (r.node) node.add(r.node);
    for (const t of r.tags ?? []) tag.add(t);
  }
  const sorted = (s: Set<string>) => [...s].sort((a, b) => a.localeCompare(b));
  return { cluster: sorted(cluster), kind: sorted(kind), node: sorted(node), tag: sorted(tag) };
}

export function toggle<T>(values: T[], v: T): T[] {
  return values.includes(v) ? values.filter((x) => x !== v) : [...values, v];
}

// clusterChoices lists the clusters the filter and grouping offer: the daemon's
// (in configuration order, so a cluster with nothing declared is there too),
// then any other a resource names. With fewer than two there is nothing to choose.
export function clusterChoices(configured: readonly string[], resources: Iterable<{ cluster?: string }>): string[] {
  const out = [...configured];
  const extra = new Set<string>();
  for (const r of resources) {
    const c = resourceCluster(r);
    if (!out.includes(c)) extra.add(c);
  }
  return [...out, ...[...extra].sort((a, b) => a.localeCompare(b))];
}

// effectiveFilters drops what a single-cluster view does not offer: a cluster
// filter or grouping left in a shared link must not hide everything.
export function effectiveFilters(f: Filters, clusters: readonly string[]): Filters {
  if (clusters.length > 1) return f;
  if (!f.cluster.length && f.group !== 'cluster') return f;
  return { ...f, cluster: [], group: f.group === 'cluster' ? 'kind' : f.group };
}
