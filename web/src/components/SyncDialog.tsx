// The sync dialog, as Argo CD's: for one resource or all, with this sync's options
// (prune, dry run, reboot to apply). It shows the plan of the sync before anything is
// changed (a dry run of the same options), so "Sync all" is confirmed knowing the counts.

import { useEffect, useRef, useState } from 'react';
import { createPortal } from 'react-dom';
import { api, errorMessage, resourcePath } from '../api/client';
import type { ActionAccepted, PlanDocument, PlanSummary } from '../api/types';
import { ErrorLines } from './LoadError';
import { ActionBadge, StatusBadge, unplannable } from './Status';

export interface SyncTarget {
  kind: string;
  name: string;
  // Its cluster of a clusters list ("" for the single cluster).
  cluster?: string;
}

interface Options {
  prune: boolean;
  dryRun: boolean;
  reboot: boolean;
}

const ORDER = ['create', 'update', 'reboot', 'delete', 'conflict', 'failed', 'unknown'] as const;
const WORDS: Record<(typeof ORDER)[number], string> = {
  create: 'to create',
  update: 'to update',
  reboot: 'to reboot',
  delete: 'to delete',
  conflict: 'in conflict',
  failed: 'failed',
  unknown: 'unknown',
};

// planCounts says what a sync would do in words: "1 to create, 2 to update, 9 in sync".
// Out-of-sync resources the sync leaves as they are (a change pending a reboot, an
// orphan with prune off, one blocked by another) are counted too: never hidden.
export function planCounts(summary: PlanSummary): string {
  const parts = ORDER.filter((k) => (summary[k] ?? 0) > 0).map((k) => `${summary[k]} ${WORDS[k]}`);
  const acting = (['create', 'update', 'reboot', 'delete'] as const).reduce((n, k) => n + (summary[k] ?? 0), 0);
  const idle = (summary.statuses?.OutOfSync ?? 0) - acting;
  if (idle > 0) {
    const pending = summary.needsReboot ?? 0;
    parts.push(`${idle} out of sync without action${pending > 0 ? ` (${pending} pending a reboot)` : ''}`);
  }
  const progressing = summary.statuses?.Progressing ?? 0;
  if (progressing > 0) parts.push(`${progressing} in progress`);
  const synced = summary.statuses?.Synced ?? 0;
  if (synced > 0) parts.push(`${synced} in sync`);
  return parts.length ? parts.join(', ') : 'nothing';
}

