import {
  Background,
  BaseEdge,
  Controls,
  getBezierPath,
  Handle,
  MarkerType,
  MiniMap,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  useStore,
  useStoreApi,
  type Edge,
  type EdgeProps,
  type MiniMapNodeProps,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { memo, useCallback, useEffect, useMemo, useRef, useState, type FocusEvent, type KeyboardEvent } from 'react';
import type { LoadError, Pin, Resource, Status } from '../api/types';
import { DEFAULT_CLUSTER, resourceKey, STATUSES } from '../api/types';
import {
  createLayoutCache,
  dependencyEdges,
  resourceLabel,
  dependencySignature,
  focusEdges,
  graphGroupKey,
  graphGroups,
  groupNodeId,
  initialViewport,
  resourceNodeId,
  READABLE_ZOOM,
  SIZES,
  aspectBucket,
  type DependencyEdge,
  type GraphGroupBy,
  type GraphLayout,
  type LabelBox,
} from '../lib/graph';
import type { Relation } from '../api/types';
import { shortRev, timeAgo } from '../lib/format';
import { REVISION_STATE_CLASS, REVISION_STATE_SHORT, REVISION_STATE_WORDS, revisionState, type RevisionState, type ShownRevision } from '../lib/revstate';
import { countByStatus } from '../state/resources';
import { HealthBadge, ProgressBar, StatusBadge, statusClass } from './Status';

type ResourceNodeData = { resource: Resource; emphasis: 'hl' | 'dim' | '' };
type GroupNodeData = { label: string; by: GraphGroupBy; counts: Record<Status, number>; total: number };
// state says which commit the node shows and why (lib/revstate.ts); head is the
// branch head that failed to load, for the tooltip.
type SourceNodeData = { revision: string; message: string; lastPass: string; state: RevisionState; head: string; clusters?: ClusterRevision[] };
// Each cluster's revision when the clusters shown reconcile different ones (a pin on one).
type ClusterRevision = { cluster: string; revision: string; state: RevisionState };

type ResourceNode = Node<ResourceNodeData, 'resource'>;
type GroupNode = Node<GroupNodeData, 'tier'>;
type SourceNode = Node<SourceNodeData, 'source'>;
// A member of a wrapped group as its frame draws it when zoomed out: a box in the
// status's colour (layout coordinates relative to the frame).
type FarCell = { key: string; name: string; x: number; y: number; status: Status; emphasis: 'hl' | 'dim' | '' };
type FrameNodeData = { count: number; label: string; by: GraphGroupBy; cells?: FarCell[] };
type FrameNode = Node<FrameNodeData, 'frame'>;
type FlowNode = ResourceNode | GroupNode | SourceNode | FrameNode;

// Below this zoom a resource node is too small to read: it is drawn as a plain
// coloured box, which keeps a fitted view of 1,000 resources cheap to paint.
const DETAIL_ZOOM = 0.45;
const zoomedOut = (s: { transform: [number, number, number] }) => s.transform[2] < DETAIL_ZOOM;

// Zoomed out, the members of a wrapped group are not nodes at all but boxes in one
// SVG drawn by their frame (level of detail). Each React Flow node is a positioned
// (transformed) element, a paint layer of its own: with 1,000 of them, hit-testing,
// painting and layerizing them cost 20-30 ms of main thread per frame of a pan
// (docs/benchmarks.md), and with one SVG per group 3 ms. The two zooms differ so
// that a wheel resting near the threshold does not swap hundreds of nodes back and
// forth.
const FAR_BELOW = 0.4;
const NEAR_FROM = 0.5;
function useFarView(): boolean {
  const far = useRef(true);
  return useStore((s) => {
    const z = s.transform[2];
    if (z < FAR_BELOW) far.current = true;
    else if (z >= NEAR_FROM) far.current = false;
    return far.current;
  });
}

// A resource or a frame joins tree edges on its left, and dependency edges on the
// side that faces the other end (graph.ts sides picks the handles).
function SideHandles() {
  return (
    <>
      <Handle type="target" id="in-left" position={Position.Left} isConnectable={false} />
      <Handle type="target" id="in-right" position={Position.Right} isConnectable={false} />
      <Handle type="target" id="in-top" position={Position.Top} isConnectable={false} />
      <Handle type="target" id="in-bottom" position={Position.Bottom} isConnectable={false} />
      <Handle type="source" id="out-right" position={Position.Right} isConnectable={false} />
      <Handle type="source" id="out-left" position={Position.Left} isConnectable={false} />
      <Handle type="source" id="out-top" position={Position.Top} isConnectable={false} />
      <Handle type="source" id="out-bottom" position={Position.Bottom} isConnectable={false} />
    </>
  );
}

const ResourceNodeView = memo(function ResourceNodeView({ data }: NodeProps<ResourceNode>) {
  const r = data.resource;
  const far = useStore(zoomedOut);
  if (far) {
    return (
      <div className={`gnode gres gres-far ${statusClass(r.status)} ${data.emphasis}`} title={`${r.kind}/${r.name}: ${r.status}`}>
        <SideHandles />
        <span className="gres-name">{r.name}</span>
      </div>
    );
  }
  return (
    <div className={`gnode gres ${statusClass(r.status)} ${data.emphasis}`} title={r.reason || `${r.kind}/${r.name}`}>
      <SideHandles />
      <div className="gres-top">
        <StatusBadge status={r.status} compact />
        <span className="gres-name">{r.name}</span>
        {r.needsReboot && (
          <span className="pill warn" title="Applying needs a reboot">
            reboot
          </span>
        )}
      </div>
      <div className="gres-sub">
        <span>{r.kind}</span>
        {r.vmid !== undefined && r.vmid !== null && <span>#{r.vmid}</span>}
        {r.cluster && r.cluster !== DEFAULT_CLUSTER && <span className="gres-cluster">{r.cluster}</span>}
        <HealthBadge health={r.health} />
      </div>
      {r.progress && <ProgressBar progress={r.progress} compact />}
    </div>
  );
});

const GroupNodeView = memo(function GroupNodeView({ data }: NodeProps<GroupNode>) {
  return (
    <div className="gnode ggroup" title={`${data.total} resources: click to zoom to them`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="ggroup-label">
        <span className="muted">{data.by}</span> {data.label}
      </div>
      <div className="ggroup-counts">
        {STATUSES.filter((s) => data.counts[s] > 0).map((s) => (
          <span key={s} className={`dot-count ${statusClass(s)}`} title={`${data.counts[s]} ${s}`}>
            {data.counts[s]}
          </span>
        ))}
      </div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
      {/* After the tree's own handles (an edge without a handle id takes the
          first): where an HA rule's edge to its node comes in, grouped by node. */}
      <SideHandles />
    </div>
  );
});

// SourceNodeView is the Git source: the commit reconciled and, when that is not
// the branch head, why (pinned, or the last good one while HEAD fails to load), in
// the summary bar's words.
const SourceNodeView = memo(function SourceNodeView({ data }: NodeProps<SourceNode>) {
  const why =
    data.state === 'lastGood'
      ? `HEAD${data.head ? ` (${shortRev(data.head)})` : ''} failed to load: this is the last good revision, not HEAD`
      : data.state === 'pinned'
        ? 'Pinned: the branch head is not applied until unpinned'
        : data.message;
  return (
    <div className={`gnode gsource${data.state !== 'head' ? ` gsource-${data.state}` : ''}`}>
      <div className="gsource-title">
        <span aria-hidden="true">⎇</span> Git source
      </div>
      {data.clusters ? (
        data.clusters.map((c) => (
          <div key={c.cluster} className="gsource-rev" title={`${c.cluster}: ${REVISION_STATE_WORDS[c.state]} ${c.revision}`}>
            {c.cluster} <code>{shortRev(c.revision)}</code>{' '}
            <span className={c.state === 'head' ? 'muted small' : REVISION_STATE_CLASS[c.state]}>{REVISION_STATE_SHORT[c.state]}</span>
          </div>
        ))
      ) : (
        <>
          {data.state !== 'head' && (
            <div className={`gsource-state ${REVISION_STATE_CLASS[data.state]}`} title={why}>
              {REVISION_STATE_WORDS[data.state]}
            </div>
          )}
          <div className="gsource-rev" title={data.message}>
            <code title={data.revision}>{shortRev(data.revision)}</code> {data.message}
          </div>
        </>
      )}
      <div className="muted small">last pass {timeAgo(data.lastPass)}</div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

// A frame names its group above its top edge ("node pve1 · 340"), so a
// zoomed-in view inside it still says which node or kind it shows.
const FrameNodeView = memo(function FrameNodeView({ data, width, height }: NodeProps<FrameNode>) {
  return (
    <div className="gframe" aria-hidden="true">
      {data.cells && width && height ? <FarCells cells={data.cells} width={width} height={height} /> : null}
      <SideHandles />
      <span className="gframe-title">
        <span className="gframe-by">{data.by}</span> {data.label} <span className="gframe-count">· {data.count}</span>
      </span>
    </div>
  );
});

// FarCells draws a zoomed-out group's members, one box each; a click on one opens
// it (graph.tsx's click handler reads data-key).
const FarCells = memo(function FarCells({ cells, width, height }: { cells: FarCell[]; width: number; height: number }) {
  return (
    <svg className="gfar" width={width} height={height} viewBox={`0 0 ${width} ${height}`}>
      {cells.map((c) => (
        <rect
          key={c.key}
          data-key={c.key}
          className={`gres gres-cell ${statusClass(c.status)} ${c.emphasis}`}
          x={c.x}
          y={c.y}
          width={SIZES.resource.width}
          height={SIZES.resource.height}
          rx={6}
        >
          <title>{`${c.name}: ${c.status}`}</title>
        </rect>
      ))}
    </svg>
  );
});

// Text on an edge is drawn only when it is big enough to read.
const LABEL_ZOOM = 0.8;
const labelsShown = (s: { transform: [number, number, number] }) => s.transform[2] >= LABEL_ZOOM;

type DepEdgeData = { relation: Relation; label: string; count: number; text: string; textBox?: LabelBox };
type DepEdge = Edge<DepEdgeData, 'dep'>;

// DepEdgeView draws one dependency: a curve with an arrow towards what is
// needed and, zoomed in (a bundle always), the relation's verb where graph.ts
// placeLabels found room for it. The sentence naming both ends is the edge's
// aria-label (set on the edge) and its tooltip.
const DepEdgeView = memo(function DepEdgeView(p: EdgeProps<DepEdge>) {
  const [path] = getBezierPath({
    sourceX: p.sourceX,
    sourceY: p.sourceY,
    sourcePosition: p.sourcePosition,
    targetX: p.targetX,
    targetY: p.targetY,
    targetPosition: p.targetPosition,
    curvature: p.sourcePosition === p.targetPosition ? 0.6 : 0.25,
  });
  const box = p.data?.textBox;
  const near = useStore(labelsShown);
  const count = p.data?.count ?? 1;
  // A bundle is drawn thicker the more it stands for, and always says how many.
  const width = count > 1 ? Math.min(8, 1.6 + Math.log2(count)) : undefined;
  return (
    <>
      <BaseEdge path={path} markerEnd={p.markerEnd} interactionWidth={near ? 12 : 0} style={width ? { strokeWidth: width } : undefined} />
      {(near || count > 1) && p.data && box && (
        <text x={box.x} y={box.y} className={`gdep-label${count > 1 ? ' bundle' : ''}`} textAnchor="middle" dominantBaseline="central">
          <title>{p.data.label}</title>
          {p.data.text}
        </text>
      )}
    </>
  );
});

// TreeEdgeView draws an edge of the Git -> group -> resource tree along the
// route the layout gave it (through the gutters between blocks), corners rounded.
type TreeEdge = Edge<{ points: [number, number][] }, 'tree'>;
const TreeEdgeView = memo(function TreeEdgeView(p: EdgeProps<TreeEdge>) {
  return <BaseEdge path={roundedPath(p.data?.points ?? [])} interactionWidth={0} />;
});

function roundedPath(pts: [number, number][], r = 10): string {
  if (pts.length < 2) return '';
  let d = `M${pts[0][0]},${pts[0][1]}`;
  for (let i = 1; i < pts.length - 1; i++) {
    const [px, py] = pts[i - 1];
    const [x, y] = pts[i];
    const [nx, ny] = pts[i + 1];
    const k1 = Math.min(r, Math.hypot(x - px, y - py) / 2);
    const k2 = Math.min(r, Math.hypot(nx - x, ny - y) / 2);
    const ux = Math.sign(x - px) * k1;
    const uy = Math.sign(y - py) * k1;
    const vx = Math.sign(nx - x) * k2;
    const vy = Math.sign(ny - y) * k2;
    d += ` L${x - ux},${y - uy} Q${x},${y} ${x + vx},${y + vy}`;
  }
  const [lx, ly] = pts[pts.length - 1];
  return `${d} L${lx},${ly}`;
}

const edgeTypes = { dep: DepEdgeView, tree: TreeEdgeView };

// With more nodes than this, the minimap draws groups and frames, not each
// resource: its viewport box moves on every frame of a pan, and redrawing 1,000
// rectangles with it cost as much as the graph itself.
const BIG_GRAPH = 300;

function MiniNodeLite({ id, x, y, width, height, color }: MiniMapNodeProps) {
  if (id.startsWith('res:')) return null;
  return <rect x={x} y={y} width={width} height={height} rx={8} fill={color} />;
}

// 'tier', not 'group': React Flow styles its own built-in 'group' type.
const nodeTypes = { resource: ResourceNodeView, tier: GroupNodeView, source: SourceNodeView, frame: FrameNodeView };

const STATUS_COLOR: Record<string, string> = {
  Synced: 'var(--st-synced)',
  OutOfSync: 'var(--st-outofsync)',
  Progressing: 'var(--st-progressing)',
  Failed: 'var(--st-failed)',
  Conflict: 'var(--st-conflict)',
  Unknown: 'var(--st-unknown)',
};

export interface GraphProps {
  resources: Resource[];
  groupBy: GraphGroupBy;
  highlight: Status | '';
  revision: string;
  revisionMessage: string;
  lastPass: string;
  // What the revision is: a pin, or the last good one while HEAD fails to load.
  pinned?: Pin | null;
  loadError?: LoadError | null;
  // Each cluster's, when the clusters shown reconcile different revisions.
  clusterRevisions?: ShownRevision[];
  onOpen: (key: string) => void;
  colorMode: 'light' | 'dark';
}

// useDependencyEdges keeps the dependency edges of a layout; a status update
// that changes no dependency keeps the same array.
function useDependencyEdges(resources: Resource[], layout: GraphLayout, by: GraphGroupBy): DependencyEdge[] {
  const last = useRef<{ sig: string; layout: GraphLayout; by: GraphGroupBy; edges: DependencyEdge[] } | null>(null);
  return useMemo(() => {
    const sig = dependencySignature(resources);
    const l = last.current;
    if (l && l.sig === sig && l.layout === layout && l.by === by) return l.edges;
    const edges = dependencyEdges(resources, layout, by);
    last.current = { sig, layout, by, edges };
    return edges;
  }, [resources, layout, by]);
}

// In layout units, not stroke widths: a bundle's thick stroke keeps a normal arrow.
const ARROW = { type: MarkerType.ArrowClosed, width: 22, height: 22, markerUnits: 'userSpaceOnUse', color: 'var(--dep-edge)' } as const;
// An HA rule's edge to a node's group is a placement: its arrow has its colour.
const PLACE_ARROW = { ...ARROW, color: 'var(--place-edge)' } as const;
const isPlacement = (r: Relation) => r === 'prefers' || r === 'onlyOn';

// useFlowElements turns the layout and the current resources into React Flow's
// nodes and edges, reusing the previous objects of every node and edge whose data
// did not change, so that React Flow re-renders only what changed.
function useFlowElements(props: GraphProps, layout: GraphLayout, focusKey: string, far: boolean) {
  const cache = useRef(new Map<string, FlowNode>());
  const edgeCache = useRef(new Map<string, Edge>());
  const byKey = useMemo(() => new Map(props.resources.map((r) => [resourceKey(r), r])), [props.resources]);
  const bundled = useDependencyEdges(props.resources, layout, props.groupBy);
  // The hovered or focused resource's own dependencies, both ways, on top.
  const focused = useMemo(() => {
    if (!focusKey) return [];
    // Its labels keep off the drawn edges' ones.
    const taken: LabelBox[] = [];
    for (const e of bundled) if (e.textBox) taken.push(e.textBox);
    return focusEdges(props.resources, layout, focusKey, 60, taken, props.groupBy);
  }, [props.resources, layout, focusKey, bundled, props.groupBy]);
  const deps = useMemo(() => (focused.length ? [...bundled, ...focused] : bundled), [bundled, focused]);
  const groupCounts = useMemo(() => {
    const m = new Map<string, Resource[]>();
    for (const r of props.resources) {
      const k = graphGroupKey(r, props.groupBy);
      let l = m.get(k);
      if (!l) m.set(k, (l = []));
      l.push(r);
    }
    return m;
  }, [props.resources, props.groupBy]);

  return useMemo(() => {
    const prev = cache.current;
    const next = new Map<string, FlowNode>();
    const nodes: FlowNode[] = [];
    const by = props.groupBy;
    const revState = revisionState(props.pinned, props.loadError);
    const head = props.loadError?.revision ?? '';
    const clusterRevs = props.clusterRevisions?.map((r) => ({ cluster: r.cluster ?? '', revision: r.revision, state: revisionState(r.pinned, r.loadError) }));
    const clusterKey = clusterRevs?.map((c) => `${c.cluster}:${c.revision}:${c.state}`).join(' ') ?? '';
    const emphasisOf = (r: Resource) => (props.highlight ? (r.status === props.highlight ? 'hl' : 'dim') : '');
    // Zoomed out, a frame draws its members (FarCells) instead of them being nodes.
    const cells = new Map<string, FarCell[]>();
    if (far) {
      const frameAt = new Map<string, { x: number; y: number }>();
      for (const ln of layout.nodes) if (ln.type === 'frame') frameAt.set(ln.ref, ln);
      for (const ln of layout.nodes) {
        const f = ln.type === 'resource' ? frameAt.get(ln.group ?? '') : undefined;
        const resource = f && byKey.get(ln.ref);
        if (!f || !resource) continue;
        let l = cells.get(ln.group!);
        if (!l) cells.set(ln.group!, (l = []));
        l.push({ key: ln.ref, name: resource.name, x: ln.x - f.x, y: ln.y - f.y, status: resource.status, emphasis: emphasisOf(resource) });
      }
    }
    for (const ln of layout.nodes) {
      const old = prev.get(ln.id);
      let node: FlowNode;
      const position = { x: ln.x, y: ln.y };
      if (ln.type === 'resource') {
        const resource = byKey.get(ln.ref);
        if (!resource || cells.has(ln.group ?? '')) continue;
        const emphasis = emphasisOf(resource);
        const o = old as ResourceNode | undefined;
        node =
          o && o.data.resource === resource && o.data.emphasis === emphasis && o.position.x === ln.x && o.position.y === ln.y
            ? o
            : {
                id: ln.id,
                type: 'resource',
                position,
                width: ln.width,
                height: ln.height,
                data: { resource, emphasis },
                ariaLabel: resourceLabel(resource),
              };
      } else if (ln.type === 'group') {
        const rs = groupCounts.get(ln.ref) ?? [];
        const counts = countByStatus(rs);
        const o = old as GroupNode | undefined;
        const same =
          o &&
          o.position.x === ln.x &&
          o.position.y === ln.y &&
          o.data.by === by &&
          o.data.total === rs.length &&
          STATUSES.every((s) => o.data.counts[s] === counts[s]);
        node = same
          ? o!
          : {
              id: ln.id,
              type: 'tier',
              position,
              width: ln.width,
              height: ln.height,
              data: { label: ln.ref, by, counts, total: rs.length },
              ariaLabel: `${by} ${ln.ref}, ${rs.length} resource${rs.length === 1 ? '' : 's'}: zoom to fit`,
            };
      } else if (ln.type === 'frame') {
        const count = groupCounts.get(ln.ref)?.length ?? 0;
        const o = old as FrameNode | undefined;
        const fc = cells.get(ln.ref);
        node =
          o &&
          o.position.x === ln.x &&
          o.position.y === ln.y &&
          o.width === ln.width &&
          o.height === ln.height &&
          o.data.count === count &&
          o.data.by === by &&
          o.data.label === ln.ref &&
          sameCells(o.data.cells, fc)
            ? o
            : {
                id: ln.id,
                type: 'frame',
                position,
                width: ln.width,
                height: ln.height,
                data: { count, label: ln.ref, by, cells: fc },
                focusable: false,
                selectable: false,
                className: 'rf-frame',
              };
      } else {
        const o = old as SourceNode | undefined;
        const same =
          o &&
          o.position.y === ln.y &&
          o.data.revision === props.revision &&
          o.data.message === props.revisionMessage &&
          o.data.lastPass === props.lastPass &&
          o.data.state === revState &&
          o.data.head === head &&
          (o.data.clusters?.map((c) => `${c.cluster}:${c.revision}:${c.state}`).join(' ') ?? '') === clusterKey;
        node = same
          ? o!
          : {
              id: ln.id,
              type: 'source',
              position,
              width: ln.width,
              height: ln.height,
              data: { revision: props.revision, message: props.revisionMessage, lastPass: props.lastPass, state: revState, head, clusters: clusterRevs },
              focusable: false,
            };
      }
      next.set(ln.id, node);
      nodes.push(node);
    }
    cache.current = next;

    let progressing = 0;
    for (const n of nodes) if (n.type === 'resource' && n.data.resource.status === 'Progressing') progressing++;
    const prevEdges = edgeCache.current;
    const nextEdges = new Map<string, Edge>();
    const edges: Edge[] = [];
    const keep = (e: Edge) => {
      nextEdges.set(e.id, e);
      edges.push(e);
    };
    for (const le of layout.edges) {
      const target = next.get(le.target);
      if (!target) continue;
      const status = target.type === 'resource' ? target.data.resource.status : '';
      const className = `gedge ${status ? statusClass(status) : ''}${
        target.type === 'resource' && target.data.emphasis === 'dim' ? ' dim' : ''
      }`;
      // Animated edges cost paint time on every frame: only while few resources run.
      const animated = status === 'Progressing' && progressing <= 40;
      const old = prevEdges.get(le.id);
      const ariaLabel = treeEdgeLabel(next.get(le.source), target);
      keep(
        old && old.className === className && old.animated === animated && old.ariaLabel === ariaLabel && old.data?.points === le.points
          ? old
          : ({
              id: le.id,
              type: 'tree',
              source: le.source,
              target: le.target,
              targetHandle: target.type === 'resource' || target.type === 'frame' ? 'in-left' : undefined,
              className,
              animated,
              focusable: false,
              selectable: false,
              ariaLabel,
              data: { points: le.points },
            } satisfies TreeEdge),
      );
    }
    for (const de of deps) {
      const a = next.get(de.source) as ResourceNode | FrameNode | undefined;
      let b = next.get(de.target) as ResourceNode | FrameNode | undefined;
      let target = de.target;
      let targetHandle = de.targetHandle;
      // Zoomed out, a member of a frame is no node: the edge ends at its frame.
      if (!b && de.targetFrame) {
        target = de.targetFrame.id;
        targetHandle = de.targetFrame.handle;
        b = next.get(target) as FrameNode | undefined;
      }
      if (!a || !b) continue;
      // With a highlight, an edge touching a highlighted resource stands out.
      const em = de.id.startsWith('focus:')
        ? ' hl'
        : a.type !== 'resource' || b.type !== 'resource' || !props.highlight
          ? ''
          : a.data.emphasis === 'hl' || b.data.emphasis === 'hl'
            ? ' hl'
            : ' dim';
      const className = `gdep rel-${de.relation}${em}`;
      const old = prevEdges.get(de.id) as DepEdge | undefined;
      keep(
        old &&
          old.className === className &&
          old.data?.label === de.label &&
          old.data?.count === de.count &&
          old.data?.textBox === de.textBox &&
          old.target === target &&
          old.sourceHandle === de.sourceHandle &&
          old.targetHandle === targetHandle
          ? old
          : ({
              id: de.id,
              type: 'dep',
              source: de.source,
              target,
              sourceHandle: de.sourceHandle,
              targetHandle,
              className,
              markerEnd: isPlacement(de.relation) ? PLACE_ARROW : ARROW,
              focusable: false,
              selectable: false,
              ariaLabel: de.label,
              data: { relation: de.relation, label: de.label, count: de.count, text: de.text, textBox: de.textBox },
            } satisfies DepEdge),
      );
    }
    edgeCache.current = nextEdges;
    return { nodes, edges };
  }, [layout, deps, byKey, groupCounts, far, props.highlight, props.groupBy, props.revision, props.revisionMessage, props.lastPass, props.pinned, props.loadError, props.clusterRevisions]);
}

function sameCells(a: FarCell[] | undefined, b: FarCell[] | undefined): boolean {
  if (!a || !b) return a === b;
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const x = a[i];
    const y = b[i];
    if (x.key !== y.key || x.status !== y.status || x.emphasis !== y.emphasis || x.x !== y.x || x.y !== y.y || x.name !== y.name) return false;
  }
  return true;
}

// ViewControl moves the view when the layout or the highlight changes: onto the
// highlighted resources (centred on one, fitted around several), else the
// layout's first view. Status updates move nothing: the highlighted set is read
// when the highlight is chosen, not followed as resources change status.
function ViewControl({ layout, highlight, highlighted }: { layout: GraphLayout; highlight: string; highlighted: () => string[] }) {
  const flow = useReactFlow();
  const store = useStoreApi();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  const ready = width > 0 && height > 0;
  const lastLayout = useRef<GraphLayout | null>(null);
  useEffect(() => {
    if (!ready) return;
    const newLayout = lastLayout.current !== layout;
    lastLayout.current = layout;
    const id = requestAnimationFrame(() => {
      const ids = highlight ? highlighted() : [];
      if (ids.length === 1) {
        const n = layout.nodes.find((x) => x.id === ids[0]);
        if (n) flow.setCenter(n.x + n.width / 2, n.y + n.height / 2, { zoom: Math.max(flow.getZoom(), 1), duration: newLayout ? 0 : 300 });
        return;
      }
      if (ids.length > 1) {
        const want = new Set(ids);
        fitBox(flow, store, boxOf(layout.nodes.filter((n) => want.has(n.id))), { padding: 0.15, maxZoom: 1.2, duration: newLayout ? 0 : 300 });
        return;
      }
      if (!newLayout) return;
      const v = initialViewport(layout, { width, height });
      if (v.fit) fitBox(flow, store, { x: 0, y: 0, r: layout.width, b: layout.height }, { padding: 0.08, maxZoom: 1.2, duration: 0 });
      else flow.setViewport({ x: v.x, y: v.y, zoom: v.zoom });
    });
    return () => cancelAnimationFrame(id);
    // Only a new layout, a new highlight (or a first size) moves the view; resizing keeps it.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [layout, highlight, flow, ready]);
  return null;
}

type Bounds = { x: number; y: number; r: number; b: number };

function boxOf(nodes: { x: number; y: number; width: number; height: number }[]): Bounds {
  if (!nodes.length) return { x: 0, y: 0, r: 1, b: 1 };
  return {
    x: Math.min(...nodes.map((n) => n.x)),
    y: Math.min(...nodes.map((n) => n.y)),
    r: Math.max(...nodes.map((n) => n.x + n.width)),
    b: Math.max(...nodes.map((n) => n.y + n.height)),
  };
}

// fitBox shows a box of the layout whole and centred. It works from the layout,
// not from React Flow's nodes, since zoomed out a wrapped group's members are no
// nodes (FarCells) and fitView would not know where they are.
function fitBox(
  flow: ReturnType<typeof useReactFlow>,
  store: ReturnType<typeof useStoreApi>,
  box: Bounds,
  opts: { padding: number; maxZoom: number; duration: number },
) {
  const { width, height, minZoom } = store.getState();
  const w = Math.max(box.r - box.x, 1);
  const h = Math.max(box.b - box.y, 1);
  const zoom = Math.max(minZoom, Math.min(opts.maxZoom, width / (w * (1 + opts.padding)), height / (h * (1 + opts.padding))));
  const x = width / 2 - (box.x + w / 2) * zoom;
  const y = height / 2 - (box.y + h / 2) * zoom;
  flow.setViewport({ x, y, zoom }, { duration: opts.duration });
}

function GraphInner(props: GraphProps) {
  const layoutCache = useRef(createLayoutCache());
  const flow = useReactFlow();
  // The layout fills the pane's shape (rounded, so a small resize keeps it).
  const aspect = useStore((s) => aspectBucket(s.width, s.height));
  const layout = useMemo(
    () => layoutCache.current(graphGroups(props.resources, props.groupBy), aspect),
    [props.resources, props.groupBy, aspect],
  );
  const [focusKey, setFocusKey] = useState('');
  // While the view pans or zooms, nodes take no pointer (styles.css): the browser
  // then skips hit-testing 1,000 nodes on every mouse move.
  const [moving, setMoving] = useState(false);
  const onMoveStart = useCallback(() => setMoving(true), []);
  const onMoveEnd = useCallback(() => setMoving(false), []);
  const far = useFarView();
  const { nodes, edges } = useFlowElements(props, layout, focusKey, far);
  const big = layout.nodes.length > BIG_GRAPH;
  const current = useRef(props);
  current.current = props;
  // The resources the highlight picks, nodes or not (FarCells).
  const highlighted = useCallback(() => {
    const { resources, highlight } = current.current;
    return highlight ? resources.filter((r) => r.status === highlight).map((r) => resourceNodeId(resourceKey(r))) : [];
  }, []);
  // zoomToGroup shows one group's resources (its frame when it has one): all of
  // them when they are readable that way, else its top left corner at a readable
  // zoom (with the frame's title), to pan on from there.
  const store = useStoreApi();
  const zoomToGroup = useCallback(
    (key: string) => {
      const frame = layout.nodes.find((n) => n.type === 'frame' && n.ref === key);
      const members = frame ? [frame] : layout.nodes.filter((n) => n.type === 'resource' && n.group === key);
      if (!members.length) return;
      const box = boxOf(members);
      const { width, height } = store.getState();
      const pad = 24;
      const title = frame ? 28 : 0;
      const fit = Math.min((width - 2 * pad) / (box.r - box.x), (height - 2 * pad) / (box.b - box.y + title));
      if (fit >= READABLE_ZOOM) {
        const group = layout.nodes.find((n) => n.id === groupNodeId(key));
        fitBox(flow, store, boxOf(frame || !group ? members : [group, ...members]), { padding: 0.06, maxZoom: 1.2, duration: 300 });
        return;
      }
      const zoom = READABLE_ZOOM;
      flow.setViewport({ x: pad - box.x * zoom, y: pad - (box.y - title) * zoom, zoom }, { duration: 300 });
    },
    [flow, layout, store],
  );
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Enter' && e.key !== ' ') return;
    const id = (document.activeElement as HTMLElement | null)?.closest('.react-flow__node')?.getAttribute('data-id');
    if (id?.startsWith('res:')) {
      e.preventDefault();
      props.onOpen(id.slice(4));
    } else if (id?.startsWith('group:')) {
      e.preventDefault();
      zoomToGroup(id.slice(6));
    }
  };
  // A resource's own dependencies show while the keyboard is on it.
  const onFocus = (e: FocusEvent<HTMLDivElement>) => {
    const id = (e.target as HTMLElement).closest('.react-flow__node')?.getAttribute('data-id');
    if (id?.startsWith('res:')) setFocusKey(id.slice(4));
  };
  return (
    <div className={`graph${moving ? ' moving' : ''}`} onKeyDown={onKeyDown} onFocus={onFocus} data-testid="graph">
      <ReactFlow<FlowNode, Edge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        edgeTypes={edgeTypes}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        edgesFocusable={false}
        onlyRenderVisibleElements={layout.nodes.length > 200}
        minZoom={0.05}
        maxZoom={2}
        panOnScroll
        zoomOnPinch
        colorMode={props.colorMode}
        proOptions={{ hideAttribution: true }}
        onMoveStart={onMoveStart}
        onMoveEnd={onMoveEnd}
        onNodeMouseEnter={(_, node) => node.type === 'resource' && setFocusKey(node.id.slice(4))}
        onNodeMouseLeave={(_, node) => node.type === 'resource' && setFocusKey((k) => (k === node.id.slice(4) ? '' : k))}
        onNodeClick={(e, node) => {
          if (node.type === 'resource') props.onOpen(node.id.slice(4));
          else if (node.type === 'tier') zoomToGroup(node.id.slice(6));
          else if (node.type === 'frame') {
            // Zoomed out, a box in a frame is a resource: open it.
            const key = (e.target as Element).closest?.('[data-key]')?.getAttribute('data-key');
            if (key) props.onOpen(key);
          }
        }}
      >
        {/* The dots move with every frame of a pan and are painted again each time:
            a big graph's own boxes show the movement well enough. */}
        {!big && <Background gap={24} size={1} />}
        <Controls showInteractive={false} />
        <MiniMap
          pannable
          zoomable
          ariaLabel="Overview of the graph"
          nodeColor={(n) =>
            n.type === 'resource'
              ? STATUS_COLOR[(n.data as ResourceNodeData).resource.status] ?? 'var(--muted)'
              : n.type === 'frame'
                ? big
                  ? 'var(--border-strong)'
                  : 'transparent'
                : 'var(--muted)'
          }
          nodeComponent={big ? MiniNodeLite : undefined}
          nodeStrokeWidth={0}
        />
        <ViewControl layout={layout} highlight={props.highlight} highlighted={highlighted} />
      </ReactFlow>
    </div>
  );
}

// treeEdgeLabel names both ends of an edge of the Git -> group -> resource tree.
function treeEdgeLabel(from: FlowNode | undefined, to: FlowNode): string {
  const name = (n: FlowNode | undefined): string => {
    switch (n?.type) {
      case 'source':
        return 'Git source';
      case 'tier':
        return `${n.data.by} ${n.data.label}`;
      case 'frame':
        return `the ${n.data.count} resources of ${n.data.by} ${n.data.label}`;
      case 'resource':
        return `${n.data.resource.kind} ${n.data.resource.name}`;
    }
    return '';
  };
  return `${name(from)} holds ${name(to)}`;
}

export default function Graph(props: GraphProps) {
  return (
    <ReactFlowProvider>
      <GraphInner {...props} />
    </ReactFlowProvider>
  );
}
