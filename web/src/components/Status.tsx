import type { Action, Health, PlanAction, Progress, Status } from '../api/types';

const STATUS_ICON: Record<Status, string> = {
  Synced: '✓',
  OutOfSync: '≠',
  Progressing: '↻',
  Failed: '✕',
  Conflict: '⚠',
  Unknown: '?',
};

export const STATUS_LABEL: Record<Status, string> = {
  Synced: 'Synced',
  OutOfSync: 'Out of sync',
  Progressing: 'Progressing',
  Failed: 'Failed',
  Conflict: 'Conflict',
  Unknown: 'Unknown',
};

export function statusClass(s: string): string {
  return `st-${(s || 'Unknown').toLowerCase()}`;
}

export function StatusBadge({ status, compact = false }: { status: Status; compact?: boolean }) {
  const s = STATUS_LABEL[status] ? status : 'Unknown';
  return (
    <span className={`badge ${statusClass(s)}`} title={`Sync status: ${STATUS_LABEL[s]}`}>
      <span aria-hidden="true" className="badge-icon">
        {STATUS_ICON[s]}
      </span>
      {!compact && STATUS_LABEL[s]}
      {compact && <span className="sr-only">{STATUS_LABEL[s]}</span>}
    </span>
  );
}

const HEALTH_ICON: Record<Health, string> = {
  Healthy: '♥',
  Progressing: '◔',
  Suspended: '❚❚',
  Missing: '◌',
  Degraded: '♡',
  Unknown: '?',
};

export function HealthBadge({ health }: { health?: Health }) {
  const h: Health = health && HEALTH_ICON[health] ? health : 'Unknown';
  return (
    <span className={`health h-${h.toLowerCase()}`} title={`Health: ${h}`}>
      <span aria-hidden="true">{HEALTH_ICON[h]}</span> {h}
    </span>
  );
}

export function ActionBadge({ action, conflict }: { action?: Action; conflict?: boolean }) {
  if (conflict) return <span className="action act-conflict">conflict</span>;
  const a = action ?? 'none';
  return <span className={`action act-${a}`}>{a}</span>;
}

export function ProgressBar({ progress, compact = false }: { progress: Progress; compact?: boolean }) {
  const pct = typeof progress.percent === 'number' ? Math.max(0, Math.min(100, progress.percent)) : null;
  const label = progress.message || 'in progress';
  return (
    <div className={`progress${compact ? ' compact' : ''}`} title={progress.task ? `${label} (${progress.task})` : label}>
      <div
        className={`progress-track${pct === null ? ' indeterminate' : ''}`}
        role="progressbar"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={100}
        aria-valuenow={pct ?? undefined}
      >
        <div className="progress-fill" style={pct === null ? undefined : { width: `${pct}%` }} />
      </div>
      {!compact && (
        <span className="progress-label">
          {label}
          {pct !== null && ` · ${Math.round(pct)}%`}
        </span>
      )}
    </div>
  );
}

// unplannable: an action that cannot be carried out (a create on a storage that
// does not exist is Failed), said beside the action so it is not read as a change.
export function unplannable(a: PlanAction): boolean {
  return a.action !== 'none' && (a.status === 'Failed' || a.status === 'Unknown');
}
