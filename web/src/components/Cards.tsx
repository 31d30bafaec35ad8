import { memo, useCallback, useMemo, useState } from 'react';
import type { Resource } from '../api/types';
import { DEFAULT_CLUSTER, resourceKey, STATUSES } from '../api/types';
import { groupResources, type Group } from '../lib/grouping';
import type { GroupBy } from '../state/filters';
import { HealthBadge, ProgressBar, StatusBadge, statusClass } from './Status';
import { VirtualList } from './VirtualList';

export const CARD_MIN_WIDTH = 250;
export const CARD_HEIGHT = 104;
export const CARD_GAP = 10;
export const HEADER_HEIGHT = 44;

export type CardRow =
  | { type: 'header'; group: Group }
  | { type: 'cards'; groupKey: string; index: number; resources: Resource[] };

// cardRows flattens groups into rows of `columns` cards, for the virtual list.
export function cardRows(groups: Group[], columns: number): CardRow[] {
  const rows: CardRow[] = [];
  const cols = Math.max(1, columns);
  for (const g of groups) {
    rows.push({ type: 'header', group: g });
    for (let i = 0; i < g.resources.length; i += cols) {
      rows.push({ type: 'cards', groupKey: g.key, index: i / cols, resources: g.resources.slice(i, i + cols) });
    }
  }
  return rows;
}

export function columnsFor(width: number): number {
  return Math.max(1, Math.floor((width - 16 + CARD_GAP) / (CARD_MIN_WIDTH + CARD_GAP)));
}

export const ResourceCard = memo(function ResourceCard({ r, onOpen }: { r: Resource; onOpen: (key: string) => void }) {
  const key = resourceKey(r);
  return (
    <button type="button" className={`card ${statusClass(r.status)}`} onClick={() => onOpen(key)} data-key={key}>
      <div className="card-top">
        <StatusBadge status={r.status} compact />
        <span className="card-name" title={r.name}>
          {r.name}
        </span>
        <HealthBadge health={r.health} />
      </div>
      <div className="card-meta">
        <span>{r.kind}</span>
        {r.cluster && r.cluster !== DEFAULT_CLUSTER && <span className="card-cluster">· {r.cluster}</span>}
        {r.node && <span>· {r.node}</span>}
        {r.node && r.manifestNode && (
          <span className="pill" title={`The manifest says ${r.manifestNode}: moved by HA or a migration, left where it is`}>
            moved
          </span>
        )}
        {r.vmid !== undefined && r.vmid !== null && <span>· #{r.vmid}</span>}
        {r.status === 'Conflict' && r.owned === false && <span className="pill warn">not owned</span>}
        {r.syncPolicy && r.syncPolicy !== 'auto' && <span className="pill">sync: {r.syncPolicy}</span>}
      </div>
      {r.progress ? (
        <ProgressBar progress={r.progress} />
      ) : (
        <div className="card-reason" title={r.reason}>
          {r.action && r.action !== 'none' ? <span className={`action act-${r.action}`}>{r.action}</span> : null}
          {r.needsReboot && <span className="pill warn">reboot</span>}
          <span>{r.reason || (r.status === 'Synced' ? 'matches the manifest' : '')}</span>
        </div>
      )}
      <div className="card-tags">
        {r.summary && (
          <span className="card-summary" title={r.summary}>
            {r.summary}
          </span>
        )}
        {(r.tags ?? []).slice(0, 4).map((t) => (
          <span key={t} className="tag">
            {t}
          </span>
        ))}
      </div>
    </button>
  );
});

function GroupHeader({ group }: { group: Group }) {
  return (
    <div className="group-header">
      <h3>{group.label}</h3>
      <span className="muted">{group.resources.length}</span>
      <span className="group-counts">
        {STATUSES.filter((s) => group.counts[s] > 0).map((s) => (
          <span key={s} className={`dot-count ${statusClass(s)}`} title={`${group.counts[s]} ${s}`}>
            {group.counts[s]} {s}
          </span>
        ))}
      </span>
    </div>
  );
}

export default function Cards({
  resources,
  groupBy,
  onOpen,
}: {
  resources: Resource[];
  groupBy: GroupBy;
  onOpen: (key: string) => void;
}) {
  const [columns, setColumns] = useState(4);
  const groups = useMemo(() => groupResources(resources, groupBy), [resources, groupBy]);
  const rows = useMemo(() => cardRows(groups, columns), [groups, columns]);
  const onWidth = useCallback((w: number) => setColumns(columnsFor(w)), []);
  const rowHeight = useCallback((row: CardRow) => (row.type === 'header' ? HEADER_HEIGHT : CARD_HEIGHT + CARD_GAP), []);
  return (
    <VirtualList
      className="cards"
      label="Resources"
      items={rows}
      rowHeight={rowHeight}
      onWidth={onWidth}
      rowKey={(row) => (row.type === 'header' ? `h:${row.group.key}` : `c:${row.groupKey}:${row.index}`)}
      renderRow={(row) =>
        row.type === 'header' ? (
          <GroupHeader group={row.group} />
        ) : (
          <div className="card-row" style={{ gridTemplateColumns: `repeat(${columns}, minmax(0, 1fr))` }}>
            {row.resources.map((r) => (
              <ResourceCard key={resourceKey(r)} r={r} onOpen={onOpen} />
            ))}
          </div>
        )
      }
    />
  );
}
