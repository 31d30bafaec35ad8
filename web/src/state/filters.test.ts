import { describe, expect, test } from 'vitest';
import type { Resource } from '../api/types';
import { applyFilters, clusterChoices, defaultFilters, effectiveFilters, facetValues, matchesFilters, parseFilters, resourceCluster, writeFilters } from './filters';
import { partial } from '../test/partial';

const r = (over: Partial<Resource>): Resource => (partial({ kind: 'VirtualMachine', name: 'app-01', status: 'Synced', ...over }));

describe('URL state', () => {
  test.each([
    ['', defaultFilters],
    ['?kind=VirtualMachine,Container&status=OutOfSync', { ...defaultFilters, kind: ['VirtualMachine', 'Container'], status: ['OutOfSync'] }],
    ['?kind=Iso&kind=Network&kind=Iso', { ...defaultFilters, kind: ['Iso', 'Network'] }],
    ['?status=Bogus,Failed', { ...defaultFilters, status: ['Failed'] }],
    ['?group=node&view=cards&drift=1&hl=Conflict&q=app%2001', { ...defaultFilters, group: 'node', view: 'cards', driftOnly: true, highlight: 'Conflict', q: 'app 01' }],
    ['?group=nonsense&view=table&hl=Nope&drift=yes', defaultFilters],
  ])('parse %s', (search, want) => {
    expect(parseFilters(search)).toEqual(want);
  });

  test('writing leaves defaults out and keeps parameters it does not own', () => {
    const p = writeFilters({ ...defaultFilters, tag: ['prod', 'db'], q: 'x' }, '?r=VirtualMachine%2Fapp-01&kind=Old');
    expect(p.get('r')).toBe('VirtualMachine/app-01');
    expect(p.get('kind')).toBeNull();
    expect(p.get('tag')).toBe('prod,db');
    expect(p.get('view')).toBeNull();
    expect(p.get('group')).toBeNull();
  });

  test('a written URL reads back the same filters', () => {
    const f = { ...defaultFilters, kind: ['Iso'], status: ['Failed' as const], node: ['pve1'], tag: ['a'], q: 'db', group: 'tag' as const, view: 'cards' as const, driftOnly: true, highlight: 'Synced' as const };
    expect(parseFilters(writeFilters(f))).toEqual(f);
  });
});

describe('matching', () => {
  const vm = r({ node: 'pve1', vmid: 120, tags: ['prod', 'app'], status: 'OutOfSync', reason: 'cores differ' });
  test.each([
    [{}, true],
    [{ kind: ['Container'] }, false],
    [{ kind: ['Container', 'VirtualMachine'] }, true],
    [{ status: ['Synced' as const] }, false],
    [{ node: ['pve1'] }, true],
    [{ node: ['pve2'] }, false],
    [{ tag: ['db', 'app'] }, true],
    [{ tag: ['db'] }, false],
    [{ q: 'APP pve1' }, true],
    [{ q: 'app pve2' }, false],
    [{ q: '120' }, true],
    [{ q: 'cores' }, true],
    [{ driftOnly: true }, true],
  ])('%o → %s', (patch, want) => {
    expect(matchesFilters(vm, { ...defaultFilters, ...patch })).toBe(want);
  });

  test('drift only hides synced resources', () => {
    expect(matchesFilters(r({ status: 'Synced' }), { ...defaultFilters, driftOnly: true })).toBe(false);
  });

  test('results are sorted by kind then name', () => {
    const out = applyFilters([r({ name: 'b' }), r({ kind: 'Container', name: 'z' }), r({ name: 'a' })], defaultFilters);
    expect(out.map((x) => `${x.kind}/${x.name}`)).toEqual(['Container/z', 'VirtualMachine/a', 'VirtualMachine/b']);
  });

  test('facets list the values present, sorted', () => {
    expect(facetValues([r({ node: 'pve2', tags: ['b'] }), r({ kind: 'Iso', node: 'pve1', tags: ['a', 'b'] }), r({})])).toEqual({
      cluster: ['default'],
      kind: ['Iso', 'VirtualMachine'],
      node: ['pve1', 'pve2'],
      tag: ['a', 'b'],
    });
  });
});

describe('clusters', () => {
  const home = r({ cluster: 'home', node: 'pve1' });
  const office = r({ cluster: 'office', node: 'pve1' });

  test('the cluster filter and grouping live in the URL with the other filters', () => {
    const f = { ...defaultFilters, cluster: ['office', 'home'], group: 'cluster' as const };
    const p = writeFilters(f, '?r=office%3AVirtualMachine%2Fapp-01');
    expect(p.get('cluster')).toBe('office,home');
    expect(p.get('group')).toBe('cluster');
    expect(p.get('r')).toBe('office:VirtualMachine/app-01');
    expect(parseFilters(p)).toEqual(f);
    expect(parseFilters('?cluster=home&cluster=home,lab')).toEqual({ ...defaultFilters, cluster: ['home', 'lab'] });
  });

  test.each([
    [[], true, true],
    [['home'], true, false],
    [['office'], false, true],
    [['home', 'office'], true, true],
    [['lab'], false, false],
  ])('filter %o: home %s, office %s', (cluster, wantHome, wantOffice) => {
    const f = { ...defaultFilters, cluster };
    expect([matchesFilters(home, f), matchesFilters(office, f)]).toEqual([wantHome, wantOffice]);
  });

  test('a resource without a cluster is the single cluster section\'s, "default"', () => {
    expect(resourceCluster(r({}))).toBe('default');
    expect(matchesFilters(r({}), { ...defaultFilters, cluster: ['default'] })).toBe(true);
    expect(matchesFilters(r({}), { ...defaultFilters, q: 'default app' })).toBe(true);
  });

  test('the same kind/name in two clusters are two results, in cluster order', () => {
    expect(applyFilters([office, home], defaultFilters).map(resourceCluster)).toEqual(['home', 'office']);
  });

  test('choices: the daemon\'s clusters in configuration order, then others named by a resource', () => {
    expect(clusterChoices(['office', 'home'], [home, r({ cluster: 'lab' }), office])).toEqual(['office', 'home', 'lab']);
    expect(clusterChoices([], [r({}), r({ name: 'b' })])).toEqual(['default']);
  });

  test('with one cluster a cluster filter or grouping from a link is dropped, not hiding everything', () => {
    const f = { ...defaultFilters, cluster: ['home'], group: 'cluster' as const, kind: ['Iso'] };
    expect(effectiveFilters(f, ['default'])).toEqual({ ...defaultFilters, kind: ['Iso'] });
    expect(effectiveFilters(f, ['home', 'office'])).toBe(f);
    expect(effectiveFilters({ ...defaultFilters, group: 'node' }, ['default']).group).toBe('node');
  });
});
