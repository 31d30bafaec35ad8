// Layout of the topology graph: source → group (kind or node) → resource, left to
// right. The layout depends only on which resources are shown and how they are
// grouped, never on their status, so live status updates re-colour nodes without
// moving them. A group with many resources wraps them into columns inside a frame,
// linked to the group by one edge instead of hundreds of crossing ones, so that
// 1,000 resources fit on a screen instead of a 40,000-pixel column.

import type { Dependency, Relation, Resource } from '../api/types';
import { resourceKey } from '../api/types';

export type GraphGroupBy = 'kind' | 'node';

export const SIZES = {
  source: { width: 240, height: 78 },
  group: { width: 200, height: 56 },
  resource: { width: 220, height: 52 },
  columnGap: 90,
  resourceColumnGap: 24,
  rowGap: 12,
  groupGap: 36,
  // A group with at most this many resources stays one column.
  singleColumnMax: 12,
  framePadding: 14,
};

export interface LayoutNode {
  id: string;
  type: 'source' | 'group' | 'frame' | 'resource';
  x: number;
  y: number;
  width: number;
  height: number;
  // The resource's key (kind/name) or the group's key.
  ref: string;
  // A resource's group key.
  group?: string;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
}

export type SourceHandle = 'out-right' | 'out-left' | 'out-top' | 'out-bottom';
export type TargetHandle = 'in-left' | 'in-right' | 'in-top' | 'in-bottom';

// A dependency drawn between two shown resources (Resource.dependsOn), from the
// one that needs to the one it needs; or a bundle of them, from the frame of a
// wrapped group to what its members need (count > 1 or source a frame).
export interface DependencyEdge extends LayoutEdge {
  relation: Relation;
  // Names both ends, for screen readers and the tooltip: "app-02 clones debian-12-tpl".
  label: string;
  // How many dependencies the edge stands for (1 unless bundled).
  count: number;
  // Which sides of the two nodes the edge joins, from where they sit in the layout.
  sourceHandle: SourceHandle;
  targetHandle: TargetHandle;
}

export interface GraphLayout {
  nodes: LayoutNode[];
  edges: LayoutEdge[];
  width: number;
  height: number;
}

export interface LayoutGroup {
  key: string;
  resourceKeys: string[];
}

export const SOURCE_ID = 'source';
export const groupNodeId = (key: string) => `group:${key}`;
export const resourceNodeId = (key: string) => `res:${key}`;
export const frameNodeId = (key: string) => `frame:${key}`;

export function graphGroups(resources: Resource[], by: GraphGroupBy): LayoutGroup[] {
  const map = new Map<string, string[]>();
  for (const r of resources) {
    const k = by === 'node' ? r.node || '(no node)' : r.kind;
    let keys = map.get(k);
    if (!keys) map.set(k, (keys = []));
    keys.push(resourceKey(r));
  }
  return [...map.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, keys]) => ({ key, resourceKeys: [...keys].sort((a, b) => a.localeCompare(b)) }));
}

// rowsPerColumn picks how many resources one column holds for a group of n.
export function rowsPerColumn(n: number): number {
  if (n <= SIZES.singleColumnMax) return Math.max(n, 1);
  return Math.max(SIZES.singleColumnMax, Math.ceil(Math.sqrt(n * 2.5)));
}

export function layoutGraph(groups: LayoutGroup[]): GraphLayout {
  const S = SIZES;
  const nodes: LayoutNode[] = [];
  const edges: LayoutEdge[] = [];
  const groupX = S.source.width + S.columnGap;
  const resX = groupX + S.group.width + S.columnGap;
  const rowH = S.resource.height + S.rowGap;
  const colW = S.resource.width + S.resourceColumnGap;

  let y = 0;
  let width = resX;
  for (const g of groups) {
    const n = g.resourceKeys.length;
    const rows = rowsPerColumn(n);
    const cols = Math.max(1, Math.ceil(n / rows));
    const blockH = Math.max(S.group.height, Math.min(n, rows) * rowH - S.rowGap);
    const gid = groupNodeId(g.key);
    if (cols > 1) y += S.framePadding;
    nodes.push({
      id: gid,
      type: 'group',
      x: groupX,
      y: y + blockH / 2 - S.group.height / 2,
      width: S.group.width,
      height: S.group.height,
      ref: g.key,
    });
    edges.push({ id: `e:${SOURCE_ID}->${gid}`, source: SOURCE_ID, target: gid });
    const framed = cols > 1;
    if (framed) {
      const fid = frameNodeId(g.key);
      const pad = S.framePadding;
      nodes.push({
        id: fid,
        type: 'frame',
        x: resX - pad,
        y: y - pad,
        width: cols * colW - S.resourceColumnGap + 2 * pad,
        height: blockH + 2 * pad,
        ref: g.key,
      });
      edges.push({ id: `e:${gid}->${fid}`, source: gid, target: fid });
    }
    g.resourceKeys.forEach((key, i) => {
      const col = Math.floor(i / rows);
      const row = i % rows;
      const rid = resourceNodeId(key);
      nodes.push({
        id: rid,
        type: 'resource',
        x: resX + col * colW,
        y: y + row * rowH,
        width: S.resource.width,
        height: S.resource.height,
        ref: key,
        group: g.key,
      });
      if (!framed) edges.push({ id: `e:${gid}->${rid}`, source: gid, target: rid });
    });
    width = Math.max(width, resX + cols * colW - S.resourceColumnGap + (framed ? S.framePadding : 0));
    y += blockH + S.groupGap + (framed ? S.framePadding : 0);
  }
  const height = Math.max(S.source.height, y - (groups.length ? S.groupGap : 0));
  nodes.unshift({
    id: SOURCE_ID,
    type: 'source',
    x: 0,
    y: height / 2 - S.source.height / 2,
    width: S.source.width,
    height: S.source.height,
    ref: '',
  });
  return { nodes, edges, width, height };
}

