// Layout of the topology graph: the Git source, then one block per group (kind or
// node): the group's node with its resources to its right, a wrapped group's in a
// frame. The blocks are packed into rows that fill the viewport's aspect ratio, so
// that 1,000 resources use the screen instead of a tall strip; the edges from the
// source to the groups run along the gutters between blocks, never across one.
// The layout depends only on which resources are shown, how they are grouped and
// the viewport's shape, never on their status, so live status updates re-colour
// nodes without moving them.

import type { Dependency, Kind, Relation, Resource } from '../api/types';
import { DEFAULT_CLUSTER, resourceKey } from '../api/types';
import { kindInfo } from './kinds';

export type GraphGroupBy = 'kind' | 'node' | 'cluster';

export const SIZES = {
  source: { width: 300, height: 96 },
  group: { width: 200, height: 56 },
  resource: { width: 220, height: 52 },
  // Between a group's node and its resources.
  linkGap: 48,
  resourceColumnGap: 24,
  rowGap: 12,
  // Between blocks (groups), both ways: the source's edges run there.
  gutter: 80,
  // A group with at most this many resources stays one column, without a frame;
  // a bigger one is framed and wraps into as many columns as the viewport wants.
  singleColumnMax: 12,
  framePadding: 14,
  // Above a frame, for its title.
  frameTitle: 26,
  // The source's edges come down this far right of the source's left edge.
  trunkX: 30,
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
  // A frame its group asks for (a cluster), not one its size gave it: its
  // members' dependencies on each other are drawn one by one (dependencyEdges).
  named?: boolean;
}

export interface LayoutEdge {
  id: string;
  source: string;
  target: string;
  // The edge's route, corner by corner, in layout coordinates.
  points: [number, number][];
}

export type SourceHandle = 'out-right' | 'out-left' | 'out-top' | 'out-bottom';
export type TargetHandle = 'in-left' | 'in-right' | 'in-top' | 'in-bottom';

// A label's box, centred on (x, y), in layout coordinates.
export interface LabelBox {
  x: number;
  y: number;
  width: number;
  height: number;
}

// A dependency drawn between two shown resources (Resource.dependsOn), from the
// one that needs to the one it needs; or a bundle of them, from the frame of a
// wrapped group to what its members need (count > 1 or source a frame).
export interface DependencyEdge {
  id: string;
  source: string;
  target: string;
  relation: Relation;
  // Names both ends, for screen readers and the tooltip: "app-02 clones debian-12-tpl".
  label: string;
  // How many dependencies the edge stands for (1 unless bundled).
  count: number;
  // Which sides of the two nodes the edge joins, from where they sit in the layout.
  sourceHandle: SourceHandle;
  targetHandle: TargetHandle;
  // The target's frame when the target is a member of a wrapped group: zoomed out,
  // members are not nodes and the edge ends at their frame.
  targetFrame?: { id: string; handle: TargetHandle };
  // What the edge says on the graph ("clones", "58 clone") and where: absent when
  // no place on the curve is free of nodes and other labels (placeLabels).
  text: string;
  textBox?: LabelBox;
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
  // Always drawn in a named frame, not only when it is big (a cluster, say).
  frame?: boolean;
}

export const SOURCE_ID = 'source';
export const groupNodeId = (key: string) => `group:${key}`;
export const resourceNodeId = (key: string) => `res:${key}`;
export const frameNodeId = (key: string) => `frame:${key}`;

// nodeGroupKey is the group of a cluster's node: node names repeat across
// clusters (each has its pve1), so another cluster's are named with it.
export const nodeGroupKey = (cluster: string | undefined, node: string) =>
  !cluster || cluster === DEFAULT_CLUSTER ? node : `${cluster}/${node}`;

// graphGroupKey is the group of the graph's middle tier a resource is in.
export function graphGroupKey(r: Resource, by: GraphGroupBy): string {
  if (by === 'cluster') return r.cluster || DEFAULT_CLUSTER;
  if (by === 'node') return r.node ? nodeGroupKey(r.cluster, r.node) : '(no node)';
  return r.kind;
}

// depKey is the key of what a dependency of r points at: a resource of r's cluster.
export const depKey = (r: Resource, d: Dependency) => resourceKey({ cluster: r.cluster, kind: d.kind, name: d.name });

