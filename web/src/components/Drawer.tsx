import { useEffect, useRef, useState } from 'react';
import { api, resourcePath } from '../api/client';
import { useAction } from '../api/useAction';
import { useApiGet } from '../api/useApi';
import { parseResourceKey, resourceKey as keyOf, type Accepted, type HistoryEntry, type ResourceDetail } from '../api/types';
import { actorText, formatTime, shortRev, timeAgo, waitText } from '../lib/format';
import { revisionHref } from '../lib/links';
import { Link } from '../lib/router';
import { useSession } from '../state/session';
import { useResources } from '../state/useResources';
import { useModal } from '../lib/modal';
import { useTransient } from '../lib/transient';
import ManifestTabs from './ManifestTabs';
import ChangeTable from './ChangeTable';
import SyncDialog from './SyncDialog';
import TaskLog from './TaskLog';
import { ActionBadge, HealthBadge, ProgressBar, StatusBadge } from './Status';
import Snapshots from './Snapshots';
import Adopt from './Adopt';
import { ErrorAlert, Notice } from './RoleSelect';

const EVENT_ICON: Record<string, string> = {
  created: '+',
  drifted: '≠',
  synced: '✓',
  applied: '→',
  failed: '✕',
  deleted: '−',
  rolledBack: '↶',
  adopted: '⚑',
  moved: '⇄',
  health: '♥',
};

function Timeline({ history }: { history: HistoryEntry[] }) {
  if (history.length === 0) return <p className="muted">No history yet.</p>;
  const sorted = [...history].sort((a, b) => Date.parse(b.time) - Date.parse(a.time) || b.id - a.id);
  return (
    <ol className="timeline">
      {sorted.map((h) => (
        <li key={h.id} className={`tl-${h.event}`}>
          <span className="tl-icon" aria-hidden="true">
            {EVENT_ICON[h.event] ?? '•'}
          </span>
          <div>
            <div>
              <strong>{h.event}</strong> <span className="muted" title={formatTime(h.time)}>{timeAgo(h.time)}</span>
              {h.commit && (
                <>
                  {' '}
                  at{' '}
                  <Link className="mono" href={revisionHref(h.commit)} title={h.commit} aria-label={`commit ${shortRev(h.commit)}`}>
                    {shortRev(h.commit)}
                  </Link>
                </>
              )}
              {h.actor && (
                <span className={`tl-user tl-by-${h.actor.kind}`} data-actor={h.actor.kind}>
                  {' '}
                  by {actorText(h.actor)}
                </span>
              )}
            </div>
            {h.message && <div className="tl-msg">{h.message}</div>}
          </div>
        </li>
      ))}
    </ol>
  );
}

function DeleteConfirm({ name, onCancel, onConfirm, busy }: { name: string; onCancel: () => void; onConfirm: () => void; busy: boolean }) {
  const [typed, setTyped] = useState('');
  const input = useRef<HTMLInputElement>(null);
  useEffect(() => input.current?.focus(), []);
  return (
    <form
      className="confirm"
      onSubmit={(e) => {
        e.preventDefault();
        if (typed === name) onConfirm();
      }}
    >
      <p>
        This deletes <strong>{name}</strong> from the cluster. It cannot be undone. If its manifest is still in Git, the
        next pass creates it again. Type the resource's name to confirm.
      </p>
      <label>
        <span className="sr-only">Name of the resource</span>
        <input ref={input} value={typed} onChange={(e) => setTyped(e.target.value)} placeholder={name} autoComplete="off" aria-label="Type the resource's name to confirm" />
      </label>
      <div className="row">
        <button type="submit" className="btn danger" disabled={typed !== name || busy}>
          {busy ? 'Deleting…' : 'Delete'}
        </button>
        <button type="button" className="btn" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </form>
  );
}