// layoutSignature identifies a layout: equal signatures give equal layouts, so the
// caller can keep the previous one.
export function layoutSignature(groups: LayoutGroup[]): string {
  return groups.map((g) => `${g.key}\u0000${g.resourceKeys.join('\u0001')}`).join('\u0002');
}

// createLayoutCache returns a function that lays out only when the signature changed.
export function createLayoutCache(): (groups: LayoutGroup[]) => GraphLayout {
  let lastSig: string | null = null;
  let last: GraphLayout | null = null;
  return (groups) => {
    const sig = layoutSignature(groups);
    if (sig !== lastSig || !last) {
      last = layoutGraph(groups);
      lastSig = sig;
    }
    return last;
  };
}

// The smallest zoom a first view uses while the text is comfortably readable.
export const READABLE_ZOOM = 0.6;

// initialViewport picks how a new layout is shown: all of it when it is readable
// that way; otherwise its full width at a readable zoom, from the top (scrolling pans
// down); and when even the width does not fit, all of it as an overview.
export function initialViewport(
  layout: { width: number; height: number },
  view: { width: number; height: number },
  pad = 24,
): { fit: true } | { fit: false; x: number; y: number; zoom: number } {
  const zoomW = (view.width - 2 * pad) / Math.max(layout.width, 1);
  const zoomH = (view.height - 2 * pad) / Math.max(layout.height, 1);
  if (Math.min(zoomW, zoomH) >= READABLE_ZOOM || zoomW < READABLE_ZOOM) return { fit: true };
  const zoom = Math.min(zoomW, 1);
  return { fit: false, x: (view.width - layout.width * zoom) / 2, y: pad, zoom };
}


const KIND_WORD: Record<string, string> = {
  Template: 'template',
  Iso: 'iso',
  ContainerTemplate: 'container template',
  SdnVnet: 'vnet',
  SdnZone: 'zone',
  Network: 'bridge',
};

// targetWords names what a dependency points at, as its relation reads it:
// a template by name ("clones debian-12-tpl"), others with their kind ("vnet prod").
function targetWords(fromKind: string, dep: Dependency): string {
  if (dep.relation === 'clones') return dep.name;
  return `${fromKind === 'Network' && dep.kind === 'Network' ? 'interface' : KIND_WORD[dep.kind] ?? dep.kind} ${dep.name}`;
}

// dependencyLabel says in words what an edge means, naming both ends.
export function dependencyLabel(from: Pick<Resource, 'kind' | 'name'>, dep: Dependency): string {
  const who = dep.relation === 'inZone' && from.kind === 'SdnVnet' ? `vnet ${from.name}` : from.name;
  return `${who} ${VERB_ONE[dep.relation]} ${targetWords(from.kind, dep)}`;
}

// resourceLabel is a resource node's accessible name: what it is, its status and
// what it needs ("VirtualMachine app-02: Synced; clones debian-12-tpl").
export function resourceLabel(r: Resource): string {
  const base = `${r.kind} ${r.name}: ${r.status}`;
  if (!r.dependsOn?.length) return base;
  const prefix = `${r.name} `;
  const needs = r.dependsOn.map((d) => {
    const l = dependencyLabel(r, d);
    return l.startsWith(prefix) ? l.slice(prefix.length) : l;
  });
  return `${base}; ${needs.join(', ')}`;
}

type Box = Pick<LayoutNode, 'x' | 'y' | 'width' | 'height'>;

// sides picks the handles joining a to b: the facing sides when they sit side by
// side; in one column, out of a's right and back into b's right (the space right
// of a one-column group is free); from a frame, out of its top or bottom edge
// towards b; into a frame (from a frame), through its top or bottom.
function sides(a: Box, b: Box, fromFrame: boolean, toFrame: boolean): [SourceHandle, TargetHandle] {
  const below = b.y >= a.y + a.height;
  if (toFrame) return [fromFrame ? (below ? 'out-bottom' : 'out-top') : 'out-right', below ? 'in-top' : 'in-bottom'];
  if (fromFrame) return [below ? 'out-bottom' : 'out-top', 'in-right'];
  if (b.x >= a.x + a.width) return ['out-right', 'in-left'];
  if (b.x + b.width <= a.x) return ['out-left', 'in-right'];
  return ['out-right', 'in-right'];
}

