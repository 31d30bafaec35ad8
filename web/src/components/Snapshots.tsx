import { useEffect, useRef, useState } from 'react';
import { api, errorMessage, resourcePath } from '../api/client';
import { useApiGet } from '../api/useApi';
import type { RollbackResult, Snapshot, SnapshotList } from '../api/types';
import { formatTime } from '../lib/format';
import { takesSnapshots } from '../lib/kinds';
import { useModal } from '../lib/modal';
import { useTransient } from '../lib/transient';
import { ErrorAlert, Notice } from './RoleSelect';
import { ConfirmRow } from './ConfirmRow';
import { TableHead } from './TableHead';

// The guest's Proxmox snapshots, and (for admins) a rollback to one of them behind a
// confirmation that says what Proxmox and the next pass will do (docs/api.md,
// "Snapshots and rollback").

function RollbackConfirm({
  name,
  snapshot,
  list,
  busy,
  onCancel,
  onConfirm,
}: {
  name: string;
  snapshot: Snapshot;
  list: SnapshotList;
  busy: boolean;
  onCancel: () => void;
  onConfirm: () => void;
}) {
  const cancel = useRef<HTMLButtonElement>(null);
  const dialog = useRef<HTMLDivElement>(null);
  // Escape cancels, unless the confirmed action already runs.
  useModal(dialog, () => !busy && onCancel(), () => cancel.current);
  return (
    <div className="confirm" role="alertdialog" aria-modal="true" ref={dialog} aria-labelledby="rollback-title" aria-describedby="rollback-desc">
      <h4 id="rollback-title">
        Roll {name} back to {snapshot.name}?
      </h4>
      <div id="rollback-desc">
        <p>
          Everything the guest wrote since {formatTime(new Date(snapshot.time * 1000).toISOString())} is lost.
          {list.running && ' Proxmox stops the running guest for the rollback; proxmops starts it again afterwards.'}
        </p>
        {list.syncPolicy === 'auto' ? (
          <p className="alert">
            This resource syncs automatically: the next pass re-applies the manifest from Git and undoes the rollback's
            configuration. To keep the rollback, set <code>proxmops.dev/sync: manual</code> or revert the commit first.
          </p>
        ) : (
          <p>Its sync policy is {list.syncPolicy}: it stays as rolled back and shows OutOfSync against Git until you sync it or revert the commit.</p>
        )}
      </div>
      <ConfirmRow tone="danger" label="Roll back" busyLabel="Rolling back…" busy={busy} onConfirm={onConfirm} onCancel={onCancel} cancelRef={cancel} />
    </div>
  );
}

export default function Snapshots({ kind, name, cluster = '', isAdmin, onChanged }: { kind: string; name: string; cluster?: string; isAdmin: boolean; onChanged?: () => void }) {
  const [open, setOpen] = useState(false);
  const { data: list, setData: setList, error, reload } = useApiGet<SnapshotList>(open ? resourcePath(kind, name, '/snapshots', cluster) : null);
  const [target, setTarget] = useState<Snapshot | null>(null);
  const [busy, setBusy] = useState(false);
  // The rollback's result goes by itself; a refused rollback's error stays until dismissed or replaced.
  const [notice, setNotice] = useTransient();
  const [failed, setFailed] = useState('');

  useEffect(() => {
    setOpen(false);
    setList(null);
    setTarget(null);
    setNotice('');
    setFailed('');
  }, [kind, name]);

  const rollback = async () => {
    if (!target) return;
    setBusy(true);
    setNotice('');
    setFailed('');
    try {
      const r = await api.post<RollbackResult>(resourcePath(kind, name, '/rollback', cluster), { snapshot: target.name });
      setNotice(`Rolled back to ${r.snapshot}${r.started ? ' and started again' : ''}. ${r.next}`);
      setTarget(null);
      reload();
      onChanged?.();
    } catch (err) {
      setFailed(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  if (!takesSnapshots(kind)) return null;
  return (
    <section aria-label="Snapshots" className="snapshots">
      <h4>Snapshots</h4>
      <button type="button" className="btn" aria-expanded={open} onClick={() => setOpen((o) => !o)}>
        {open ? 'Hide snapshots' : 'Show snapshots'}
      </button>
      {open && error && <div className="alert error">{error}</div>}
      {open && !list && !error && <p className="muted">Loading…</p>}
      {open && list && !list.snapshots?.length && <p className="muted">This guest has no snapshots.</p>}
      {open && list && !!list.snapshots?.length && (
        <table className="changes">
          <TableHead columns={['snapshot', 'taken', 'description', isAdmin && 'action']} />
          <tbody>
            {(list.snapshots ?? []).map((s) => (
              <tr key={s.name}>
                <td className="mono">
                  {s.name}
                  {s.name === list.current && <span className="pill">current state's base</span>}
                  {s.proxmops && <span className="pill">proxmops</span>}
                </td>
                <td>{formatTime(new Date(s.time * 1000).toISOString())}</td>
                <td>{s.description || '—'}</td>
                {isAdmin && (
                  <td>
                    <button
                      type="button"
                      className="btn"
                      onClick={() => setTarget(s)}
                      disabled={busy || !!s.rollbackBlocked}
                      aria-label={`Roll back to ${s.name}…`}
                      aria-describedby={s.rollbackBlocked ? `blocked-${s.name}` : undefined}
                    >
                      Roll back…
                    </button>
                    {s.rollbackBlocked && (
                      <p className="muted" id={`blocked-${s.name}`}>
                        Proxmox cannot roll back to it: {s.rollbackBlocked}
                      </p>
                    )}
                  </td>
                )}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {isAdmin && target && list && (
        <RollbackConfirm name={name} snapshot={target} list={list} busy={busy} onCancel={() => setTarget(null)} onConfirm={rollback} />
      )}
      <Notice text={notice} block />
      <ErrorAlert error={failed} onDismiss={() => setFailed('')} />
    </section>
  );
}