export function graphGroups(resources: Resource[], by: GraphGroupBy): LayoutGroup[] {
  const map = new Map<string, string[]>();
  for (const r of resources) {
    const k = graphGroupKey(r, by);
    let keys = map.get(k);
    if (!keys) map.set(k, (keys = []));
    keys.push(resourceKey(r));
  }
  return [...map.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, keys]) => ({ key, resourceKeys: [...keys].sort((a, b) => a.localeCompare(b)), ...(by === 'cluster' && { frame: true }) }));
}

const ROW_H = SIZES.resource.height + SIZES.rowGap;
const COL_W = SIZES.resource.width + SIZES.resourceColumnGap;

// A group's block: its node and its resources, `rows` to a column.
interface Block {
  group: LayoutGroup;
  rows: number;
  cols: number;
  framed: boolean;
  width: number;
  height: number;
}

// blockFor shapes a group of n with at most maxRows resources to a column (a
// small group stays one column whatever maxRows says).
function blockFor(group: LayoutGroup, maxRows: number): Block {
  const S = SIZES;
  const n = Math.max(group.resourceKeys.length, 1);
  const rows = n <= S.singleColumnMax ? n : Math.min(n, Math.max(S.singleColumnMax, maxRows));
  const cols = Math.ceil(n / rows);
  // A group too big for one short column is a cluster in a frame, even when the
  // viewport's shape makes it one tall column: its dependencies are bundled.
  const framed = n > S.singleColumnMax || !!group.frame;
  const mw = cols * COL_W - S.resourceColumnGap;
  const mh = Math.min(n, rows) * ROW_H - S.rowGap;
  if (framed) {
    const pad = S.framePadding;
    return { group, rows, cols, framed, width: S.group.width + S.linkGap + mw + 2 * pad, height: S.frameTitle + Math.max(mh + 2 * pad, S.group.height) };
  }
  return { group, rows, cols, framed, width: S.group.width + S.linkGap + mw, height: Math.max(S.group.height, mh + 2) };
}

// A packing: each block's top left corner, and the size of all of them.
interface Packing {
  at: { x: number; y: number; stackX: number; rowY: number }[];
  width: number;
  height: number;
}

// pack places blocks in order into rows at most maxWidth wide; a block that fits
// under the last one of its row (within the row's height) goes there, so small
// groups stack beside a big one instead of opening a row each.
function pack(blocks: Block[], maxWidth: number): Packing {
  const G = SIZES.gutter;
  const at: Packing['at'] = [];
  let rowY = 0;
  let rowH = 0;
  let rowW = 0;
  // The last stack of the row: its left edge, width and bottom.
  let stackX = 0;
  let stackW = 0;
  let stackBottom = 0;
  let width = 0;
  let first = true;
  for (const b of blocks) {
    if (!first && stackBottom + G + b.height <= rowY + rowH && stackX + Math.max(stackW, b.width) <= Math.max(maxWidth, rowW)) {
      at.push({ x: stackX, y: stackBottom + G, stackX, rowY });
      stackBottom += G + b.height;
      stackW = Math.max(stackW, b.width);
      rowW = Math.max(rowW, stackX + stackW);
    } else if (!first && rowW + G + b.width <= maxWidth) {
      stackX = rowW + G;
      stackW = b.width;
      stackBottom = rowY + b.height;
      at.push({ x: stackX, y: rowY, stackX, rowY });
      rowW = stackX + b.width;
      rowH = Math.max(rowH, b.height);
    } else {
      if (!first) rowY += rowH + G;
      first = false;
      stackX = 0;
      stackW = b.width;
      stackBottom = rowY + b.height;
      rowH = b.height;
      rowW = b.width;
      at.push({ x: 0, y: rowY, stackX: 0, rowY });
    }
    width = Math.max(width, rowW);
  }
  return { at, width, height: blocks.length ? rowY + rowH : 0 };
}

// Where the grid of blocks starts: right of the source's trunk, below the source.
const GRID_X = SIZES.trunkX + SIZES.gutter / 2;
const GRID_Y = SIZES.source.height + SIZES.gutter;