const VERB_ONE: Record<Relation, string> = { clones: 'clones', mounts: 'mounts', builtFrom: 'is built from', uses: 'uses', inZone: 'is in' };
const PLURAL_VERB: Record<Relation, string> = { clones: 'clone', mounts: 'mount', builtFrom: 'are built from', uses: 'use', inZone: 'are in' };

// dependencyEdges lists what the graph draws for the resources' dependencies. A
// dependency on a resource filtered out, or not declared, draws nothing. Between
// resources of small groups, one edge each. The members of a wrapped group (a
// frame: hundreds of VMs, say) are drawn as one cluster: one edge from the frame
// per target and relation, with the count ("412 resources of VirtualMachine (vm-001,
// vm-002, vm-003, …) clone debian-12-tpl"); a target inside a frame is reached at its frame the same way.
// Hundreds of crossing curves would be neither readable nor cheap to pan.
export function dependencyEdges(resources: Resource[], layout: GraphLayout): DependencyEdge[] {
  const at = new Map<string, LayoutNode>();
  const frames = new Map<string, LayoutNode>();
  for (const n of layout.nodes) {
    if (n.type === 'resource') at.set(n.ref, n);
    else if (n.type === 'frame') frames.set(n.ref, n);
  }
  const out: DependencyEdge[] = [];
  const bundles = new Map<string, DependencyEdge & { names: string[]; groupLabel: string; targetLabel: string }>();
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    const key = resourceKey(r);
    const a = at.get(key);
    if (!a) continue;
    const fa = frames.get(a.group ?? '');
    for (const d of r.dependsOn) {
      const to = `${d.kind}/${d.name}`;
      const b = at.get(to);
      if (!b || to === key) continue;
      const fb = frames.get(b.group ?? '');
      if (!fa) {
        const [sourceHandle, targetHandle] = sides(a, b, false, false);
        out.push({
          id: `dep:${key}->${to}:${d.relation}`,
          source: resourceNodeId(key),
          target: resourceNodeId(to),
          relation: d.relation,
          label: dependencyLabel(r, d),
          count: 1,
          sourceHandle,
          targetHandle,
        });
        continue;
      }
      if (fa && fb && fa === fb) continue; // within one cluster: its members' names say it
      const dst = fb ?? b;
      const id = `dep:${fa.id}->${dst.id}:${d.relation}`;
      let e = bundles.get(id);
      if (!e) {
        const [sourceHandle, targetHandle] = sides(fa, dst, true, !!fb);
        e = {
          id,
          source: fa.id,
          target: dst.id,
          relation: d.relation,
          label: '',
          count: 0,
          sourceHandle,
          targetHandle,
          names: [],
          groupLabel: fa.ref,
          targetLabel: fb ? fb.ref : targetWords(r.kind, d),
        };
        bundles.set(id, e);
      }
      e.count++;
      if (e.names.length < 3) e.names.push(r.name);
    }
  }
  for (const e of bundles.values()) {
    const { names, groupLabel, targetLabel, ...edge } = e;
    const whoFrom = e.count === 1 ? names[0] : `${e.count} resources of ${groupLabel} (${names.join(', ')}, …)`;
    const whatTo = e.target.startsWith('frame:') ? `resources of ${targetLabel}` : targetLabel;
    out.push({ ...edge, label: `${whoFrom} ${e.count === 1 ? VERB_ONE[e.relation] : PLURAL_VERB[e.relation]} ${whatTo}` });
  }
  return out;
}


// focusEdges lists the single dependencies of one resource, both ways (what it
// needs and what needs it, at most `max`): drawn while it is hovered or focused,
// also inside clusters.
export function focusEdges(resources: Resource[], layout: GraphLayout, key: string, max = 60): DependencyEdge[] {
  const at = new Map<string, LayoutNode>();
  for (const n of layout.nodes) if (n.type === 'resource') at.set(n.ref, n);
  const out: DependencyEdge[] = [];
  if (!at.has(key)) return out;
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    const from = resourceKey(r);
    for (const d of r.dependsOn) {
      const to = `${d.kind}/${d.name}`;
      if ((from !== key && to !== key) || from === to) continue;
      const a = at.get(from);
      const b = at.get(to);
      if (!a || !b) continue;
      const [sourceHandle, targetHandle] = sides(a, b, false, false);
      out.push({
        id: `focus:${from}->${to}:${d.relation}`,
        source: resourceNodeId(from),
        target: resourceNodeId(to),
        relation: d.relation,
        label: dependencyLabel(r, d),
        count: 1,
        sourceHandle,
        targetHandle,
      });
      if (out.length >= max) return out;
    }
  }
  return out;
}

// dependencySignature identifies the dependencies of a list: equal signatures
// give equal edges for one layout.
export function dependencySignature(resources: Resource[]): string {
  const parts: string[] = [];
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    parts.push(`${resourceKey(r)}\u0000${r.dependsOn.map((d) => `${d.kind}/${d.name}/${d.relation}`).join('\u0001')}`);
  }
  return parts.join('\u0002');
}
