import { describe, expect, test } from 'vitest';
import type { Resource, Summary } from '../api/types';
import { countByStatus, initialResourceState, parseEvent, reduceResources, type ResourceState } from './resources';
import { partial } from '../test/partial';

const res = (name: string, over: Partial<Resource> = {}): Resource => (partial({
  kind: 'VirtualMachine',
  name,
  status: 'Synced',
  updatedAt: '2026-11-30T10:00:00Z',
  ...over,
}));
const summary = (resources: Resource[]): Summary => (partial({ revision: 'abc', revisionMessage: 'msg', lastPass: '2026-11-30T10:00:00Z', resources }));

function loaded(resources: Resource[]): ResourceState {
  return reduceResources(initialResourceState, [{ type: 'snapshot', summary: summary(resources) }]);
}

describe('resource store', () => {
  test('a snapshot loads everything', () => {
    const s = loaded([res('a'), res('b')]);
    expect(s.loaded).toBe(true);
    expect([...s.byKey.keys()]).toEqual(['VirtualMachine/a', 'VirtualMachine/b']);
    expect(s.revision).toBe('abc');
  });

  test('a resource event replaces only that resource and keeps the others identical', () => {
    const s = loaded([res('a'), res('b')]);
    const a = s.byKey.get('VirtualMachine/a');
    const next = reduceResources(s, [{ type: 'resource', resource: res('b', { status: 'OutOfSync', updatedAt: '2026-11-30T10:00:05Z' }) }]);
    expect(next.byKey.get('VirtualMachine/a')).toBe(a);
    expect(next.byKey.get('VirtualMachine/b')?.status).toBe('OutOfSync');
    // A status change does not change the structure: the graph keeps its layout.
    expect(next.structureVersion).toBe(s.structureVersion);
  });

  test('an event older than what is held is ignored', () => {
    const s = loaded([res('a', { status: 'OutOfSync', updatedAt: '2026-11-30T10:00:10Z' })]);
    const next = reduceResources(s, [{ type: 'resource', resource: res('a', { status: 'Synced', updatedAt: '2026-11-30T10:00:05Z' }) }]);
    expect(next).toBe(s);
  });

  test('an identical event changes nothing', () => {
    const s = loaded([res('a')]);
    expect(reduceResources(s, [{ type: 'resource', resource: res('a') }])).toBe(s);
  });

  test('a new resource and a deletion change the structure', () => {
    const s = loaded([res('a')]);
    const added = reduceResources(s, [{ type: 'resource', resource: res('c') }]);
    expect(added.byKey.size).toBe(2);
    expect(added.structureVersion).toBe(s.structureVersion + 1);
    const deleted = reduceResources(added, [{ type: 'deleted', kind: 'VirtualMachine', name: 'a' }]);
    expect([...deleted.byKey.keys()]).toEqual(['VirtualMachine/c']);
    expect(deleted.structureVersion).toBe(added.structureVersion + 1);
    expect(reduceResources(deleted, [{ type: 'deleted', kind: 'VirtualMachine', name: 'gone' }])).toBe(deleted);
  });

  test('a new snapshot keeps the identity of unchanged resources', () => {
    const s = loaded([res('a'), res('b')]);
    const next = reduceResources(s, [{ type: 'snapshot', summary: summary([res('a'), res('b', { status: 'Failed' })]) }]);
    expect(next.byKey.get('VirtualMachine/a')).toBe(s.byKey.get('VirtualMachine/a'));
    expect(next.byKey.get('VirtualMachine/b')?.status).toBe('Failed');
    expect(next.structureVersion).toBe(s.structureVersion);
  });

  test('a pass updates the revision and clears a source error', () => {
    const s = reduceResources(loaded([]), [{ type: 'pass', pass: partial({ revision: 'abc', sourceError: 'clone failed' }) }]);
    expect(s.sourceError).toBe('clone failed');
    const next = reduceResources(s, [{ type: 'pass', pass: partial({ revision: 'def', lastPass: '2026-11-30T11:00:00Z' }) }]);
    expect(next.revision).toBe('def');
    expect(next.sourceError).toBe('');
    expect(next.lastPass).toBe('2026-11-30T11:00:00Z');
    expect(next.revisionMessage).toBe('');
  });

  test('the head\'s load error comes with snapshots and passes, and a pass without one (an older daemon) keeps it', () => {
    const loadError = { revision: 'bad', errors: ['vms/a.yaml:4:8: unknown field coers'] };
    const s = reduceResources(initialResourceState, [{ type: 'snapshot', summary: { ...summary([]), loadError } }]);
    expect(s.loadError).toEqual(loadError);
    const older = reduceResources(s, [{ type: 'pass', pass: partial({ revision: 'abc' }) }]);
    expect(older.loadError).toEqual(loadError);
    const fixed = reduceResources(older, [{ type: 'pass', pass: partial({ revision: 'def', loadError: null }) }]);
    expect(fixed.loadError).toBeNull();
    const again = reduceResources(fixed, [{ type: 'pass', pass: partial({ revision: 'def', loadError }) }]);
    expect(again.loadError).toEqual(loadError);
  });

  test('a batch applies in order', () => {
    const s = reduceResources(loaded([]), [
      { type: 'resource', resource: res('a', { status: 'Progressing' }) },
      { type: 'resource', resource: res('a', { status: 'Synced', updatedAt: '2026-11-30T10:01:00Z' }) },
    ]);
    expect(s.byKey.get('VirtualMachine/a')?.status).toBe('Synced');
  });

  test('counts by status cover every status', () => {
    expect(countByStatus([res('a'), res('b', { status: 'Failed' }), res('c', { status: 'Weird' as never })])).toEqual({
      Synced: 1,
      OutOfSync: 0,
      Progressing: 0,
      Failed: 1,
      Conflict: 0,
      Unknown: 1,
    });
  });
});

