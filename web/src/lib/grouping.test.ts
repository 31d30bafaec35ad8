import { expect, test } from 'vitest';
import type { Resource } from '../api/types';
import { groupResources, NO_NODE, NO_TAG } from './grouping';
import { partial } from '../test/partial';

const rs: Resource[] = [
  partial({ kind: 'VirtualMachine', name: 'a', status: 'Synced', node: 'pve2', tags: ['prod', 'db'] }),
  partial({ kind: 'Iso', name: 'b', status: 'Failed', node: 'pve1' }),
  partial({ kind: 'VirtualMachine', name: 'c', status: 'OutOfSync', tags: ['prod'] }),
];

test('by kind', () => {
  const g = groupResources(rs, 'kind');
  expect(g.map((x) => [x.key, x.resources.map((r) => r.name)])).toEqual([
    ['Iso', ['b']],
    ['VirtualMachine', ['a', 'c']],
  ]);
  expect(g[1].counts.Synced).toBe(1);
  expect(g[1].counts.OutOfSync).toBe(1);
});

test('by node, with the node-less group last', () => {
  expect(groupResources(rs, 'node').map((x) => x.key)).toEqual(['pve1', 'pve2', NO_NODE]);
});

test('by tag, a resource is in each of its tags and untagged ones are last', () => {
  const g = groupResources(rs, 'tag');
  expect(g.map((x) => [x.key, x.resources.map((r) => r.name)])).toEqual([
    ['db', ['a']],
    ['prod', ['a', 'c']],
    [NO_TAG, ['b']],
  ]);
});

test('by cluster: one group per cluster, the single cluster section\'s as "default"', () => {
  const two: Resource[] = [
    partial({ cluster: 'office', kind: 'VirtualMachine', name: 'app-01', status: 'Synced' }),
    partial({ cluster: 'home', kind: 'VirtualMachine', name: 'app-01', status: 'Failed' }),
    partial({ cluster: 'home', kind: 'Iso', name: 'debian', status: 'Synced' }),
  ];
  expect(groupResources(two, 'cluster').map((x) => [x.key, x.resources.map((r) => `${r.kind}/${r.name}`), x.counts.Failed])).toEqual([
    ['home', ['VirtualMachine/app-01', 'Iso/debian'], 1],
    ['office', ['VirtualMachine/app-01'], 0],
  ]);
  expect(groupResources(rs, 'cluster').map((x) => x.key)).toEqual(['default']);
});
