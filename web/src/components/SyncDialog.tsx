// The sync dialog, as Argo CD's: for one resource or all, with this sync's options
// (prune, dry run, reboot to apply). It shows the plan of the sync before anything is
// changed (a dry run of the same options), so "Sync all" is confirmed knowing the counts.

import { useEffect, useRef, useState } from 'react';
import { createPortal } from 'react-dom';
import { api, errorMessage, resourcePath } from '../api/client';
import { resourceKey, type Accepted, type DryRun, type PlanDocument, type PlanSummary, type Status } from '../api/types';
import { useModal } from '../lib/modal';
import { ErrorLines } from './LoadError';
import { ActionBadge, StatusBadge, unplannable } from './Status';
import { ErrorAlert } from './RoleSelect';

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

// SyncScope is what "Sync all" covers with a clusters list: the clusters the
// overview shows (its Cluster filter), and whether that is every cluster (then one
// full sync is asked for, as without clusters).
export interface SyncScope {
  clusters: string[];
  every: boolean;
}

// clusterWords names clusters in a sentence: "cluster lab-2", "clusters lab-1 and lab-2".
export function clusterWords(names: string[]): string {
  if (names.length === 1) return `cluster ${names[0]}`;
  return `clusters ${names.slice(0, -1).join(', ')} and ${names[names.length - 1]}`;
}

// mergePlans adds up the plans of several clusters as the daemon's plan of every
// cluster does: counts summed, actions side by side (each names its cluster).
export function mergePlans(plans: PlanDocument[]): PlanDocument {
  if (plans.length === 1) return plans[0];
  // Only the counts some plan has are set, as in a plan of one cluster.
  const summary = { statuses: {} } as PlanSummary;
  const sum = summary as unknown as Record<string, unknown>;
  for (const p of plans) {
    for (const [k, v] of Object.entries(p.summary ?? {})) {
      if (k === 'statuses') {
        for (const [st, n] of Object.entries(v as Record<string, number>)) summary.statuses![st as Status] = (summary.statuses![st as Status] ?? 0) + n;
      } else if (typeof v === 'number') sum[k] = ((sum[k] as number | undefined) ?? 0) + v;
    }
  }
  return { revision: plans[0].revision, summary, actions: plans.flatMap((p) => p.actions ?? []) };
}

const syncPath = (cluster: string) => `/api/v1/sync?cluster=${encodeURIComponent(cluster)}`;

export default function SyncDialog({
  target,
  scope,
  onClose,
  onDone,
}: {
  target: SyncTarget | null;
  // "Sync all" of a clusters list: which clusters (absent: the single cluster).
  scope?: SyncScope;
  onClose: () => void;
  onDone: (msg: string) => void;
}) {
  const [opts, setOpts] = useState<Options>({ prune: false, dryRun: false, reboot: false });
  const [plan, setPlan] = useState<PlanDocument | null>(null);
  const [planError, setPlanError] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const dialog = useRef<HTMLDivElement>(null);
  const [perCluster, setPerCluster] = useState<{ cluster: string; summary: PlanSummary }[]>([]);
  const clusters = !target && scope?.clusters.length ? scope.clusters : [];
  // One path per cluster the plan is read from; a real sync of every cluster is one request.
  const paths = target ? [resourcePath(target.kind, target.name, '/sync', target.cluster)] : clusters.length ? clusters.map(syncPath) : ['/api/v1/sync'];
  const syncPaths = !target && scope?.every ? ['/api/v1/sync'] : paths;
  const what = target ? `${target.kind} ${target.name}` : clusters.length ? `all resources of ${clusterWords(clusters)}` : 'all resources';
  const pathsKey = paths.join('\n');

  // The plan of this sync, read again when an option that changes it does; with
  // clusters, each cluster's plan, so that the counts are told per cluster too.
  useEffect(() => {
    let stale = false;
    setPlan(null);
    setPlanError('');
    setPerCluster([]);
    const body = { prune: opts.prune, reboot: opts.reboot, dryRun: true };
    Promise.all(pathsKey.split('\n').map((p) => api.post<DryRun>(p, body)))
      .then((rs) => {
        if (stale) return;
        const plans = rs.map((r) => r.plan);
        setPlan(mergePlans(plans));
        setPerCluster(clusters.length > 1 ? plans.map((p, i) => ({ cluster: clusters[i], summary: p.summary })) : []);
      })
      .catch((err) => !stale && setPlanError(errorMessage(err)));
    return () => {
      stale = true;
    };
    // clusters is pathsKey's source.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [pathsKey, opts.prune, opts.reboot]);

  // Over the drawer: Escape closes this dialog only.
  useModal(dialog, onClose, (el) => el.querySelector<HTMLElement>('input'));

  const submit = async () => {
    if (opts.dryRun) {
      onDone(plan ? `Dry run of ${what}: ${planCounts(plan.summary)}. Nothing was changed.` : 'Dry run: nothing was changed.');
      onClose();
      return;
    }
    setBusy(true);
    setError('');
    try {
      const body = { prune: opts.prune, reboot: opts.reboot, dryRun: false };
      const rs = await Promise.all(syncPaths.map((p) => api.post<Accepted | undefined>(p, body)));
      const said = rs.map((r) => r?.status || 'Sync requested.');
      onDone(said.length === 1 ? said[0] : said.join('; '));
      onClose();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const changing = (plan?.actions ?? []).filter((a) => a.action !== 'none' || a.status === 'Conflict');
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
              {perCluster.length > 0 && (
                <ul className="sync-clusters" aria-label="By cluster">
                  {perCluster.map((c) => (
                    <li key={c.cluster}>
                      <strong>{c.cluster}</strong>: {planCounts(c.summary)}
                    </li>
                  ))}
                </ul>
              )}
              {changing.length > 0 && (
                <ul className="sync-actions" tabIndex={0} aria-label="What this sync changes">
                  {changing.slice(0, 50).map((a) => (
                    <li key={resourceKey(a)}>
                      <ActionBadge action={a.action} conflict={a.status === 'Conflict'} />
                      {unplannable(a) && (
                        <>
                          {' '}
                          <StatusBadge status={a.status!} />
                        </>
                      )}{' '}
                      <span className="mono">
                        {a.kind}/{a.name}
                      </span>
                      {clusters.length > 1 && a.cluster && <span className="muted small"> in {a.cluster}</span>}
                      {a.reason && <span className="muted small"> — {a.reason}</span>}
                    </li>
                  ))}
                  {changing.length > 50 && <li className="muted">and {changing.length - 50} more</li>}
                </ul>
              )}
            </>
          )}
        </section>
        <ErrorAlert error={error} />
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
