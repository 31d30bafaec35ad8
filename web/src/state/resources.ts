// The resource store: the summary document, kept current by the SSE events of
// /api/v1/events. Updates keep the identity of every resource they do not touch,
// so memoised cards and graph nodes re-render only when their own resource changed.

import type { LoadError, PassEvent, Pin, Resource, Status, Summary } from '../api/types';
import { STATUSES, resourceKey } from '../api/types';

export interface ResourceState {
  loaded: boolean;
  revision: string;
  revisionMessage: string;
  lastPass: string;
  passDurationMs: number | null;
  sourceError: string;
  // Why the cluster cannot be observed ("" when it can), joined over the
  // clusters as the daemon does, and when it last was ('' : not yet).
  clusterError: string;
  lastObserved: string;
  // The branch head's load failure (its manifests are invalid), or null.
  loadError: LoadError | null;
  // The revision applied instead of the branch head, or null.
  pinned: Pin | null;
  byKey: Map<string, Resource>;
  // The daemon's clusters in configuration order (a clusters list), else [].
  clusters: string[];
  // Each cluster's own source error (a clusters list): one cluster's pass
  // must not clear another's trouble from the banner.
  clusterErrors: Record<string, string>;
  // Each cluster's own cluster error and last observation (a clusters list).
  clusterDown: Record<string, string>;
  clusterObserved: Record<string, string>;
  // Each cluster's own revision, last pass, pin and load error (a clusters
  // list): the top-level ones are the first cluster's, or merged.
  clusterPasses: Record<string, ClusterPass>;
  // Bumped when a resource is added or removed: the graph layout depends only on it.
  structureVersion: number;
}

// ClusterPass is what one cluster of a clusters list reconciles, as the summary bar shows it.
export interface ClusterPass {
  revision: string;
  revisionMessage: string;
  lastPass: string;
  passDurationMs: number | null;
  loadError: LoadError | null;
  pinned: Pin | null;
}

export type ResourceEvent =
  | { type: 'snapshot'; summary: Summary }
  | { type: 'resource'; resource: Resource }
  | { type: 'pass'; pass: PassEvent & { revisionMessage?: string; passDurationMs?: number } }
  | { type: 'deleted'; cluster?: string; kind: string; name: string };

export const initialResourceState: ResourceState = {
  loaded: false,
  revision: '',
  revisionMessage: '',
  lastPass: '',
  passDurationMs: null,
  sourceError: '',
  clusterError: '',
  lastObserved: '',
  loadError: null,
  pinned: null,
  byKey: new Map(),
  clusters: [],
  clusterErrors: {},
  clusterDown: {},
  clusterObserved: {},
  clusterPasses: {},
  structureVersion: 0,
};

function sameResource(a: Resource, b: Resource): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

// isOlder reports whether an incoming summary predates the one already held, so an
// event that crossed the initial fetch cannot roll a resource back.
function isOlder(incoming: Resource, held: Resource): boolean {
  if (!incoming.updatedAt || !held.updatedAt) return false;
  const a = Date.parse(incoming.updatedAt);
  const b = Date.parse(held.updatedAt);
  return !Number.isNaN(a) && !Number.isNaN(b) && a < b;
}

