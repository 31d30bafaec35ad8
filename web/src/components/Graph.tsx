import {
  Background,
  Controls,
  Handle,
  MiniMap,
  Position,
  ReactFlow,
  ReactFlowProvider,
  useReactFlow,
  useStore,
  type Edge,
  type Node,
  type NodeProps,
} from '@xyflow/react';
import '@xyflow/react/dist/style.css';
import { memo, useEffect, useMemo, useRef, type KeyboardEvent } from 'react';
import type { Resource, Status } from '../api/types';
import { resourceKey, STATUSES } from '../api/types';
import { createLayoutCache, graphGroups, initialViewport, type GraphGroupBy, type GraphLayout } from '../lib/graph';
import { shortRev, timeAgo } from '../lib/format';
import { countByStatus } from '../state/resources';
import { HealthBadge, ProgressBar, StatusBadge, statusClass } from './Status';

type ResourceNodeData = { resource: Resource; emphasis: 'hl' | 'dim' | '' };
type GroupNodeData = { label: string; by: GraphGroupBy; counts: Record<Status, number>; total: number };
type SourceNodeData = { revision: string; message: string; lastPass: string };

type ResourceNode = Node<ResourceNodeData, 'resource'>;
type GroupNode = Node<GroupNodeData, 'tier'>;
type SourceNode = Node<SourceNodeData, 'source'>;
type FrameNode = Node<{ count: number }, 'frame'>;
type FlowNode = ResourceNode | GroupNode | SourceNode | FrameNode;

// Below this zoom a resource node is too small to read: it is drawn as a plain
// coloured box, which keeps a fitted view of 1,000 resources cheap to paint.
const DETAIL_ZOOM = 0.45;
const zoomedOut = (s: { transform: [number, number, number] }) => s.transform[2] < DETAIL_ZOOM;