export default function SyncDialog({ target, onClose, onDone }: { target: SyncTarget | null; onClose: () => void; onDone: (msg: string) => void }) {
  const [opts, setOpts] = useState<Options>({ prune: false, dryRun: false, reboot: false });
  const [plan, setPlan] = useState<PlanDocument | null>(null);
  const [planError, setPlanError] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const dialog = useRef<HTMLDivElement>(null);
  const path = target ? resourcePath(target.kind, target.name, '/sync', target.cluster) : '/api/v1/sync';
  const what = target ? `${target.kind} ${target.name}` : 'all resources';

  // The plan of this sync, read again when an option that changes it does.
  useEffect(() => {
    let stale = false;
    setPlan(null);
    setPlanError('');
    api
      .post<{ plan: PlanDocument }>(path, { prune: opts.prune, reboot: opts.reboot, dryRun: true })
      .then((r) => !stale && setPlan(r.plan))
      .catch((err) => !stale && setPlanError(errorMessage(err)));
    return () => {
      stale = true;
    };
  }, [path, opts.prune, opts.reboot]);

  useEffect(() => {
    const prev = document.activeElement as HTMLElement | null;
    dialog.current?.querySelector<HTMLElement>('input')?.focus();
    const onKey = (e: KeyboardEvent) => {
      if (e.key === 'Escape') {
        e.preventDefault();
        e.stopPropagation();
        onClose();
      }
      if (e.key === 'Tab' && dialog.current) {
        e.stopPropagation();
        const f = [...dialog.current.querySelectorAll<HTMLElement>('button:not([disabled]), input:not([disabled])')];
        if (f.length === 0) return;
        if (e.shiftKey && document.activeElement === f[0]) {
          e.preventDefault();
          f[f.length - 1].focus();
        } else if (!e.shiftKey && document.activeElement === f[f.length - 1]) {
          e.preventDefault();
          f[0].focus();
        }
      }
    };
    // Capture: the drawer beneath listens for Escape too, and must stay open.
    window.addEventListener('keydown', onKey, true);
    return () => {
      window.removeEventListener('keydown', onKey, true);
      prev?.focus?.();
    };
  }, [onClose]);

  const submit = async () => {
    if (opts.dryRun) {
      onDone(plan ? `Dry run of ${what}: ${planCounts(plan.summary)}. Nothing was changed.` : 'Dry run: nothing was changed.');
      onClose();
      return;
    }
    setBusy(true);
    setError('');
    try {
      const r = await api.post<ActionAccepted | undefined>(path, { prune: opts.prune, reboot: opts.reboot, dryRun: false });
      onDone(r?.status || 'Sync requested.');
      onClose();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const changing = (plan?.actions ?? []).filter((a) => a.action !== 'none' || a.conflict);
  const check = (k: keyof Options, label: string, hint: string) => (
    <label className="check sync-opt">
      <input type="checkbox" checked={opts[k]} onChange={(e) => setOpts({ ...opts, [k]: e.target.checked })} />
      <span>
        {label}
        <span className="field-hint"> {hint}</span>
      </span>
    </label>
  );
  // On <body>: the drawer beneath is transformed, which would hold a fixed box inside it.
  return createPortal(
    <>
      <div className="scrim modal-scrim" onClick={onClose} aria-hidden="true" />
      <div className="modal" role="dialog" aria-modal="true" aria-labelledby="sync-title" ref={dialog}>
        <h2 id="sync-title">Sync {what}</h2>
        <fieldset className="sync-opts">
          <legend>Options for this sync</legend>
          {check('prune', 'Prune', 'delete owned resources no longer in Git')}
          {check('reboot', 'Reboot to apply', 'changes that need a reboot get one (applyMode: reboot)')}
          {check('dryRun', 'Dry run', 'only show the plan; change nothing')}
        </fieldset>
        <section className="sync-plan" aria-label="Plan of this sync" aria-busy={!plan && !planError}>
          {planError ? (
            <div className="alert error">
              <ErrorLines text={planError} />
            </div>
          ) : !plan ? (
            <p className="muted">Planning…</p>
          ) : (
            <>
              <p>
                <strong>This sync would: </strong>
                <span data-testid="sync-counts">{planCounts(plan.summary)}</span>.
              </p>
              {changing.length > 0 && (
                <ul className="sync-actions" tabIndex={0} aria-label="What this sync changes">
                  {changing.slice(0, 50).map((a) => (
                    <li key={`${a.kind}/${a.name}`}>
                      <ActionBadge action={a.action} conflict={a.conflict} />
                      {unplannable(a) && (
                        <>
                          {' '}
                          <StatusBadge status={a.status!} />
                        </>
                      )}{' '}
                      <span className="mono">
                        {a.kind}/{a.name}
                      </span>
                      {a.reason && <span className="muted small"> — {a.reason}</span>}
                    </li>
                  ))}
                  {changing.length > 50 && <li className="muted">and {changing.length - 50} more</li>}
                </ul>
              )}
            </>
          )}
        </section>
        {error && (
          <div className="alert error" role="alert">
            {error}
          </div>
        )}
        <div className="row modal-actions">
          <button type="button" className="btn primary" onClick={submit} disabled={busy || (!target && !plan && !opts.dryRun)}>
            {opts.dryRun ? 'Done' : busy ? 'Syncing…' : target ? 'Sync' : 'Sync all'}
          </button>
          <button type="button" className="btn" onClick={onClose}>
            Cancel
          </button>
        </div>
      </div>
    </>,
    document.body,
  );
}