describe('SSE messages', () => {
  test.each([
    ['resource', '{"kind":"Iso","name":"x","status":"Synced"}', 'resource'],
    ['deleted', '{"kind":"Iso","name":"x"}', 'deleted'],
    ['pass', '{"revision":"abc"}', 'pass'],
    ['snapshot', '{"revision":"abc","resources":[]}', 'snapshot'],
  ])('%s is understood', (type, data, want) => {
    expect(parseEvent(type, data)?.type).toBe(want);
  });

  test.each([
    ['resource', 'not json'],
    ['resource', '{"name":"x"}'],
    ['snapshot', '{"revision":"abc"}'],
    ['deleted', 'null'],
    ['something-new', '{}'],
  ])('%s %s is ignored', (type, data) => {
    expect(parseEvent(type, data)).toBeNull();
  });
});

describe('several clusters', () => {
  test('the same kind/name in two clusters are two resources; a deletion in one leaves the other', () => {
    let s = reduceResources(initialResourceState, [
      { type: 'snapshot', summary: { ...summary([res('app', { cluster: 'home' }), res('app', { cluster: 'office' })]), clusters: [partial({ name: 'office', revision: 'abc' }), partial({ name: 'home', revision: 'abc' })] } },
    ]);
    expect([...s.byKey.keys()]).toEqual(['home:VirtualMachine/app', 'office:VirtualMachine/app']);
    expect(s.clusters).toEqual(['office', 'home']);
    s = reduceResources(s, [{ type: 'resource', resource: res('app', { cluster: 'office', status: 'Failed', updatedAt: '2026-11-30T10:00:01Z' }) }]);
    expect(s.byKey.get('home:VirtualMachine/app')?.status).toBe('Synced');
    expect(s.byKey.get('office:VirtualMachine/app')?.status).toBe('Failed');
    const del = parseEvent('deleted', JSON.stringify({ cluster: 'office', kind: 'VirtualMachine', name: 'app' }));
    expect(del).toEqual({ type: 'deleted', cluster: 'office', kind: 'VirtualMachine', name: 'app' });
    s = reduceResources(s, [del!]);
    expect([...s.byKey.keys()]).toEqual(['home:VirtualMachine/app']);
  });

  test('the single cluster section keeps the kind/name keys links were made with', () => {
    const s = loaded([res('a', { cluster: 'default' })]);
    expect([...s.byKey.keys()]).toEqual(['VirtualMachine/a']);
    expect(s.clusters).toEqual([]);
  });
});

