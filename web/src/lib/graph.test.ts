import { describe, expect, test } from 'vitest';
import type { Resource } from '../api/types';
import { createLayoutCache, graphGroups, initialViewport, layoutGraph, rowsPerColumn, SIZES, SOURCE_ID } from './graph';

const many = (n: number, kind = 'VirtualMachine'): Resource[] =>
  Array.from({ length: n }, (_, i) => ({ kind, name: `vm-${String(i).padStart(4, '0')}`, status: 'Synced', node: `pve${(i % 3) + 1}` }));

function overlaps(a: { x: number; y: number; width: number; height: number }, b: typeof a): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

describe('graph groups', () => {
  test('by kind or by node, sorted, resource keys sorted', () => {
    const rs: Resource[] = [
      { kind: 'Iso', name: 'b', status: 'Synced', node: 'pve2' },
      { kind: 'Container', name: 'z', status: 'Synced' },
      { kind: 'Iso', name: 'a', status: 'Synced', node: 'pve1' },
    ];
    expect(graphGroups(rs, 'kind')).toEqual([
      { key: 'Container', resourceKeys: ['Container/z'] },
      { key: 'Iso', resourceKeys: ['Iso/a', 'Iso/b'] },
    ]);
    expect(graphGroups(rs, 'node').map((g) => g.key)).toEqual(['(no node)', 'pve1', 'pve2']);
  });
});

describe('layout', () => {
  test('source → groups → resources, one edge per link, left to right', () => {
    const l = layoutGraph(graphGroups([...many(3), ...many(2, 'Iso')], 'kind'));
    expect(l.nodes.filter((n) => n.type === 'source')).toHaveLength(1);
    expect(l.nodes.filter((n) => n.type === 'group')).toHaveLength(2);
    expect(l.nodes.filter((n) => n.type === 'resource')).toHaveLength(5);
    expect(l.edges).toHaveLength(2 + 5);
    expect(l.edges.filter((e) => e.source === SOURCE_ID)).toHaveLength(2);
    const x = (t: string) => Math.min(...l.nodes.filter((n) => n.type === t).map((n) => n.x));
    expect(x('source')).toBeLessThan(x('group'));
    expect(x('group')).toBeLessThan(x('resource'));
  });

  test('no two nodes overlap, even with 1,000 resources', () => {
    const l = layoutGraph(graphGroups([...many(700), ...many(250, 'Container'), ...many(50, 'Iso')], 'kind'));
    const rs = l.nodes.filter((n) => n.type !== 'frame');
    expect(rs).toHaveLength(1 + 3 + 1000);
    const clashes: string[] = [];
    for (let i = 0; i < rs.length; i++) for (let j = i + 1; j < rs.length; j++) if (overlaps(rs[i], rs[j])) clashes.push(`${rs[i].id} ${rs[j].id}`);
    expect(clashes).toEqual([]);
  });

  test('a big group wraps into columns so the graph stays compact', () => {
    const l = layoutGraph(graphGroups(many(1000), 'kind'));
    const rows = rowsPerColumn(1000);
    expect(rows).toBeGreaterThan(SIZES.singleColumnMax);
    expect(l.height).toBeLessThan(rows * (SIZES.resource.height + SIZES.rowGap) + SIZES.source.height + 2 * SIZES.framePadding);
    const columns = new Set(l.nodes.filter((n) => n.type === 'resource').map((n) => n.x));
    expect(columns.size).toBe(Math.ceil(1000 / rows));
  });

  test('a wrapped group sits in a frame, linked by one edge', () => {
    const l = layoutGraph(graphGroups([...many(100), ...many(3, 'Iso')], 'kind'));
    const frames = l.nodes.filter((n) => n.type === 'frame');
    expect(frames.map((f) => f.ref)).toEqual(['VirtualMachine']);
    const f = frames[0];
    const inside = l.nodes.filter((n) => n.type === 'resource' && n.ref.startsWith('VirtualMachine/'));
    expect(inside).toHaveLength(100);
    for (const n of inside) {
      expect(n.x >= f.x && n.y >= f.y && n.x + n.width <= f.x + f.width && n.y + n.height <= f.y + f.height).toBe(true);
    }
    // source → 2 groups, group → frame, Iso group → its 3 resources.
    expect(l.edges).toHaveLength(2 + 1 + 3);
    // Nothing outside the frame overlaps it.
    const others = l.nodes.filter((n) => n !== f && !inside.includes(n));
    expect(others.some((n) => overlaps(n, f))).toBe(false);
  });

  test('a small group stays one column', () => {
    expect(rowsPerColumn(5)).toBe(5);
    const l = layoutGraph(graphGroups(many(5), 'kind'));
    expect(new Set(l.nodes.filter((n) => n.type === 'resource').map((n) => n.x)).size).toBe(1);
  });

  test('the cache lays out again only when the shown resources change', () => {
    const layout = createLayoutCache();
    const rs = many(10);
    const first = layout(graphGroups(rs, 'kind'));
    // The same resources with other statuses: the very same layout object.
    expect(layout(graphGroups(rs.map((r) => ({ ...r, status: 'Failed' as const })), 'kind'))).toBe(first);
    expect(layout(graphGroups(rs.slice(1), 'kind'))).not.toBe(first);
  });

  test('an empty graph is just the source', () => {
    const l = layoutGraph([]);
    expect(l.nodes.map((n) => n.type)).toEqual(['source']);
    expect(l.edges).toEqual([]);
  });
});

describe('first view', () => {
  const view = { width: 1400, height: 660 };
  test('a small graph is shown whole', () => {
    expect(initialViewport({ width: 900, height: 500 }, view)).toEqual({ fit: true });
  });
  test('a tall graph is shown at its full width from the top, readable', () => {
    const v = initialViewport({ width: 1000, height: 2000 }, view);
    expect(v.fit).toBe(false);
    if (!v.fit) {
      expect(v.zoom).toBe(1);
      expect(v.y).toBe(24);
      expect(v.x).toBe(200);
    }
  });
  test('a graph too wide to read anyway is shown whole, as an overview', () => {
    expect(initialViewport({ width: 6000, height: 8000 }, view)).toEqual({ fit: true });
  });
});