const ResourceNodeView = memo(function ResourceNodeView({ data }: NodeProps<ResourceNode>) {
  const r = data.resource;
  const far = useStore(zoomedOut);
  if (far) {
    return (
      <div className={`gnode gres gres-far ${statusClass(r.status)} ${data.emphasis}`} title={`${r.kind}/${r.name}: ${r.status}`}>
        <Handle type="target" position={Position.Left} isConnectable={false} />
        <span className="gres-name">{r.name}</span>
      </div>
    );
  }
  return (
    <div className={`gnode gres ${statusClass(r.status)} ${data.emphasis}`} title={r.reason || `${r.kind}/${r.name}`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
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
        <HealthBadge health={r.health} />
      </div>
      {r.progress && <ProgressBar progress={r.progress} compact />}
    </div>
  );
});

const GroupNodeView = memo(function GroupNodeView({ data }: NodeProps<GroupNode>) {
  return (
    <div className="gnode ggroup">
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <div className="ggroup-label">
        <span className="muted">{data.by === 'node' ? 'node' : 'kind'}</span> {data.label}
      </div>
      <div className="ggroup-counts">
        {STATUSES.filter((s) => data.counts[s] > 0).map((s) => (
          <span key={s} className={`dot-count ${statusClass(s)}`} title={`${data.counts[s]} ${s}`}>
            {data.counts[s]}
          </span>
        ))}
      </div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const SourceNodeView = memo(function SourceNodeView({ data }: NodeProps<SourceNode>) {
  return (
    <div className="gnode gsource">
      <div className="gsource-title">
        <span aria-hidden="true">⎇</span> Git source
      </div>
      <div className="gsource-rev" title={data.message}>
        <code>{shortRev(data.revision)}</code> {data.message}
      </div>
      <div className="muted small">last pass {timeAgo(data.lastPass)}</div>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});

const FrameNodeView = memo(function FrameNodeView({ data }: NodeProps<FrameNode>) {
  return (
    <div className="gframe" aria-hidden="true">
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <span className="gframe-count">{data.count}</span>
    </div>
  );
});

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
  onOpen: (key: string) => void;
  colorMode: 'light' | 'dark';
}

// buildFlow turns the layout and the current resources into React Flow's nodes and
// edges, reusing the previous objects of every node whose data did not change.
function useFlowElements(props: GraphProps, layout: GraphLayout) {
  const cache = useRef(new Map<string, FlowNode>());
  const edgeCache = useRef(new Map<string, Edge>());
  const byKey = useMemo(() => new Map(props.resources.map((r) => [resourceKey(r), r])), [props.resources]);
  const groupCounts = useMemo(() => {
    const m = new Map<string, Resource[]>();
    for (const r of props.resources) {
      const k = props.groupBy === 'node' ? r.node || '(no node)' : r.kind;
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
    for (const ln of layout.nodes) {
      const old = prev.get(ln.id);
      let node: FlowNode;
      const position = { x: ln.x, y: ln.y };
      if (ln.type === 'resource') {
        const resource = byKey.get(ln.ref);
        if (!resource) continue;
        const emphasis = props.highlight ? (resource.status === props.highlight ? 'hl' : 'dim') : '';
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
                ariaLabel: `${resource.kind} ${resource.name}: ${resource.status}`,
              };
      } else if (ln.type === 'group') {
        const rs = groupCounts.get(ln.ref) ?? [];
        const counts = countByStatus(rs);
        const o = old as GroupNode | undefined;
        const same =
          o &&
          o.position.x === ln.x &&
          o.position.y === ln.y &&
          o.data.by === props.groupBy &&
          STATUSES.every((s) => o.data.counts[s] === counts[s]);
        node = same
          ? o!
          : {
              id: ln.id,
              type: 'tier',
              position,
              width: ln.width,
              height: ln.height,
              data: { label: ln.ref, by: props.groupBy, counts, total: rs.length },
              focusable: false,
            };
      } else if (ln.type === 'frame') {
        const count = groupCounts.get(ln.ref)?.length ?? 0;
        const o = old as FrameNode | undefined;
        node =
          o && o.position.x === ln.x && o.position.y === ln.y && o.width === ln.width && o.height === ln.height && o.data.count === count
            ? o
            : {
                id: ln.id,
                type: 'frame',
                position,
                width: ln.width,
                height: ln.height,
                data: { count },
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
          o.data.lastPass === props.lastPass;
        node = same
          ? o!
          : {
              id: ln.id,
              type: 'source',
              position,
              width: ln.width,
              height: ln.height,
              data: { revision: props.revision, message: props.revisionMessage, lastPass: props.lastPass },
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
      const edge =
        old && old.className === className && old.animated === animated
          ? old
          : { id: le.id, source: le.source, target: le.target, className, animated, focusable: false, selectable: false };
      nextEdges.set(le.id, edge);
      edges.push(edge);
    }
    edgeCache.current = nextEdges;
    return { nodes, edges };
  }, [layout, byKey, groupCounts, props.highlight, props.groupBy, props.revision, props.revisionMessage, props.lastPass]);
}

function FitOnLayout({ layout }: { layout: GraphLayout }) {
  const flow = useReactFlow();
  const width = useStore((s) => s.width);
  const height = useStore((s) => s.height);
  useEffect(() => {
    if (!width || !height) return;
    const id = requestAnimationFrame(() => {
      const v = initialViewport(layout, { width, height });
      if (v.fit) flow.fitView({ padding: 0.08, duration: 0, maxZoom: 1.2 });
      else flow.setViewport({ x: v.x, y: v.y, zoom: v.zoom });
    });
    return () => cancelAnimationFrame(id);
    // Only a new layout (or a first size) moves the view; resizing keeps it.
  }, [layout, flow, width > 0 && height > 0]);
  return null;
}

function GraphInner(props: GraphProps) {
  const layoutCache = useRef(createLayoutCache());
  const layout = useMemo(
    () => layoutCache.current(graphGroups(props.resources, props.groupBy)),
    [props.resources, props.groupBy],
  );
  const { nodes, edges } = useFlowElements(props, layout);
  const onKeyDown = (e: KeyboardEvent<HTMLDivElement>) => {
    if (e.key !== 'Enter' && e.key !== ' ') return;
    const id = (document.activeElement as HTMLElement | null)?.closest('.react-flow__node')?.getAttribute('data-id');
    if (id?.startsWith('res:')) {
      e.preventDefault();
      props.onOpen(id.slice(4));
    }
  };
  return (
    <div className="graph" onKeyDown={onKeyDown} data-testid="graph">
      <ReactFlow<FlowNode, Edge>
        nodes={nodes}
        edges={edges}
        nodeTypes={nodeTypes}
        nodesDraggable={false}
        nodesConnectable={false}
        elementsSelectable={false}
        edgesFocusable={false}
        onlyRenderVisibleElements={nodes.length > 200}
        minZoom={0.05}
        maxZoom={2}
        panOnScroll
        zoomOnPinch
        colorMode={props.colorMode}
        proOptions={{ hideAttribution: true }}
        onNodeClick={(_, node) => node.type === 'resource' && props.onOpen(node.id.slice(4))}
      >
        <Background gap={24} size={1} />
        <Controls showInteractive={false} />
        <MiniMap
          pannable
          zoomable
          ariaLabel="Overview of the graph"
          nodeColor={(n) =>
            n.type === 'resource'
              ? STATUS_COLOR[(n.data as ResourceNodeData).resource.status] ?? 'var(--muted)'
              : n.type === 'frame'
                ? 'transparent'
                : 'var(--muted)'
          }
          nodeStrokeWidth={0}
        />
        <FitOnLayout layout={layout} />
      </ReactFlow>
    </div>
  );
}

export default function Graph(props: GraphProps) {
  return (
    <ReactFlowProvider>
      <GraphInner {...props} />
    </ReactFlowProvider>
  );
}