test('a cluster\'s pass does not clear another cluster\'s source error', () => {
  let s = reduceResources(initialResourceState, [
    {
      type: 'snapshot',
      summary: { ...summary([res('a', { cluster: 'lab-1' })]), sourceError: 'lab-2: observing the cluster failed', clusters: [partial({ name: 'lab-1', revision: 'abc' }), partial({ name: 'lab-2', revision: 'abc', sourceError: 'observing the cluster failed' })] },
    },
  ]);
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-1', revision: 'abc', sourceError: '' }) }]);
  expect(s.sourceError).toBe('lab-2: observing the cluster failed');
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-1', revision: 'abc', sourceError: 'git: no such branch' }) }]);
  expect(s.sourceError).toBe('lab-1: git: no such branch; lab-2: observing the cluster failed');
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-2', revision: 'abc', sourceError: '' }) }, { type: 'pass', pass: partial({ cluster: 'lab-1', revision: 'abc', sourceError: '' }) }]);
  expect(s.sourceError).toBe('');
});

test('a cluster\'s pass does not clear another cluster\'s cluster error, kept apart from the source error', () => {
  let s = reduceResources(initialResourceState, [
    {
      type: 'snapshot',
      summary: {
        ...summary([res('a', { cluster: 'lab-1' })]),
        clusterError: 'lab-2: observing the cluster failed',
        lastObserved: '2026-12-01T09:00:00Z',
        clusters: [
          partial({ name: 'lab-1', revision: 'abc', lastObserved: '2026-12-01T10:00:00Z' }),
          partial({ name: 'lab-2', revision: 'abc', clusterError: 'observing the cluster failed', lastObserved: '2026-12-01T09:00:00Z' }),
        ],
      },
    },
  ]);
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-1', revision: 'abc', sourceError: '', clusterError: '', lastObserved: '2026-12-01T10:01:00Z' }) }]);
  expect(s.clusterError).toBe('lab-2: observing the cluster failed');
  expect(s.sourceError).toBe('');
  expect(s.lastObserved).toBe('2026-12-01T09:00:00Z');
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-2', revision: 'abc', sourceError: '', clusterError: '', lastObserved: '2026-12-01T10:02:00Z' }) }]);
  expect(s.clusterError).toBe('');
  expect(s.lastObserved).toBe('2026-12-01T10:01:00Z');
});

test('each cluster keeps its own revision, pin and load error; a pass of one leaves the other’s', () => {
  const pin = { revision: 'old', message: 'one core', by: 'admin' };
  let s = reduceResources(initialResourceState, [
    {
      type: 'snapshot',
      summary: {
        ...summary([res('a', { cluster: 'lab-1' }), res('b', { cluster: 'lab-2' })]),
        clusters: [
          partial({ name: 'lab-1', revision: 'head', revisionMessage: 'two cores', lastPass: '2026-12-01T10:00:00Z', passDurationMs: 12 }),
          partial({ name: 'lab-2', revision: 'old', revisionMessage: 'one core', lastPass: '2026-12-01T10:00:01Z', pinned: partial(pin) }),
        ],
      },
    },
  ]);
  expect(s.clusterPasses['lab-1']).toEqual({ revision: 'head', revisionMessage: 'two cores', lastPass: '2026-12-01T10:00:00Z', passDurationMs: 12, pinned: null, loadError: null });
  expect(s.clusterPasses['lab-2'].pinned).toEqual(pin);
  const broken = { revision: 'bad', errors: ['vms/a.yaml:1:1: x'] };
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-1', revision: 'head', lastPass: '2026-12-01T10:01:00Z', loadError: broken, pinned: null }) }]);
  expect(s.clusterPasses['lab-1']).toEqual({ revision: 'head', revisionMessage: 'two cores', lastPass: '2026-12-01T10:01:00Z', passDurationMs: 12, pinned: null, loadError: broken });
  expect(s.clusterPasses['lab-2'].pinned).toEqual(pin);
  expect(s.clusterPasses['lab-2'].loadError).toBeNull();
  // A new revision without its message is not given the old one's.
  s = reduceResources(s, [{ type: 'pass', pass: partial({ cluster: 'lab-2', revision: 'new', pinned: null }) }]);
  expect(s.clusterPasses['lab-2']).toMatchObject({ revision: 'new', revisionMessage: '', pinned: null });
});