// DEFAULT_ASPECT is a desktop graph pane's width over its height (1410x645 as
// aspectBucket rounds it), used until the pane has a size.
export const DEFAULT_ASPECT = 2.07;

// arrange picks how many resources a column holds and how wide the rows are so
// that the whole layout, fitted to a viewport of the given aspect ratio (width /
// height), is drawn as large as possible: it fills the viewport instead of a strip.
function arrange(groups: LayoutGroup[], aspect: number): { blocks: Block[]; packing: Packing } {
  const largest = Math.max(1, ...groups.map((g) => g.resourceKeys.length));
  const rowOptions = new Set<number>();
  for (let r = SIZES.singleColumnMax; r < largest; r = Math.ceil(r * 1.12)) rowOptions.add(r);
  rowOptions.add(largest);
  let best: { blocks: Block[]; packing: Packing; score: number } | null = null;
  for (const maxRows of rowOptions) {
    const blocks = groups.map((g) => blockFor(g, maxRows));
    const widest = Math.max(...blocks.map((b) => b.width));
    const total = blocks.reduce((w, b) => w + b.width, 0) + SIZES.gutter * (blocks.length - 1);
    const widths = new Set<number>([total]);
    for (let w = widest; w < total; w *= 1.08) widths.add(w);
    for (const w of widths) {
      const packing = pack(blocks, w);
      const W = Math.max(GRID_X + packing.width, SIZES.source.width);
      const H = GRID_Y + packing.height;
      // The zoom that fits the layout into a viewport aspect wide and 1 high.
      const score = Math.min(aspect / W, 1 / H);
      if (!best || score > best.score * 1.0001) best = { blocks, packing, score };
    }
  }
  return best!;
}

// route joins corners into a path without repeated points.
function route(...pts: [number, number][]): [number, number][] {
  return pts.filter((p, i) => i === 0 || p[0] !== pts[i - 1][0] || p[1] !== pts[i - 1][1]);
}

// layoutGraph lays out the groups for a viewport of the given aspect ratio.
export function layoutGraph(groups: LayoutGroup[], aspect = DEFAULT_ASPECT): GraphLayout {
  const S = SIZES;
  const nodes: LayoutNode[] = [];
  const edges: LayoutEdge[] = [];
  const G = S.gutter;
  const source: LayoutNode = { id: SOURCE_ID, type: 'source', x: 0, y: 0, width: S.source.width, height: S.source.height, ref: '' };
  nodes.push(source);
  if (!groups.length) return { nodes, edges, width: S.source.width, height: S.source.height };
  const { blocks, packing } = arrange(groups, aspect);
  blocks.forEach((b, i) => {
    const p = packing.at[i];
    const bx = GRID_X + p.x;
    const by = GRID_Y + p.y;
    const g = b.group;
    const gid = groupNodeId(g.key);
    const hy = by + (b.framed ? S.frameTitle : 0);
    const hcy = hy + S.group.height / 2;
    nodes.push({ id: gid, type: 'group', x: bx, y: hy, width: S.group.width, height: S.group.height, ref: g.key });
    // From the source down its trunk, along the gutter above the row, down the
    // gutter left of the block's stack, into the group's left side.
    const lane = GRID_X + p.stackX - G / 2;
    const gutterY = GRID_Y + p.rowY - G / 2;
    edges.push({
      id: `e:${SOURCE_ID}->${gid}`,
      source: SOURCE_ID,
      target: gid,
      points: route([S.trunkX, S.source.height], [S.trunkX, gutterY], [lane, gutterY], [lane, hcy], [bx, hcy]),
    });
    const mx0 = bx + S.group.width + S.linkGap + (b.framed ? S.framePadding : 0);
    const my0 = b.framed ? hy + S.framePadding : by + 2;
    if (b.framed) {
      const fid = frameNodeId(g.key);
      const fx = bx + S.group.width + S.linkGap;
      nodes.push({
        id: fid,
        type: 'frame',
        x: fx,
        y: hy,
        width: b.width - S.group.width - S.linkGap,
        height: b.height - S.frameTitle,
        ref: g.key,
        ...(g.frame && { named: true }),
      });
      edges.push({ id: `e:${gid}->${fid}`, source: gid, target: fid, points: [[bx + S.group.width, hcy], [fx, hcy]] });
    }
    g.resourceKeys.forEach((key, j) => {
      const x = mx0 + Math.floor(j / b.rows) * COL_W;
      const y = my0 + (j % b.rows) * ROW_H;
      const rid = resourceNodeId(key);
      nodes.push({ id: rid, type: 'resource', x, y, width: S.resource.width, height: S.resource.height, ref: key, group: g.key });
      if (b.framed) return;
      // A comb: out of the group's right side, down the link gap, into each resource.
      const cy = y + S.resource.height / 2;
      const lx = x - S.linkGap / 2;
      edges.push({ id: `e:${gid}->${rid}`, source: gid, target: rid, points: route([bx + S.group.width, hcy], [lx, hcy], [lx, cy], [x, cy]) });
    });
  });
  return { nodes, edges, width: Math.max(GRID_X + packing.width, S.source.width), height: GRID_Y + packing.height };
}