function applyOne(state: ResourceState, ev: ResourceEvent): ResourceState {
  switch (ev.type) {
    case 'snapshot': {
      const s = ev.summary;
      const byKey = new Map<string, Resource>();
      let structureChanged = (s.resources ?? []).length !== state.byKey.size;
      for (const r of s.resources ?? []) {
        const key = resourceKey(r);
        const prev = state.byKey.get(key);
        if (!prev) structureChanged = true;
        byKey.set(key, prev && sameResource(prev, r) ? prev : r);
      }
      return {
        loaded: true,
        revision: s.revision ?? '',
        revisionMessage: s.revisionMessage ?? '',
        lastPass: s.lastPass ?? '',
        passDurationMs: s.passDurationMs ?? null,
        sourceError: s.sourceError ?? '',
        clusterError: s.clusterError ?? '',
        lastObserved: s.lastObserved ?? '',
        loadError: s.loadError ?? null,
        pinned: s.pinned ?? null,
        byKey,
        clusters: (s.clusters ?? []).map((c) => c.name),
        clusterErrors: Object.fromEntries((s.clusters ?? []).map((c) => [c.name, c.sourceError ?? ''])),
        clusterDown: Object.fromEntries((s.clusters ?? []).map((c) => [c.name, c.clusterError ?? ''])),
        clusterObserved: Object.fromEntries((s.clusters ?? []).map((c) => [c.name, c.lastObserved ?? ''])),
        clusterPasses: Object.fromEntries(
          (s.clusters ?? []).map((c) => [
            c.name,
            {
              revision: c.revision ?? '',
              revisionMessage: c.revisionMessage ?? '',
              lastPass: c.lastPass ?? '',
              passDurationMs: c.passDurationMs ?? null,
              loadError: c.loadError ?? null,
              pinned: c.pinned ?? null,
            },
          ]),
        ),
        structureVersion: structureChanged ? state.structureVersion + 1 : state.structureVersion,
      };
    }
    case 'resource': {
      const r = ev.resource;
      const key = resourceKey(r);
      const prev = state.byKey.get(key);
      if (prev && (sameResource(prev, r) || isOlder(r, prev))) return state;
      const byKey = new Map(state.byKey);
      byKey.set(key, r);
      return { ...state, byKey, structureVersion: prev ? state.structureVersion : state.structureVersion + 1 };
    }
    case 'deleted': {
      const key = resourceKey(ev);
      if (!state.byKey.has(key)) return state;
      const byKey = new Map(state.byKey);
      byKey.delete(key);
      return { ...state, byKey, structureVersion: state.structureVersion + 1 };
    }
    case 'pass': {
      const p = ev.pass;
      let sourceError = p.sourceError ?? '';
      // An older daemon's pass event has no clusterError: keep what is known.
      let clusterError = p.clusterError ?? state.clusterError;
      let lastObserved = p.lastObserved === undefined ? state.lastObserved : (p.lastObserved ?? '');
      let clusterErrors = state.clusterErrors;
      let clusterDown = state.clusterDown;
      let clusterObserved = state.clusterObserved;
      let clusterPasses = state.clusterPasses;
      if (p.cluster && state.clusters.length > 1) {
        clusterErrors = { ...clusterErrors, [p.cluster]: sourceError };
        sourceError = joinClusterErrors(state.clusters, clusterErrors);
        clusterDown = { ...clusterDown, [p.cluster]: clusterError };
        clusterError = joinClusterErrors(state.clusters, clusterDown);
        clusterObserved = { ...clusterObserved, [p.cluster]: lastObserved };
        lastObserved = oldestObservation(state.clusters, clusterObserved);
        const was = clusterPasses[p.cluster];
        clusterPasses = {
          ...clusterPasses,
          [p.cluster]: {
            revision: p.revision ?? was?.revision ?? '',
            revisionMessage: p.revisionMessage ?? (was && p.revision === was.revision ? was.revisionMessage : ''),
            lastPass: p.lastPass ?? was?.lastPass ?? '',
            passDurationMs: p.passDurationMs ?? was?.passDurationMs ?? null,
            loadError: p.loadError === undefined ? (was?.loadError ?? null) : p.loadError,
            pinned: p.pinned === undefined ? (was?.pinned ?? null) : p.pinned,
          },
        };
      }
      return {
        ...state,
        revision: p.revision ?? state.revision,
        revisionMessage: p.revisionMessage ?? (p.revision && p.revision !== state.revision ? '' : state.revisionMessage),
        lastPass: p.lastPass ?? state.lastPass,
        passDurationMs: p.passDurationMs ?? state.passDurationMs,
        sourceError,
        clusterError,
        lastObserved,
        clusterErrors,
        clusterDown,
        clusterObserved,
        clusterPasses,
        // An older daemon's pass event has no loadError: keep what is known.
        loadError: p.loadError === undefined ? state.loadError : p.loadError,
        pinned: p.pinned === undefined ? state.pinned : p.pinned,
      };
    }
  }
}

// joinClusterErrors says each cluster's source or cluster error as the daemon's resource
// list does ("lab-2: observing the cluster failed; ..."), in configuration order.
function joinClusterErrors(order: string[], errs: Record<string, string>): string {
  return order
    .filter((c) => errs[c])
    .map((c) => `${c}: ${errs[c]}`)
    .join('; ');
}

// oldestObservation is the clusters' oldest last observation, as the daemon's
// resource list says it ('' when one was never observed).
function oldestObservation(order: string[], observed: Record<string, string>): string {
  const times = order.map((c) => observed[c] ?? '');
  if (times.some((t) => !t)) return '';
  return times.reduce((a, b) => (Date.parse(b) < Date.parse(a) ? b : a));
}

// reduceResources applies a batch of events at once: SSE events are queued and
// flushed once per animation frame, so a pass touching 1,000 resources costs one render.
export function reduceResources(state: ResourceState, events: ResourceEvent[]): ResourceState {
  let next = state;
  for (const ev of events) next = applyOne(next, ev);
  return next;
}

export function countByStatus(resources: Iterable<Resource>): Record<Status, number> {
  const counts = Object.fromEntries(STATUSES.map((s) => [s, 0])) as Record<Status, number>;
  for (const r of resources) {
    const s = (STATUSES as readonly string[]).includes(r.status) ? r.status : 'Unknown';
    counts[s as Status]++;
  }
  return counts;
}

// parseEvent turns one SSE message of /api/v1/events into a store event, or null
// for a message this UI does not know (a newer daemon may send more).
export function parseEvent(type: string, data: string): ResourceEvent | null {
  let payload: unknown;
  try {
    payload = JSON.parse(data);
  } catch {
    return null;
  }
  if (!payload || typeof payload !== 'object') return null;
  const p = payload as Record<string, unknown>;
  switch (type) {
    case 'snapshot':
      return Array.isArray(p.resources) ? { type: 'snapshot', summary: p as unknown as Summary } : null;
    case 'resource':
      return typeof p.kind === 'string' && typeof p.name === 'string'
        ? { type: 'resource', resource: p as unknown as Resource }
        : null;
    case 'deleted':
      return typeof p.kind === 'string' && typeof p.name === 'string'
        ? { type: 'deleted', kind: p.kind, name: p.name, ...(typeof p.cluster === 'string' && { cluster: p.cluster }) }
        : null;
    case 'pass':
      return { type: 'pass', pass: p as unknown as PassEvent };
    default:
      return null;
  }
}
