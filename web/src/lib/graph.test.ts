import { describe, expect, test } from 'vitest';
import type { Dependency, Resource } from '../api/types';
import { parseResourceKey, resourceKey } from '../api/types';
import {
  createLayoutCache,
  dependencyEdges,
  dependencyLabel,
  dependencySignature,
  focusEdges,
  frameNodeId,
  graphGroupKey,
  graphGroups,
  aspectBucket,
  DEFAULT_ASPECT,
  initialViewport,
  IN_FRAME_MAX,
  labelObstacles,
  labelSize,
  layoutGraph,
  resourceLabel,
  sides,
  SIZES,
  SOURCE_ID,
  type GraphLayout,
  type LabelBox,
} from './graph';
import { manyResources } from '../../e2e/graph-fixture';
import { partial } from '../test/partial';

const many = (n: number, kind = 'VirtualMachine'): Resource[] =>
  Array.from({ length: n }, (_, i) => partial<Resource>({ kind, name: `vm-${String(i).padStart(4, '0')}`, status: 'Synced', node: `pve${(i % 3) + 1}` }));

function overlaps(a: { x: number; y: number; width: number; height: number }, b: typeof a): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
}

describe('graph groups', () => {
  test('by kind or by node, sorted, resource keys sorted', () => {
    const rs: Resource[] = [
      partial({ kind: 'Iso', name: 'b', status: 'Synced', node: 'pve2' }),
      partial({ kind: 'Container', name: 'z', status: 'Synced' }),
      partial({ kind: 'Iso', name: 'a', status: 'Synced', node: 'pve1' }),
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
    const l = layoutGraph(graphGroups(many(1000), 'kind'), 2);
    const columns = new Set(l.nodes.filter((n) => n.type === 'resource').map((n) => n.x));
    const rows = new Set(l.nodes.filter((n) => n.type === 'resource').map((n) => n.y));
    expect(rows.size).toBeGreaterThan(SIZES.singleColumnMax);
    expect(columns.size).toBe(Math.ceil(1000 / rows.size));
  });

  // The fitted zoom of a layout in a viewport, and how much of the viewport its
  // resources then cover.
  const fitted = (l: GraphLayout, view: { width: number; height: number }) => {
    const zoom = Math.min(view.width / l.width, view.height / l.height);
    const area = l.nodes.filter((n) => n.type === 'resource').reduce((a, n) => a + n.width * n.height, 0);
    return { zoom, covered: (area * zoom * zoom) / (view.width * view.height) };
  };

  test.each([
    ['a desktop graph pane', { width: 1410, height: 620 }],
    ['a 4:3 screen', { width: 1000, height: 750 }],
    ['a square', { width: 800, height: 800 }],
    ['a phone, upright', { width: 370, height: 640 }],
  ])('1,000 resources in groups fill %s: its aspect ratio, not a strip', (_, view) => {
    const aspect = view.width / view.height;
    for (const by of ['kind', 'node'] as const) {
      const l = layoutGraph(graphGroups(manyResources(1000), by), aspect);
      const ratio = l.width / l.height / aspect;
      expect(ratio, `${by}: ${l.width}x${l.height}`).toBeGreaterThan(0.8);
      expect(ratio, `${by}: ${l.width}x${l.height}`).toBeLessThan(1.25);
      // Resources cover a good part of the fitted view (one column of groups, as
      // before, covered under a tenth of a desktop pane).
      expect(fitted(l, view).covered, by).toBeGreaterThan(0.3);
    }
  });

  test('a small resize keeps the layout; a pane with no size yet lays out for a desktop pane', () => {
    expect(aspectBucket(1410, 645)).toBe(aspectBucket(1440, 640));
    expect(aspectBucket(1410, 645)).toBe(DEFAULT_ASPECT);
    expect(aspectBucket(0, 0)).toBe(DEFAULT_ASPECT);
    expect(aspectBucket(370, 640)).toBeLessThan(1);
    const cache = createLayoutCache();
    const groups = graphGroups(many(100), 'kind');
    const wide = cache(groups, aspectBucket(1410, 645));
    expect(cache(groups, aspectBucket(1440, 640))).toBe(wide);
    expect(cache(groups, aspectBucket(370, 640))).not.toBe(wide);
  });

  test('the grid uses columns of groups as well as rows', () => {
    const l = layoutGraph(graphGroups(manyResources(1000), 'kind'), 1410 / 620);
    const groups = l.nodes.filter((n) => n.type === 'group');
    expect(new Set(groups.map((g) => g.x)).size).toBeGreaterThan(2);
    // The old one-column layout, at this pane's size, fitted at about 0.08.
    expect(fitted(l, { width: 1410, height: 620 }).zoom).toBeGreaterThan(0.15);
  });

  test("the source's edges run along the gutters, never across a node", () => {
    const l = layoutGraph(graphGroups(manyResources(1000), 'kind'), 2.2);
    const boxes = l.nodes.filter((n) => n.type !== 'resource' || !l.nodes.some((f) => f.type === 'frame' && f.ref === n.group));
    const crossings: string[] = [];
    for (const e of l.edges) {
      for (let i = 1; i < e.points.length; i++) {
        const [[x1, y1], [x2, y2]] = [e.points[i - 1], e.points[i]];
        // Every segment is horizontal or vertical.
        expect(x1 === x2 || y1 === y2, e.id).toBe(true);
        const seg = { x: Math.min(x1, x2), y: Math.min(y1, y2), width: Math.abs(x2 - x1), height: Math.abs(y2 - y1) };
        for (const n of boxes) {
          if (n.id === e.source || n.id === e.target) continue;
          const inside = seg.x < n.x + n.width && n.x < seg.x + seg.width && seg.y < n.y + n.height && n.y < seg.y + seg.height;
          if (inside) crossings.push(`${e.id} crosses ${n.id}`);
        }
      }
      // It starts at its source and ends on its target's edge.
      const src = l.nodes.find((n) => n.id === e.source)!;
      const dst = l.nodes.find((n) => n.id === e.target)!;
      const [sx, sy] = e.points[0];
      const [tx, ty] = e.points[e.points.length - 1];
      expect(sx >= src.x && sx <= src.x + src.width && (sy === src.y + src.height || sx === src.x + src.width), e.id).toBe(true);
      expect(tx === dst.x && ty > dst.y && ty < dst.y + dst.height, e.id).toBe(true);
    }
    expect(crossings).toEqual([]);
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

  test('a group asked to be framed is framed even when small, and the cache tells the two apart', () => {
    const groups = graphGroups(many(3), 'kind');
    const framed = layoutGraph(groups.map((g) => ({ ...g, frame: true })));
    expect(framed.nodes.filter((n) => n.type === 'frame').map((n) => n.ref)).toEqual(['VirtualMachine']);
    expect(layoutGraph(groups).nodes.some((n) => n.type === 'frame')).toBe(false);
    const cache = createLayoutCache();
    expect(cache(groups)).not.toBe(cache(groups.map((g) => ({ ...g, frame: true }))));
  });

  test('a small group stays one column', () => {
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

// A VM cloned from a template on an SDN vnet: a resource with two dependencies.
const APP_02: Resource = partial({
  kind: 'VirtualMachine',
  name: 'app-02',
  status: 'Synced',
  node: 'pve1',
  dependsOn: [
    { kind: 'Template', name: 'debian-12-tpl', relation: 'clones' },
    { kind: 'SdnVnet', name: 'prod', relation: 'uses' },
  ],
});

describe('dependency edges', () => {
  const rs: Resource[] = [
    partial({ kind: 'Template', name: 'debian-12-tpl', status: 'Synced', node: 'pve1' }),
    APP_02,
    partial({ kind: 'VirtualMachine', name: 'app-03', status: 'Synced', node: 'pve1', dependsOn: [{ kind: 'VirtualMachine', name: 'app-02', relation: 'uses' }] }),
    partial({ kind: 'Container', name: 'web-1', status: 'Synced', node: 'pve2', dependsOn: [{ kind: 'SdnVnet', name: 'prod', relation: 'uses' }] }),
    partial({ kind: 'SdnVnet', name: 'prod', status: 'Synced', dependsOn: [{ kind: 'SdnZone', name: 'lab', relation: 'inZone' }] }),
    partial({ kind: 'SdnZone', name: 'lab', status: 'OutOfSync' }),
  ];

  test('one edge per declared dependency between shown resources, labelled with both ends', () => {
    const l = layoutGraph(graphGroups(rs, 'kind'));
    const edges = dependencyEdges(rs, l);
    expect(edges.map((e) => [e.source, e.target, e.relation, e.label])).toEqual([
      ['res:VirtualMachine/app-02', 'res:Template/debian-12-tpl', 'clones', 'app-02 clones debian-12-tpl'],
      ['res:VirtualMachine/app-02', 'res:SdnVnet/prod', 'uses', 'app-02 uses vnet prod'],
      ['res:VirtualMachine/app-03', 'res:VirtualMachine/app-02', 'uses', 'app-03 uses VirtualMachine app-02'],
      ['res:Container/web-1', 'res:SdnVnet/prod', 'uses', 'web-1 uses vnet prod'],
      ['res:SdnVnet/prod', 'res:SdnZone/lab', 'inZone', 'vnet prod is in zone lab'],
    ]);
    // Every edge joins two laid-out resources, so React Flow never gets a dangling one.
    const ids = new Set(l.nodes.map((n) => n.id));
    expect(edges.every((e) => ids.has(e.source) && ids.has(e.target))).toBe(true);
    expect(new Set(edges.map((e) => e.id)).size).toBe(edges.length);
  });

  test('a metadata.dependsOn edge is drawn as a wait, with its own relation', () => {
    const deps: Resource[] = [
      partial({ kind: 'VirtualMachine', name: 'db', status: 'Synced', node: 'pve1' }),
      partial({ kind: 'VirtualMachine', name: 'web', status: 'OutOfSync', node: 'pve1', dependsOn: [{ kind: 'VirtualMachine', name: 'db', relation: 'dependsOn' }] }),
    ];
    const edges = dependencyEdges(deps, layoutGraph(graphGroups(deps, 'kind')));
    expect(edges.map((e) => [e.source, e.target, e.relation, e.label, e.text])).toEqual([
      ['res:VirtualMachine/web', 'res:VirtualMachine/db', 'dependsOn', 'web waits for VirtualMachine db', 'waits for'],
    ]);
    expect(resourceLabel(deps[1])).toBe('VirtualMachine web: OutOfSync; waits for VirtualMachine db');
  });

  test('a dependency on a resource filtered out or not declared draws nothing', () => {
    const shown = rs.filter((r) => r.kind !== 'SdnVnet');
    const edges = dependencyEdges(shown, layoutGraph(graphGroups(shown, 'kind')));
    expect(edges.map((e) => e.label)).toEqual(['app-02 clones debian-12-tpl', 'app-03 uses VirtualMachine app-02']);
    const alone: Resource[] = [partial({ kind: 'VirtualMachine', name: 'x', status: 'Synced', dependsOn: [{ kind: 'Template', name: 'by-hand', relation: 'clones' }] })];
    expect(dependencyEdges(alone, layoutGraph(graphGroups(alone, 'kind')))).toEqual([]);
  });

  test('edges leave the side facing their target; within one column they loop on the right', () => {
    const box = (x: number, y: number) => ({ x, y, width: SIZES.resource.width, height: SIZES.resource.height });
    expect(sides(box(0, 0), box(400, 30))).toEqual(['out-right', 'in-left']);
    expect(sides(box(400, 30), box(0, 0))).toEqual(['out-left', 'in-right']);
    expect(sides(box(0, 0), box(100, 600))).toEqual(['out-bottom', 'in-top']);
    expect(sides(box(100, 600), box(0, 0))).toEqual(['out-top', 'in-bottom']);
    // The wider gap decides.
    expect(sides(box(0, 0), box(900, 400))).toEqual(['out-right', 'in-left']);
    expect(sides(box(0, 0), box(300, 900))).toEqual(['out-bottom', 'in-top']);
    // One above the other in a column: out of the right side and back into it.
    expect(sides(box(0, 0), box(0, 128))).toEqual(['out-right', 'in-right']);
    const l = layoutGraph(graphGroups(rs, 'kind'));
    const at = (id: string) => l.nodes.find((n) => n.id === id)!;
    for (const e of dependencyEdges(rs, l)) expect([e.sourceHandle, e.targetHandle]).toEqual(sides(at(e.source), at(e.target)));
  });

  test('the members of a wrapped group are one cluster: one edge per target and relation, with the count', () => {
    const vms: Resource[] = partial(Array.from({ length: 40 }, (_, i) => ({
      kind: 'VirtualMachine',
      name: `vm-${String(i).padStart(2, '0')}`,
      status: 'Synced',
      dependsOn: [
        i % 4 ? { kind: 'Template', name: 'debian-12-tpl', relation: 'clones' as const } : { kind: 'Template', name: 'other-tpl', relation: 'clones' as const },
        { kind: 'SdnVnet', name: 'prod', relation: 'uses' as const },
        { kind: 'VirtualMachine', name: 'vm-00', relation: 'uses' as const },
      ],
    })));
    const all: Resource[] = partial([
      ...vms,
      { kind: 'Template', name: 'debian-12-tpl', status: 'Synced' },
      { kind: 'Template', name: 'other-tpl', status: 'Synced' },
      { kind: 'SdnVnet', name: 'prod', status: 'Synced', dependsOn: [{ kind: 'VirtualMachine', name: 'vm-07', relation: 'uses' }] },
    ]);
    const l = layoutGraph(graphGroups(all, 'kind'));
    const edges = dependencyEdges(all, l);
    const frame = frameNodeId('VirtualMachine');
    expect(edges.map((e) => [e.source, e.target, e.count, e.label]).sort()).toEqual(
      [
        [frame, 'res:Template/debian-12-tpl', 30, '30 resources of VirtualMachine (vm-01, vm-02, vm-03, …) clone debian-12-tpl'],
        [frame, 'res:Template/other-tpl', 10, '10 resources of VirtualMachine (vm-00, vm-04, vm-08, …) clone other-tpl'],
        [frame, 'res:SdnVnet/prod', 40, '40 resources of VirtualMachine (vm-00, vm-01, vm-02, …) use vnet prod'],
        // From a small group into a cluster: one edge to the member itself.
        ['res:SdnVnet/prod', 'res:VirtualMachine/vm-07', 1, 'prod uses VirtualMachine vm-07'],
      ].sort(),
    );
    // The cluster's edges leave the frame's side facing their target.
    const at = (id: string) => l.nodes.find((n) => n.id === id)!;
    for (const e of edges.filter((x) => x.source === frame)) expect([e.sourceHandle, e.targetHandle]).toEqual(sides(at(frame), at(e.target)));
    // An edge into a member of the cluster knows the member's frame: zoomed out,
    // members are no nodes and the edge ends there.
    expect(edges.find((e) => e.target === 'res:VirtualMachine/vm-07')?.targetFrame?.id).toBe(frame);
    // Hovering one member shows its own edges, both ways, also within the cluster.
    const f = focusEdges(all, l, 'VirtualMachine/vm-00');
    expect(f.map((e) => e.label)).toEqual(
      expect.arrayContaining(['vm-00 clones other-tpl', 'vm-00 uses vnet prod', 'vm-01 uses VirtualMachine vm-00']),
    );
    expect(f.every((e) => e.id.startsWith('focus:') && e.count === 1)).toBe(true);
    expect(focusEdges(all, l, 'VirtualMachine/vm-00', 5)).toHaveLength(5);
  });

  test('no two labels and no label and node overlap, on 1,000 resources by kind and by node', () => {
    const overlap = (a: LabelBox, b: LabelBox) => Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height;
    for (const by of ['kind', 'node'] as const) {
      const all = manyResources(1000);
      const l = layoutGraph(graphGroups(all, by), 1410 / 620);
      const edges = dependencyEdges(all, l);
      const placed = edges.filter((e) => e.textBox);
      // Most edges have room for their words; every bundle by kind does here.
      expect(placed.length, by).toBeGreaterThan(edges.length / 2);
      const clashes: string[] = [];
      for (let i = 0; i < placed.length; i++) {
        const a = placed[i].textBox!;
        // Its box is as big as its text needs.
        expect(a.width).toBe(labelSize(placed[i].text).width);
        for (let j = i + 1; j < placed.length; j++) if (overlap(a, placed[j].textBox!)) clashes.push(`${placed[i].id} / ${placed[j].id}`);
        for (const o of labelObstacles(l)) if (overlap(a, o)) clashes.push(`${placed[i].id} over a node at ${o.x},${o.y}`);
      }
      expect(clashes, by).toEqual([]);
      // A hovered resource's own edges keep off those labels too.
      const taken = placed.map((e) => e.textBox!);
      const focus = focusEdges(all, l, 'SdnVnet/vnet3', 60, [...taken]).filter((e) => e.textBox);
      for (const f of focus) for (const t of taken) expect(overlap(f.textBox!, t), f.id).toBe(false);
    }
  });

  test('labels say the relation in words', () => {
    const from = { kind: 'VirtualMachine', name: 'app-01' };
    expect(dependencyLabel(from, { kind: 'Iso', name: 'debian-12', relation: 'mounts' })).toBe('app-01 mounts iso debian-12');
    expect(dependencyLabel({ kind: 'Container', name: 'dns-01' }, { kind: 'ContainerTemplate', name: 'debian-12-standard', relation: 'builtFrom' })).toBe(
      'dns-01 is built from container template debian-12-standard',
    );
    expect(dependencyLabel(from, { kind: 'Network', name: 'pve1-vmbr1', relation: 'uses' })).toBe('app-01 uses bridge pve1-vmbr1');
    expect(dependencyLabel({ kind: 'Network', name: 'pve3-vmbr1' }, { kind: 'Network', name: 'pve3-bond0', relation: 'uses' })).toBe(
      'pve3-vmbr1 uses interface pve3-bond0',
    );
    expect(dependencyLabel({ kind: 'Iso', name: 'debian-12' }, { kind: 'Storage', name: 'nas-iso', relation: 'storedOn' })).toBe('debian-12 is stored on storage nas-iso');
  });

  test('the cluster kinds say what they do to what they name', () => {
    const job = { kind: 'BackupJob', name: 'nightly' };
    const web = { kind: 'VirtualMachine', name: 'web' };
    const cases: [Pick<Resource, 'kind' | 'name'>, Dependency, string][] = [
      [job, { kind: 'VirtualMachine', name: 'web', relation: 'backsUp' }, 'nightly backs up web'],
      [job, { kind: 'Container', name: 'scratch', relation: 'excludes' }, 'nightly does not back up scratch'],
      [{ kind: 'HARule', name: 'web-on-pve1' }, { kind: 'VirtualMachine', name: 'web', relation: 'places' }, 'web-on-pve1 places web'],
      [{ kind: 'HARule', name: 'web-on-pve1' }, { kind: 'Node', name: 'pve1', relation: 'prefers', priority: 2 }, 'web-on-pve1 prefers node pve1 (priority 2)'],
      [{ kind: 'HARule', name: 'web-on-pve1' }, { kind: 'Node', name: 'pve1', relation: 'onlyOn' }, 'web-on-pve1 keeps its guests only on node pve1'],
      [web, { kind: 'FirewallGroup', name: 'webserver', relation: 'protectedBy' }, 'web is protected by security group webserver'],
      [web, { kind: 'Storage', name: 'nas', relation: 'storedOn' }, 'web is stored on storage nas'],
      [web, { kind: 'Pool', name: 'prod', relation: 'uses' }, 'web uses pool prod'],
      [{ kind: 'FirewallIPSet', name: 'admins' }, { kind: 'FirewallAlias', name: 'lan', relation: 'uses' }, 'admins uses alias lan'],
      [web, { kind: 'ClusterFirewall', name: 'cluster', relation: 'dependsOn' }, 'web waits for cluster firewall cluster'],
      [web, { kind: 'HARule', name: 'web-on-pve1', relation: 'dependsOn' }, 'web waits for HA rule web-on-pve1'],
    ];
    for (const [from, dep, want] of cases) expect(dependencyLabel(from, dep)).toBe(want);
  });

  test('a backup job bundled from a frame says how many guests it leaves out, in words that are not a backup', () => {
    const jobs: Resource[] = partial(Array.from({ length: 30 }, (_, i) => ({
      kind: 'BackupJob',
      name: `job-${String(i).padStart(2, '0')}`,
      status: 'Synced',
      dependsOn: [{ kind: 'VirtualMachine', name: 'db', relation: 'excludes' as const }],
    })));
    const all: Resource[] = [...jobs, partial({ kind: 'VirtualMachine', name: 'db', status: 'Synced' })];
    const l = layoutGraph(graphGroups(all, 'kind'));
    const e = dependencyEdges(all, l).find((d) => d.relation === 'excludes');
    expect(e?.label).toMatch(/^30 resources of BackupJob \(job-00, job-01, job-02, …\) do not back up db$/);
    expect(e?.text).toBe('30 no backup');
  });

  describe("an HA rule's nodes", () => {
    const rule = (name: string, strict: boolean): Resource =>
      partial({
        kind: 'HARule',
        name,
        status: 'Synced',
        dependsOn: [
          { kind: 'VirtualMachine', name: 'web', relation: 'places' },
          { kind: 'Node', name: 'pve2', relation: strict ? 'onlyOn' : 'prefers', priority: 2 },
          { kind: 'Node', name: 'pve3', relation: strict ? 'onlyOn' : 'prefers' },
        ],
      });
    const all: Resource[] = [
      rule('web-prefers-pve2', false),
      rule('web-only-pve2', true),
      partial({ kind: 'VirtualMachine', name: 'web', status: 'Synced', node: 'pve1' }),
      partial({ kind: 'VirtualMachine', name: 'db', status: 'Synced', node: 'pve2' }),
      partial({ kind: 'Container', name: 'dns', status: 'Synced', node: 'pve3' }),
    ];
    const words = (es: ReturnType<typeof dependencyEdges>) => es.map((e) => `${e.source} -> ${e.target}: ${e.text} | ${e.label}`).sort();

    test('grouped by node, the rule points at each node\'s group, saying it prefers it (with the priority) or keeps its guests only there', () => {
      const l = layoutGraph(graphGroups(all, 'node'));
      const edges = dependencyEdges(all, l, 'node');
      expect(words(edges.filter((e) => e.target.startsWith('group:')))).toEqual([
        'res:HARule/web-only-pve2 -> group:pve2: only on (2) | web-only-pve2 keeps its guests only on node pve2 (priority 2)',
        'res:HARule/web-only-pve2 -> group:pve3: only on | web-only-pve2 keeps its guests only on node pve3',
        'res:HARule/web-prefers-pve2 -> group:pve2: prefers (2) | web-prefers-pve2 prefers node pve2 (priority 2)',
        'res:HARule/web-prefers-pve2 -> group:pve3: prefers | web-prefers-pve2 prefers node pve3',
      ]);
      expect(new Set(edges.filter((e) => e.target.startsWith('group:')).map((e) => e.relation))).toEqual(new Set(['prefers', 'onlyOn']));
      // Its guest as before.
      expect(edges.filter((e) => e.relation === 'places')).toHaveLength(2);
      // Each edge joins the sides of its ends that face each other; a node's says its words somewhere.
      const at = new Map(l.nodes.map((n) => [n.id, n]));
      for (const e of edges) {
        expect([e.sourceHandle, e.targetHandle]).toEqual(sides(at.get(e.source)!, at.get(e.target)!));
        if (e.target.startsWith('group:')) expect(e.textBox, e.label).toBeDefined();
      }
      // Hovered, the rule's own edges include its nodes.
      expect(focusEdges(all, l, 'HARule/web-prefers-pve2', 60, [], 'node').map((e) => e.target).sort()).toEqual([
        'group:pve2',
        'group:pve3',
        'res:VirtualMachine/web',
      ]);
    });

    test("grouped by node, another cluster's nodes are groups of their own, and its rules point at them", () => {
      const lab = (r: Resource): Resource => ({ ...r, cluster: 'lab' });
      const rs = [...all.map((r) => ({ ...r, cluster: 'default' })), lab(rule('lab-prefers-pve2', false)), lab(all[2]), lab(all[3])];
      const l = layoutGraph(graphGroups(rs, 'node'));
      expect(graphGroups(rs, 'node').map((g) => g.key)).toEqual(['(no node)', 'lab/pve1', 'lab/pve2', 'pve1', 'pve2', 'pve3']);
      const targets = (from: string) =>
        dependencyEdges(rs, l, 'node')
          .filter((e) => e.target.startsWith('group:') && e.label.startsWith(from))
          .map((e) => e.target)
          .sort();
      // The lab rule's pve3 is not a node of lab's shown here: no edge.
      expect(targets('lab-prefers-pve2')).toEqual(['group:lab/pve2']);
      expect(targets('web-prefers-pve2')).toEqual(['group:pve2', 'group:pve3']);
      const labKey = rs.find((r) => r.name === 'lab-prefers-pve2')!;
      expect(focusEdges(rs, l, resourceKey(labKey), 60, [], 'node').map((e) => e.target).filter((t) => t.startsWith('group:'))).toEqual(['group:lab/pve2']);
    });

    test('a node with nothing shown on it has no group, and no edge', () => {
      const noPve3 = all.filter((r) => r.name !== 'dns');
      const edges = dependencyEdges(noPve3, layoutGraph(graphGroups(noPve3, 'node')), 'node');
      expect(edges.filter((e) => e.target.startsWith('group:')).map((e) => e.target)).toEqual(['group:pve2', 'group:pve2']);
    });

    test('grouped by kind or cluster, no edge goes to a group (the card names the nodes)', () => {
      for (const by of ['kind', 'cluster'] as const) {
        const l = layoutGraph(graphGroups(all, by));
        const edges = dependencyEdges(all, l, by);
        expect(edges.map((e) => e.relation).sort(), by).toEqual(['places', 'places']);
        expect(focusEdges(all, l, 'HARule/web-prefers-pve2', 60, [], by).map((e) => e.relation), by).toEqual(['places']);
      }
      // A kind named like a node changes nothing.
      const l = layoutGraph(graphGroups(all, 'kind'));
      expect(l.nodes.some((n) => n.type === 'group' && n.ref === 'HARule')).toBe(true);
    });

    test('many rules in a frame are one bundle per node, in plural words', () => {
      const rules = Array.from({ length: 20 }, (_, i) => rule(`r-${String(i).padStart(2, '0')}`, false));
      const rs = [...rules, ...all.slice(2)];
      const edges = dependencyEdges(rs, layoutGraph(graphGroups(rs, 'node')), 'node');
      expect(words(edges.filter((e) => e.target.startsWith('group:')))).toEqual([
        'frame:(no node) -> group:pve2: 20 prefers | 20 resources of (no node) (r-00, r-01, r-02, …) prefer node pve2',
        'frame:(no node) -> group:pve3: 20 prefers | 20 resources of (no node) (r-00, r-01, r-02, …) prefer node pve3',
      ]);
    });

    test('one rule in a frame says its node and priority as when alone', () => {
      const others = Array.from({ length: 14 }, (_, i) => partial<Resource>({ kind: 'Pool', name: `p-${i}`, status: 'Synced' }));
      const rs = [all[0], ...others, ...all.slice(2)];
      const l = layoutGraph(graphGroups(rs, 'node'));
      expect(l.nodes.some((n) => n.id === 'frame:(no node)')).toBe(true);
      expect(words(dependencyEdges(rs, l, 'node').filter((e) => e.target.startsWith('group:')))).toEqual([
        'frame:(no node) -> group:pve2: prefers (2) | web-prefers-pve2 prefers node pve2 (priority 2)',
        'frame:(no node) -> group:pve3: prefers | web-prefers-pve2 prefers node pve3',
      ]);
    });

    test('the signature changes with a node\'s priority', () => {
      const other = all.map((r) => (r.name === 'web-prefers-pve2' ? { ...r, dependsOn: r.dependsOn!.map((d) => (d.name === 'pve2' ? { ...d, priority: 3 } : d)) } : r));
      expect(dependencySignature(other)).not.toBe(dependencySignature(all));
    });
  });

  test('the signature changes with the dependencies only, not with statuses', () => {
    const again = rs.map((r) => ({ ...r, status: 'Failed' as const }));
    expect(dependencySignature(again)).toBe(dependencySignature(rs));
    const changed = rs.map((r) => (r.name === 'web-1' ? { ...r, dependsOn: [] } : r));
    expect(dependencySignature(changed)).not.toBe(dependencySignature(rs));
  });
});

test('a resource node’s accessible name says what it needs', () => {
  expect(
    resourceLabel(APP_02),
  ).toBe('VirtualMachine app-02: Synced; clones debian-12-tpl, uses vnet prod');
  expect(resourceLabel(partial({ kind: 'Iso', name: 'debian-12', status: 'OutOfSync' }))).toBe('Iso debian-12: OutOfSync');
});

describe('group by cluster', () => {
  const two: Resource[] = [
    partial({ cluster: 'office', kind: 'VirtualMachine', name: 'app-01', status: 'Synced', dependsOn: [{ kind: 'Template', name: 'tpl', relation: 'clones' }] }),
    partial({ cluster: 'office', kind: 'Template', name: 'tpl', status: 'Synced' }),
    partial({ cluster: 'home', kind: 'VirtualMachine', name: 'app-01', status: 'Failed', dependsOn: [{ kind: 'Template', name: 'tpl', relation: 'clones' }] }),
    partial({ cluster: 'home', kind: 'Template', name: 'tpl', status: 'Synced' }),
  ];

  test('keys carry the cluster of a clusters list and read back', () => {
    expect(resourceKey(two[0])).toBe('office:VirtualMachine/app-01');
    expect(resourceKey({ cluster: 'default', kind: 'Iso', name: 'd' })).toBe('Iso/d');
    expect(parseResourceKey('office:VirtualMachine/app-01')).toEqual({ cluster: 'office', kind: 'VirtualMachine', name: 'app-01' });
    expect(parseResourceKey('Iso/d')).toEqual({ cluster: '', kind: 'Iso', name: 'd' });
  });

  test('one named frame per cluster, even a small one, holding only its resources', () => {
    const groups = graphGroups(two, 'cluster');
    expect(groups).toEqual([
      { key: 'home', resourceKeys: ['home:Template/tpl', 'home:VirtualMachine/app-01'], frame: true },
      { key: 'office', resourceKeys: ['office:Template/tpl', 'office:VirtualMachine/app-01'], frame: true },
    ]);
    const layout = layoutGraph(groups);
    const frames = layout.nodes.filter((n) => n.type === 'frame');
    expect(frames.map((f) => [f.id, f.ref])).toEqual([
      [frameNodeId('home'), 'home'],
      [frameNodeId('office'), 'office'],
    ]);
    expect(overlaps(frames[0], frames[1])).toBe(false);
    for (const n of layout.nodes.filter((x) => x.type === 'resource')) {
      const f = frames.find((x) => x.ref === n.group)!;
      expect(n.ref.startsWith(`${f.ref}:`)).toBe(true);
      expect(n.x >= f.x && n.y >= f.y && n.x + n.width <= f.x + f.width && n.y + n.height <= f.y + f.height).toBe(true);
    }
    // Grouped by kind the same resources have no frame: few per group.
    expect(layoutGraph(graphGroups(two, 'kind')).nodes.some((n) => n.type === 'frame')).toBe(false);
    expect(graphGroupKey(partial({ kind: 'Iso', name: 'x', status: 'Synced' }), 'cluster')).toBe('default');
  });

  test('a dependency joins the resources of its own cluster, never the other cluster\'s namesake', () => {
    const layout = layoutGraph(graphGroups(two, 'kind'));
    const edges = dependencyEdges(two, layout);
    expect(edges.map((e) => [e.source, e.target]).sort()).toEqual([
      ['res:home:VirtualMachine/app-01', 'res:home:Template/tpl'],
      ['res:office:VirtualMachine/app-01', 'res:office:Template/tpl'],
    ]);
    expect(focusEdges(two, layout, 'home:Template/tpl').map((e) => e.source)).toEqual(['res:home:VirtualMachine/app-01']);
  });

  test('grouped by cluster, each cluster frame draws the edges a graph of that cluster alone draws, named by both ends', () => {
    // The examples' kind of repository, one per cluster: clones, an iso, a container template, vnets in a zone.
    const lab = (cluster: string): Resource[] =>
      manyResources(100).map((r) => ({ ...r, cluster, dependsOn: r.dependsOn?.filter((d) => d.kind !== 'Network') }));
    // lab-2 is small: by kind, none of its groups is wrapped, so each dependency is an edge of its own.
    const lab2: Resource[] = [
      partial({ cluster: 'lab-2', kind: 'Template', name: 'tpl', status: 'Synced' }),
      partial({ cluster: 'lab-2', kind: 'Iso', name: 'debian-12', status: 'Synced' }),
      partial({ cluster: 'lab-2', kind: 'VirtualMachine', name: 'web', status: 'Synced', dependsOn: [{ kind: 'Template', name: 'tpl', relation: 'clones' }] }),
      partial({ cluster: 'lab-2', kind: 'VirtualMachine', name: 'db', status: 'Synced', dependsOn: [{ kind: 'Template', name: 'tpl', relation: 'clones' }] }),
      partial({ cluster: 'lab-2', kind: 'VirtualMachine', name: 'installer', status: 'Synced', dependsOn: [{ kind: 'Iso', name: 'debian-12', relation: 'mounts' }] }),
    ];
    const all = [...lab('lab-1'), ...lab2];
    const byCluster = layoutGraph(graphGroups(all, 'cluster'));
    const edges = dependencyEdges(all, byCluster);
    const alone = (c: string) => {
      const rs = all.filter((r) => r.cluster === c);
      return dependencyEdges(rs, layoutGraph(graphGroups(rs, 'kind')));
    };
    const words = (es: ReturnType<typeof dependencyEdges>) => es.map((e) => `${e.source} -> ${e.target}: ${e.label}`).sort();
    // lab-1's 100 resources by kind: its 30 VMs are a wrapped group, whose edges are bundles;
    // inside its cluster frame each of them is drawn.
    const declared = (c: string) =>
      all.filter((r) => r.cluster === c).reduce((n, r) => n + (r.dependsOn ?? []).filter((d) => all.some((x) => x.cluster === c && x.kind === d.kind && x.name === d.name)).length, 0);
    expect(edges.filter((e) => e.source.startsWith('res:lab-1:'))).toHaveLength(declared('lab-1'));
    expect(words(edges.filter((e) => e.source.startsWith('res:lab-2:')))).toEqual(words(alone('lab-2')));
    expect(alone('lab-2').map((e) => e.label).sort()).toEqual(['db clones tpl', 'installer mounts iso debian-12', 'web clones tpl']);
    expect(edges.every((e) => e.count === 1 && e.source.startsWith('res:') && e.target.startsWith('res:'))).toBe(true);
    // Never across clusters, each named by both ends.
    for (const e of edges) expect(e.source.split(':')[1]).toBe(e.target.split(':')[1]);
    expect(edges.map((e) => e.label)).toEqual(expect.arrayContaining(['vm-0000 clones tpl-0', 'ct-0000 is built from container template ct-tpl-0', 'vnet vnet1 is in zone zone1']));
    // Their words keep off every node and one another: a frame's members sit close,
    // so most curves have no room for them (their tooltip and aria-label say it).
    const overlap = (a: LabelBox, b: LabelBox) => Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height;
    const placed = edges.filter((e) => e.textBox).map((e) => e.textBox!);
    expect(placed.length).toBeGreaterThan(0);
    const nodes = byCluster.nodes.filter((n) => n.type !== 'frame').map((n) => ({ x: n.x + n.width / 2, y: n.y + n.height / 2, width: n.width, height: n.height }));
    placed.forEach((a, i) => {
      for (const b of placed.slice(i + 1)) expect(overlap(a, b)).toBe(false);
      for (const n of nodes) expect(overlap(a, n)).toBe(false);
    });
  });

  test('a cluster frame with too many dependencies inside draws none of them, and a hovered member still shows its own', () => {
    const big = manyResources(1000).map((r) => ({ ...r, cluster: 'lab-1' }));
    const l = layoutGraph(graphGroups(big, 'cluster'));
    expect(dependencyEdges(big, l)).toEqual([]);
    expect(focusEdges(big, l, 'lab-1:VirtualMachine/vm-0000').map((e) => e.label)).toEqual(['vm-0000 clones tpl-0', 'vm-0000 uses bridge pve1-vmbr1']);
    // Below the bound they are drawn.
    const small = big.filter((r) => !/^(vm|ct)-/.test(r.name) || /-00[0-3]\d$/.test(r.name));
    expect(small.reduce((n, r) => n + (r.dependsOn?.length ?? 0), 0)).toBeLessThanOrEqual(IN_FRAME_MAX);
    expect(dependencyEdges(small, layoutGraph(graphGroups(small, 'cluster'))).length).toBeGreaterThan(100);
  });

  test('a resource of a clusters list names its cluster to screen readers', () => {
    expect(resourceLabel(two[2])).toBe('VirtualMachine app-01 in cluster home: Failed; clones tpl');
    expect(resourceLabel(partial({ cluster: 'default', kind: 'Iso', name: 'd', status: 'Synced' }))).toBe('Iso d: Synced');
  });
});