// aspectBucket rounds a viewport's aspect ratio to steps of about 20%, so that a
// small resize does not lay the graph out again.
export function aspectBucket(width: number, height: number): number {
  if (!(width > 0 && height > 0)) return DEFAULT_ASPECT;
  const step = Math.log(1.2);
  return Math.round(Math.exp(Math.round(Math.log(width / height) / step) * step) * 100) / 100;
}

// layoutSignature identifies a layout: equal signatures give equal layouts, so the
// caller can keep the previous one.
export function layoutSignature(groups: LayoutGroup[], aspect = DEFAULT_ASPECT): string {
  return `${aspect}\u0003` + groups.map((g) => `${g.frame ? '\u0004' : ''}${g.key}\u0000${g.resourceKeys.join('\u0001')}`).join('\u0002');
}

// createLayoutCache returns a function that lays out only when the signature changed.
export function createLayoutCache(): (groups: LayoutGroup[], aspect?: number) => GraphLayout {
  let lastSig: string | null = null;
  let last: GraphLayout | null = null;
  return (groups, aspect = DEFAULT_ASPECT) => {
    const sig = layoutSignature(groups, aspect);
    if (sig !== lastSig || !last) {
      last = layoutGraph(groups, aspect);
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


// A VM or a container a reference names is called by its kind, as the graph's
// own labels and the drawer call it ("uses VirtualMachine app-02"); every other
// kind by its noun in the kind table ("uses vnet prod").
const NAMED_BY_KIND: ReadonlySet<Kind> = new Set<Kind>(['VirtualMachine', 'Container']);

function kindWord(kind: string): string {
  const info = kindInfo(kind);
  return !info || NAMED_BY_KIND.has(info.kind) ? kind : info.noun;
}

// The relations whose verb says what the target is: a template by name
// ("clones debian-12-tpl"), the guests a job backs up or a rule places.
const NAME_ONLY: ReadonlySet<Relation> = new Set<Relation>(['clones', 'backsUp', 'excludes', 'places']);

// NODE_DEP is the kind of a dependency on a Proxmox node (api.DependencyNode):
// an HA rule's node. A node is no resource: grouped by node, the edge ends at
// the node's group; grouped otherwise, it draws nothing (the card says the nodes).
export const NODE_DEP = 'Node';

// targetWords names what a dependency points at, as its relation reads it:
// a template or guest by name ("clones debian-12-tpl", "backs up web"),
// a node with its priority ("node pve2 (priority 2)"), others with their
// kind ("vnet prod").
function targetWords(fromKind: string, dep: Dependency): string {
  if (NAME_ONLY.has(dep.relation)) return dep.name;
  if (dep.kind === NODE_DEP) return `node ${dep.name}${dep.priority ? ` (priority ${dep.priority})` : ''}`;
  return `${fromKind === 'Network' && dep.kind === 'Network' ? 'interface' : kindWord(dep.kind)} ${dep.name}`;
}

// dependencyLabel says in words what an edge means, naming both ends.
export function dependencyLabel(from: Pick<Resource, 'kind' | 'name'>, dep: Dependency): string {
  const who = dep.relation === 'inZone' && from.kind === 'SdnVnet' ? `vnet ${from.name}` : from.name;
  return `${who} ${VERB_ONE[dep.relation]} ${targetWords(from.kind, dep)}`;
}

// resourceLabel is a resource node's accessible name: what it is, its status and
// what it needs ("VirtualMachine app-02: Synced; clones debian-12-tpl").
export function resourceLabel(r: Resource): string {
  const where = r.cluster && r.cluster !== DEFAULT_CLUSTER ? ` in cluster ${r.cluster}` : '';
  const base = `${r.kind} ${r.name}${where}: ${r.status}`;
  if (!r.dependsOn?.length) return base;
  const prefix = `${r.name} `;
  const needs = r.dependsOn.map((d) => {
    const l = dependencyLabel(r, d);
    return l.startsWith(prefix) ? l.slice(prefix.length) : l;
  });
  return `${base}; ${needs.join(', ')}`;
}

type Box = Pick<LayoutNode, 'x' | 'y' | 'width' | 'height'>;

// sides picks the handles joining a to b: the sides that face each other across
// the wider of the two gaps between them (left/right or top/bottom). Two members
// of one column loop out of and back into their right sides, which face the
// gutter, instead of running down through the resources between them.
export function sides(a: Box, b: Box): [SourceHandle, TargetHandle] {
  if (a.x === b.x && a.width === b.width && a.width === SIZES.resource.width) return ['out-right', 'in-right'];
  const gapX = Math.max(b.x - (a.x + a.width), a.x - (b.x + b.width));
  const gapY = Math.max(b.y - (a.y + a.height), a.y - (b.y + b.height));
  if (gapX >= gapY) return b.x > a.x ? ['out-right', 'in-left'] : ['out-left', 'in-right'];
  return b.y > a.y ? ['out-bottom', 'in-top'] : ['out-top', 'in-bottom'];
}

type Point = [number, number];

// handlePoint is where an edge meets a box on a side.
function handlePoint(n: Box, side: SourceHandle | TargetHandle): Point {
  if (side.endsWith('right')) return [n.x + n.width, n.y + n.height / 2];
  if (side.endsWith('left')) return [n.x, n.y + n.height / 2];
  if (side.endsWith('top')) return [n.x + n.width / 2, n.y];
  return [n.x + n.width / 2, n.y + n.height];
}

// The curvature of a dependency edge: more when it loops back into the side it
// left from (Graph.tsx draws it with the same).
export const depCurvature = (s: SourceHandle, t: TargetHandle) => (s.slice(4) === t.slice(3) ? 0.6 : 0.25);

// bezierControls gives a dependency curve's control points as React Flow's
// getBezierPath makes them, so that a label placed here sits on the drawn curve.
export function bezierControls(src: Point, srcSide: string, dst: Point, dstSide: string, c: number): [Point, Point] {
  const off = (d: number) => (d >= 0 ? 0.5 * d : c * 25 * Math.sqrt(-d));
  const ctl = (p: Point, side: string, q: Point): Point => {
    if (side.endsWith('left')) return [p[0] - off(p[0] - q[0]), p[1]];
    if (side.endsWith('right')) return [p[0] + off(q[0] - p[0]), p[1]];
    if (side.endsWith('top')) return [p[0], p[1] - off(p[1] - q[1])];
    return [p[0], p[1] + off(q[1] - p[1])];
  };
  return [ctl(src, srcSide, dst), ctl(dst, dstSide, src)];
}

function bezierAt(p0: Point, p1: Point, p2: Point, p3: Point, t: number): Point {
  const u = 1 - t;
  const a = u * u * u;
  const b = 3 * u * u * t;
  const c = 3 * u * t * t;
  const d = t * t * t;
  return [a * p0[0] + b * p1[0] + c * p2[0] + d * p3[0], a * p0[1] + b * p1[1] + c * p2[1] + d * p3[1]];
}

// A backup job's excluded guest is an edge only so that the job is made after
// it (its VMID): its words say the guest is not backed up.
const VERB_ONE: Record<Relation, string> = {
  clones: 'clones',
  mounts: 'mounts',
  builtFrom: 'is built from',
  storedOn: 'is stored on',
  uses: 'uses',
  protectedBy: 'is protected by',
  inZone: 'is in',
  backsUp: 'backs up',
  places: 'places',
  prefers: 'prefers',
  onlyOn: 'keeps its guests only on',
  excludes: 'does not back up',
  dependsOn: 'waits for',
};
const PLURAL_VERB: Record<Relation, string> = {
  clones: 'clone',
  mounts: 'mount',
  builtFrom: 'are built from',
  storedOn: 'are stored on',
  uses: 'use',
  protectedBy: 'are protected by',
  inZone: 'are in',
  backsUp: 'back up',
  places: 'place',
  prefers: 'prefer',
  onlyOn: 'keep their guests only on',
  excludes: 'do not back up',
  dependsOn: 'wait for',
};
// The words on an edge itself (its aria-label says the whole sentence).
const EDGE_VERB: Record<Relation, string> = {
  clones: 'clones',
  mounts: 'mounts',
  builtFrom: 'built from',
  storedOn: 'stored on',
  uses: 'uses',
  protectedBy: 'protected by',
  inZone: 'in zone',
  backsUp: 'backs up',
  places: 'places',
  prefers: 'prefers',
  onlyOn: 'only on',
  excludes: 'no backup',
  dependsOn: 'waits for',
};

export const LABEL_FONT = 11;
// labelSize estimates a label's box: generous (0.68 em a character, a halo of 3
// around), so that estimated boxes apart are drawn apart.
export function labelSize(text: string): { width: number; height: number } {
  return { width: Math.ceil(text.length * LABEL_FONT * 0.68) + 8, height: LABEL_FONT + 8 };
}

function boxesOverlap(a: LabelBox, b: LabelBox): boolean {
  return Math.abs(a.x - b.x) * 2 < a.width + b.width && Math.abs(a.y - b.y) * 2 < a.height + b.height;
}

const asLabelBox = (n: Box): LabelBox => ({ x: n.x + n.width / 2, y: n.y + n.height / 2, width: n.width, height: n.height });

// labelObstacles are the boxes no label may cover: nodes, frames with their
// titles (a frame's members are inside it) and, given, labels already placed.
export function labelObstacles(layout: GraphLayout): LabelBox[] {
  const framed = new Set(layout.nodes.filter((n) => n.type === 'frame').map((n) => n.ref));
  const out: LabelBox[] = [];
  for (const n of layout.nodes) {
    if (n.type === 'resource' && framed.has(n.group ?? '')) continue;
    if (n.type === 'frame') out.push(asLabelBox({ x: n.x, y: n.y - SIZES.frameTitle, width: n.width, height: n.height + SIZES.frameTitle }));
    else out.push(asLabelBox(n));
  }
  return out;
}

// Where on its curve a label may sit, best first: the middle, then out towards
// either end.
const LABEL_TS = [0.5, 0.42, 0.58, 0.34, 0.66, 0.26, 0.74, 0.18, 0.82];

// placeLabels gives each edge's label the first place along its curve that
// covers no obstacle and no label placed before it; an edge with no such place
// draws no label (its tooltip and aria-label still say it all). Bundles go first:
// they say the most. `taken` gains the boxes placed.
export function placeLabels(edges: DependencyEdge[], layout: GraphLayout, taken: LabelBox[]): void {
  const at = new Map(layout.nodes.map((n) => [n.id, n]));
  const order = [...edges].sort((a, b) => b.count - a.count);
  for (const e of order) {
    e.textBox = undefined;
    const a = at.get(e.source);
    const b = at.get(e.target);
    if (!a || !b) continue;
    const p0 = handlePoint(a, e.sourceHandle);
    const p3 = handlePoint(b, e.targetHandle);
    const [p1, p2] = bezierControls(p0, e.sourceHandle, p3, e.targetHandle, depCurvature(e.sourceHandle, e.targetHandle));
    const size = labelSize(e.text);
    for (const t of LABEL_TS) {
      const [x, y] = bezierAt(p0, p1, p2, p3, t);
      const box = { x, y, ...size };
      if (taken.some((o) => boxesOverlap(o, box))) continue;
      e.textBox = box;
      taken.push(box);
      break;
    }
  }
}

// memberEdge is the edge of one dependency drawn from resource to resource, or
// to a node's group (an HA rule's node, with its priority: "prefers (2)").
function memberEdge(r: Resource, d: Dependency, a: LayoutNode, b: LayoutNode): DependencyEdge {
  const [sourceHandle, targetHandle] = sides(a, b);
  return {
    id: `dep:${a.ref}->${b.type === 'resource' ? b.ref : b.id}:${d.relation}`,
    source: a.id,
    target: b.id,
    relation: d.relation,
    label: dependencyLabel(r, d),
    count: 1,
    sourceHandle,
    targetHandle,
    text: edgeText(d),
  };
}

// edgeText is the words on one dependency's edge: its verb, and a node's
// priority ("prefers (2)").
const edgeText = (d: Dependency) => `${EDGE_VERB[d.relation]}${d.priority ? ` (${d.priority})` : ''}`;

// depTarget is the node a dependency of r ends at: the resource it names, or,
// grouped by node, the group of the node it names; undefined when not shown.
function depTarget(r: Resource, d: Dependency, at: Map<string, LayoutNode>, nodeGroups: Map<string, LayoutNode> | null): LayoutNode | undefined {
  if (d.kind === NODE_DEP) return nodeGroups?.get(nodeGroupKey(r.cluster, d.name));
  return at.get(depKey(r, d));
}

// nodeGroupsOf maps a node's group key (nodeGroupKey) to its group's node in a
// layout grouped by node; null in one grouped otherwise, where no edge ends at a group.
function nodeGroupsOf(layout: GraphLayout, by: GraphGroupBy): Map<string, LayoutNode> | null {
  if (by !== 'node') return null;
  return new Map(layout.nodes.filter((n) => n.type === 'group').map((n) => [n.ref, n]));
}

// dependencyEdges lists what the graph draws for the resources' dependencies. A
// dependency on a resource filtered out, or not declared, draws nothing. Between
// resources of small groups, one edge each. The members of a wrapped group (a
// frame: hundreds of VMs, say) are drawn as one cluster: one edge from the frame
// per target and relation, with the count ("412 resources of VirtualMachine (vm-001,
// vm-002, vm-003, …) clone debian-12-tpl"); a target inside a frame is reached at its frame the same way.
// Hundreds of crossing curves would be neither readable nor cheap to pan. Labels
// are placed so that none covers another or a node (placeLabels).
export function dependencyEdges(resources: Resource[], layout: GraphLayout, by: GraphGroupBy = 'kind'): DependencyEdge[] {
  const nodeGroups = nodeGroupsOf(layout, by);
  const at = new Map<string, LayoutNode>();
  const frames = new Map<string, LayoutNode>();
  for (const n of layout.nodes) {
    if (n.type === 'resource') at.set(n.ref, n);
    else if (n.type === 'frame') frames.set(n.ref, n);
  }
  const out: DependencyEdge[] = [];
  // oneTarget and oneText are a bundle's words while it stands for one dependency.
  const bundles = new Map<string, DependencyEdge & { names: string[]; groupLabel: string; targetLabel: string; oneTarget: string; oneText: string }>();
  // The dependencies between members of one named frame, by frame.
  const inFrame = new Map<string, DependencyEdge[]>();
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    const key = resourceKey(r);
    const a = at.get(key);
    if (!a) continue;
    const fa = frames.get(a.group ?? '');
    for (const d of r.dependsOn) {
      const b = depTarget(r, d, at, nodeGroups);
      if (!b || b === a) continue;
      const fb = frames.get(b.group ?? '');
      if (!fa) {
        out.push({ ...memberEdge(r, d, a, b), targetFrame: fb ? { id: fb.id, handle: sides(a, fb)[1] } : undefined });
        continue;
      }
      if (fa && fb && fa === fb) {
        // Within a frame of its size (hundreds of VMs of a kind): its members' names
        // say it. Within a named frame (a cluster's resources, grouped by cluster),
        // each dependency as in a graph of that cluster alone.
        if (!fa.named) continue;
        let list = inFrame.get(fa.id);
        if (!list) inFrame.set(fa.id, (list = []));
        list.push(memberEdge(r, d, a, b));
        continue;
      }
      const dst = fb ?? b;
      const id = `dep:${fa.id}->${dst.id}:${d.relation}`;
      let e = bundles.get(id);
      if (!e) {
        const [sourceHandle, targetHandle] = sides(fa, dst);
        e = {
          id,
          source: fa.id,
          target: dst.id,
          relation: d.relation,
          label: '',
          count: 0,
          sourceHandle,
          targetHandle,
          text: '',
          names: [],
          groupLabel: fa.ref,
          targetLabel: fb ? fb.ref : d.kind === NODE_DEP ? `node ${d.name}` : targetWords(r.kind, d),
          oneTarget: fb ? fb.ref : targetWords(r.kind, d),
          oneText: edgeText(d),
        };
        bundles.set(id, e);
      }
      e.count++;
      if (e.names.length < 3) e.names.push(r.name);
    }
  }
  for (const e of bundles.values()) {
    const { names, groupLabel, targetLabel, oneTarget, oneText, ...edge } = e;
    const one = e.count === 1;
    const whoFrom = one ? names[0] : `${e.count} resources of ${groupLabel} (${names.join(', ')}, …)`;
    const whatTo = e.target.startsWith('frame:') ? `resources of ${targetLabel}` : one ? oneTarget : targetLabel;
    out.push({
      ...edge,
      label: `${whoFrom} ${one ? VERB_ONE[e.relation] : PLURAL_VERB[e.relation]} ${whatTo}`,
      text: one ? oneText : `${e.count} ${EDGE_VERB[e.relation]}`,
    });
  }
  const taken = labelObstacles(layout);
  const obstacles = taken.length;
  placeLabels(out, layout, taken);
  // Inside a named frame the labels keep off its members (and every label placed).
  const inside: DependencyEdge[] = [];
  for (const list of inFrame.values()) if (list.length <= IN_FRAME_MAX) inside.push(...list);
  if (inside.length) {
    const placed = taken.slice(obstacles);
    placeLabels(inside, layout, [...placed, ...layout.nodes.filter((n) => n.type !== 'frame').map(asLabelBox)]);
    out.push(...inside);
  }
  return out;
}

// A named frame with more dependencies inside than this draws none of them (a
// cluster of 1,000 resources): they would cost every frame of a pan and read as a
// tangle. A member's own still show while it is hovered or focused (focusEdges).
export const IN_FRAME_MAX = 200;

// focusEdges lists the single dependencies of one resource, both ways (what it
// needs and what needs it, at most `max`): drawn while it is hovered or focused,
// also inside clusters. Their labels avoid the nodes and the labels in `taken`
// (the drawn edges' ones), and, inside a frame, the frame's other members.
export function focusEdges(
  resources: Resource[],
  layout: GraphLayout,
  key: string,
  max = 60,
  taken: LabelBox[] = [],
  by: GraphGroupBy = 'kind',
): DependencyEdge[] {
  const nodeGroups = nodeGroupsOf(layout, by);
  const at = new Map<string, LayoutNode>();
  for (const n of layout.nodes) if (n.type === 'resource') at.set(n.ref, n);
  const out: DependencyEdge[] = [];
  if (!at.has(key)) return out;
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    const from = resourceKey(r);
    for (const d of r.dependsOn) {
      const to = d.kind === NODE_DEP ? groupNodeId(nodeGroupKey(r.cluster, d.name)) : depKey(r, d);
      if ((from !== key && to !== key) || from === to) continue;
      const a = at.get(from);
      const b = depTarget(r, d, at, nodeGroups);
      if (!a || !b) continue;
      // The drawn edge's shape (a and b are the nodes of from and to),
      // under an id of its own.
      out.push({ ...memberEdge(r, d, a, b), id: `focus:${from}->${to}:${d.relation}` });
      if (out.length >= max) break;
    }
    if (out.length >= max) break;
  }
  const obstacles = [...taken, ...layout.nodes.filter((n) => n.type !== 'frame').map(asLabelBox)];
  placeLabels(out, layout, obstacles);
  return out;
}

// dependencySignature identifies the dependencies of a list: equal signatures
// give equal edges for one layout.
export function dependencySignature(resources: Resource[]): string {
  const parts: string[] = [];
  for (const r of resources) {
    if (!r.dependsOn?.length) continue;
    parts.push(`${resourceKey(r)}\u0000${r.dependsOn.map((d) => `${d.kind}/${d.name}/${d.relation}/${d.priority ?? ''}`).join('\u0001')}`);
  }
  return parts.join('\u0002');
}