export default function Drawer({ resourceKey, onClose }: { resourceKey: string; onClose: () => void }) {
  const { isAdmin } = useSession();
  const { onEvent } = useResources();
  const { cluster, kind, name } = parseResourceKey(resourceKey);
  // A new resource starts empty; a reload keeps the detail shown until the answer.
  const { data: detail, error: readError, status, reload } = useApiGet<ResourceDetail>(resourcePath(kind, name, '', cluster), { fresh: true });
  // The stream said it was deleted: gone until an answer says otherwise.
  const [deletedAt, setDeletedAt] = useState<{ shown: ResourceDetail | null } | null>(null);
  const shown = useRef(detail);
  shown.current = detail;
  const gone = status === 404 || deletedAt?.shown === detail;
  const error = status === 404 ? '' : readError;
  const [confirming, setConfirming] = useState(false);
  const { busy, error: actionError, setError: setActionError, run } = useAction<'sync' | 'delete'>();
  // A success notice goes by itself; a refused action's error stays until dismissed or replaced.
  const [notice, setNotice] = useTransient();
  const [dialog, setDialog] = useState(false);
  const panel = useRef<HTMLDivElement>(null);

  useEffect(() => {
    setDeletedAt(null);
    setConfirming(false);
    setNotice('');
    setActionError('');
  }, [resourceKey]);

  // Read again when the stream says this resource changed, at most every 400 ms.
  useEffect(
    () =>
      onEvent((ev) => {
        if (ev.type === 'deleted' && keyOf(ev) === resourceKey) {
          // Asking for it again would only get a 404.
          setDeletedAt({ shown: shown.current });
          return;
        }
        if ((ev.type === 'resource' && keyOf(ev.resource) === resourceKey) || ev.type === 'snapshot') reload(400);
      }),
    [onEvent, resourceKey, reload],
  );

  useModal(panel, onClose);

  const syncNow = () => {
    setNotice('');
    return run('sync', async () => {
      const r = await api.post<Accepted | undefined>(resourcePath(kind, name, '/sync', cluster));
      setNotice(r?.status || 'Sync requested.');
      reload();
    });
  };
  const doDelete = () => {
    setNotice('');
    return run('delete', async () => {
      const r = await api.del<Accepted | undefined>(resourcePath(kind, name, '', cluster));
      setConfirming(false);
      setNotice(r?.status || 'Deletion requested.');
    });
  };

  const d = detail;
  // An action of this resource runs: no second sync on top of it.
  const running = Boolean(d && (d.progress || d.status === 'Progressing'));
  return (
    <>
      <div className="scrim" onClick={onClose} aria-hidden="true" />
      <aside className="drawer" role="dialog" aria-modal="true" aria-label={`${kind} ${name}${cluster ? ` in cluster ${cluster}` : ''}`} ref={panel} tabIndex={-1}>
        <header className="drawer-head">
          <div>
            <div className="muted small">
              {kind}
              {cluster && <span className="drawer-cluster"> · cluster {cluster}</span>}
            </div>
            <h2>{name}</h2>
          </div>
          <button type="button" className="btn icon" onClick={onClose} aria-label="Close (Esc)" title="Close (Esc)">
            ✕
          </button>
        </header>
        <div className="drawer-body">
          {error && <div className="alert error">{error}</div>}
          {gone && <div className="alert">This resource is no longer known to proxmops (deleted, or its manifest was removed).</div>}
          {!d && !error && !gone && <p className="muted">Loading…</p>}
          {d && (
            <>
              <div className="facts">
                <StatusBadge status={d.status} />
                <HealthBadge health={d.health} />
                {d.node && <span className="pill">node {d.node}</span>}
                {d.node && d.manifestNode && (
                  <span className="pill" title="Moved by HA or a migration: proxmops leaves it where it is and acts on it there">
                    the manifest says {d.manifestNode}
                  </span>
                )}
                {d.vmid !== undefined && d.vmid !== null && <span className="pill">VMID {d.vmid}</span>}
                {d.observed === null && d.status !== 'Conflict' ? (
                  <span className="pill">not on the cluster</span>
                ) : (
                  <span className={`pill ${d.owned === false ? 'warn' : ''}`}>{d.owned === false ? 'not owned by proxmops' : 'owned by proxmops'}</span>
                )}
                {d.syncPolicy && <span className="pill">sync {d.syncPolicy}</span>}
                {d.file && <span className="pill mono" title="Manifest file">{d.file}</span>}
              </div>
              {d.progress && <ProgressBar progress={d.progress} />}
              <TaskLog kind={kind} name={name} cluster={cluster} running={running} version={d.updatedAt} />

              <section className="plan-box" aria-label="Planned action">
                <h4>Planned action</h4>
                <div className="row">
                  <ActionBadge action={d.action} />
                  {d.needsReboot && <span className="pill warn">needs a reboot</span>}
                  {d.waiting && <span className="pill" title={waitText(d.waiting)}>waits for {d.waiting.resource}</span>}
                  <span>{d.reason || (d.action === 'none' || !d.action ? 'Nothing to do: the cluster matches the manifest.' : '')}</span>
                </div>
                {d.status === 'Unknown' && d.reason?.startsWith('cluster unreachable') && (
                  <p className="muted small" data-testid="last-observed">
                    {d.lastObserved
                      ? `What is shown was observed ${timeAgo(d.lastObserved)} (${formatTime(d.lastObserved)}).`
                      : 'Never observed: the cluster has not answered since this resource was declared.'}
                  </p>
                )}
                {d.changes && d.changes.length > 0 && <ChangeTable changes={d.changes} />}
              </section>

              {isAdmin && (
                <section className="actions" aria-label="Actions">
                  <button
                    type="button"
                    className="btn primary"
                    onClick={syncNow}
                    disabled={busy !== '' || d.desired === null || running}
                    title={running ? 'An action on this resource is running' : undefined}
                  >
                    {busy === 'sync' ? 'Syncing…' : running ? 'Syncing…' : 'Sync now'}
                  </button>
                  <button type="button" className="btn" onClick={() => setDialog(true)} disabled={busy !== '' || running}>
                    Sync…
                  </button>
                  {d.owned === false && (d.observed !== null || d.status === 'Conflict') ? (
                    <span className="muted small">proxmops does not own this resource, so it cannot delete it.</span>
                  ) : d.observed !== null && d.owned !== false ? (
                    <button type="button" className="btn danger" onClick={() => setConfirming(true)} disabled={busy !== ''}>
                      Delete…
                    </button>
                  ) : null}
                  <Notice text={notice} />
                </section>
              )}
              <ErrorAlert error={actionError} onDismiss={() => setActionError('')} />
              {isAdmin && d.status === 'Conflict' && d.owned === false && (
                <Adopt
                  kind={kind}
                  name={name}
                  cluster={cluster}
                  onDone={(msg) => {
                    setNotice(msg);
                    reload();
                  }}
                />
              )}
              {isAdmin && dialog && (
                <SyncDialog
                  target={{ kind, name, cluster }}
                  onClose={() => setDialog(false)}
                  onDone={(msg) => {
                    setNotice(msg);
                    reload();
                  }}
                />
              )}
              {isAdmin && confirming && (
                <DeleteConfirm name={d.name} busy={busy === 'delete'} onCancel={() => setConfirming(false)} onConfirm={doDelete} />
              )}

              {d.observed !== null && d.owned !== false && <Snapshots kind={kind} name={name} cluster={cluster} isAdmin={isAdmin} onChanged={() => reload()} />}
              {/* With one side missing (a create, a guest only on the cluster) every field differs: no marks. */}
              <ManifestTabs kind={kind} name={name} cluster={cluster} desired={d.desired} observed={d.observed} changes={d.desired && d.observed ? d.changes : null} fieldPaths={d.fieldPaths} version={d.updatedAt} />

              <section aria-label="History">
                <h4>History</h4>
                <Timeline history={d.history ?? []} />
              </section>
              <p className="muted small">Updated {formatTime(d.updatedAt)}</p>
              {d.configReadAt && (
                <p className="muted small" title="The daemon reads each guest's full configuration when its summary changes, after it acts on it, when you look at it, and otherwise in turn: once per reconcile.driftCheckInterval, stretched when guests' firewalls are read with their configurations (the proxmops_drift_check_period_seconds metric).">
                  Configuration read from Proxmox {formatTime(d.configReadAt)} ({timeAgo(d.configReadAt)})
                </p>
              )}
            </>
          )}
        </div>
      </aside>
    </>
  );
}
