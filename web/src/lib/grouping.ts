// Grouping of resources for the card view and the graph's middle tier.

import type { Resource, Status } from '../api/types';
import { resourceCluster, type GroupBy } from '../state/filters';
import { countByStatus } from '../state/resources';

export const NO_NODE = '(no node)';
export const NO_TAG = '(untagged)';

export interface Group {
  key: string;
  label: string;
  resources: Resource[];
  counts: Record<Status, number>;
}

export function groupKeys(r: Resource, by: GroupBy): string[] {
  switch (by) {
    case 'kind':
      return [r.kind];
    case 'node':
      return [r.node || NO_NODE];
    case 'cluster':
      return [resourceCluster(r)];
    case 'tag':
      return r.tags && r.tags.length ? [...new Set(r.tags)] : [NO_TAG];
  }
}

// groupResources keeps the input order inside each group; groups are sorted by name
// with the catch-all group last. With `tag`, a resource is in each of its tags' groups.
export function groupResources(resources: Resource[], by: GroupBy): Group[] {
  const map = new Map<string, Resource[]>();
  for (const r of resources) {
    for (const k of groupKeys(r, by)) {
      let g = map.get(k);
      if (!g) map.set(k, (g = []));
      g.push(r);
    }
  }
  const catchAll = by === 'node' ? NO_NODE : by === 'tag' ? NO_TAG : '';
  return [...map.entries()]
    .sort(([a], [b]) => (a === catchAll ? 1 : b === catchAll ? -1 : a.localeCompare(b)))
    .map(([key, rs]) => ({ key, label: key, resources: rs, counts: countByStatus(rs) }));
}
