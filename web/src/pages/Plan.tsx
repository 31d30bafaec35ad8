import { useEffect, useMemo, useState } from 'react';
import { useApiGet } from '../api/useApi';
import { resourceKey, STATUSES, type Action, type PlanAction, type PlanDocument } from '../api/types';
import { ErrorLines, LoadErrorAlert } from '../components/LoadError';
import { ActionBadge, STATUS_LABEL, StatusBadge, statusClass, unplannable } from '../components/Status';
import { PLAN_REVISION_WORDS } from '../lib/revstate';
import { changeLabel, shortRev, waitText } from '../lib/format';
import MultiSelect from '../components/MultiSelect';
import { setQuery, useLocation } from '../lib/router';
import { submitted } from '../lib/forms';
import { clusterChoices, defaultFilters, effectiveFilters, parseFilters, resourceCluster, writeFilters } from '../state/filters';
import { TableHead } from '../components/TableHead';

const ORDER: (Action | 'conflict')[] = ['create', 'update', 'reboot', 'delete', 'conflict', 'none'];
// The summary's action counts (what a sync would carry out); the statuses follow.
const SUMMARY_ACTIONS = ['create', 'update', 'reboot', 'delete'] as const;

export function planCategory(a: PlanAction): Action | 'conflict' {
  return a.status === 'Conflict' ? 'conflict' : a.action;
}

// sortPlan puts what changes the cluster first (creates, updates, reboots, deletes),
// then conflicts, then the resources left alone.
export function sortPlan(actions: PlanAction[]): PlanAction[] {
  return [...actions].sort(
    (a, b) =>
      ORDER.indexOf(planCategory(a)) - ORDER.indexOf(planCategory(b)) || a.kind.localeCompare(b.kind) || a.name.localeCompare(b.name),
  );
}

const actionKey = (a: PlanAction) => resourceKey(a);
const actionSig = (a: PlanAction) => JSON.stringify([planCategory(a), a.reason ?? '', a.changes ?? [], Boolean(a.needsReboot)]);

// planDelta lists the resources whose planned action in `other` differs from the
// plan of the current revision: what merging `other` would change, beyond what the
// daemon is about to do anyway.
export function planDelta(current: PlanAction[], other: PlanAction[]): Set<string> {
  const cur = new Map(current.map((a) => [actionKey(a), actionSig(a)]));
  const out = new Set<string>();
  for (const a of other) if (cur.get(actionKey(a)) !== actionSig(a)) out.add(actionKey(a));
  return out;
}

export interface PlanGroup {
  cluster: string; // "" when not grouped
  actions: PlanAction[];
}

// groupPlan splits sorted actions by cluster (in the order the plan names them,
// the configuration's) when byCluster; otherwise one group of all.
export function groupPlan(actions: PlanAction[], byCluster: boolean): PlanGroup[] {
  if (!byCluster) return [{ cluster: '', actions }];
  const m = new Map<string, PlanAction[]>();
  for (const a of actions) {
    const c = resourceCluster(a);
    let l = m.get(c);
    if (!l) m.set(c, (l = []));
    l.push(a);
  }
  return [...m.entries()].map(([cluster, list]) => ({ cluster, actions: list }));
}

export default function Plan() {
  const loc = useLocation();
  const revision = new URLSearchParams(loc.search).get('revision') ?? '';
  // The cluster filter and grouping, with the Overview's URL keys (cluster=, group=cluster).
  const [clusterOrder, setClusterOrder] = useState<string[]>([]);
  const view = useMemo(() => effectiveFilters(parseFilters(loc.search), clusterOrder), [loc.search, clusterOrder]);
  const setView = (patch: { cluster?: string[]; group?: 'kind' | 'cluster' }) =>
    setQuery(writeFilters({ ...defaultFilters, cluster: view.cluster, group: view.group === 'cluster' ? 'cluster' : 'kind', ...patch }, window.location.search), { replace: true });
  const [typed, setTyped] = useState(revision);
  const [showNone, setShowNone] = useState(false);
  const [onlyDelta, setOnlyDelta] = useState(true);

  useEffect(() => setTyped(revision), [revision]);
  // With a revision typed in, the current plan is the baseline it is compared to.
  const current = useApiGet<PlanDocument>(revision ? '/api/v1/plan' : null, { deps: [revision], fresh: true }).data;
  // A failed plan shows no plan, and its error goes when the next one is asked for.
  const planned = useApiGet<PlanDocument>(`/api/v1/plan${revision ? `?revision=${encodeURIComponent(revision)}` : ''}`, { dropOnError: true });
  const { data: plan, loading } = planned;
  const error = loading ? '' : planned.error;

  const actions = useMemo(() => sortPlan(plan?.actions ?? []), [plan]);
  useEffect(() => {
    const order = clusterChoices([], plan?.actions ?? []);
    setClusterOrder((o) => (o.join() === order.join() ? o : order));
  }, [plan]);
  const multi = clusterOrder.length > 1;
  const delta = useMemo(() => (current && plan ? planDelta(current.actions ?? [], plan.actions ?? []) : null), [current, plan]);
  const comparing = delta !== null && Boolean(revision);
  const inClusters = view.cluster.length ? actions.filter((a) => view.cluster.includes(resourceCluster(a))) : actions;
  const visible = inClusters.filter(
    (a) => (showNone || planCategory(a) !== 'none') && (!comparing || !onlyDelta || delta.has(actionKey(a))),
  );
  const groups = groupPlan(visible, multi && view.group === 'cluster');
  const noneCount = inClusters.length - inClusters.filter((a) => planCategory(a) !== 'none').length;

  return (
    <div className="page plan-page">
      <header className="page-head">
        <h1>Plan preview</h1>
        <p className="muted">
          What merging a revision would do to the cluster. Type a branch (a pull request's), a tag or a commit; leave it empty for
          the revision being reconciled.
        </p>
      </header>
      <form
        className="row plan-form"
        onSubmit={submitted(() => {
          const p = new URLSearchParams(window.location.search);
          p.delete('revision');
          if (typed.trim()) p.set('revision', typed.trim());
          setQuery(p);
        })}
      >
        <input
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
          placeholder="branch, tag or commit (empty: current)"
          aria-label="Revision"
          className="grow mono"
        />
        <button type="submit" className="btn primary" disabled={loading}>
          {loading ? 'Planning…' : 'Preview'}
        </button>
      </form>
      {error && (
        <div className="alert error" role="alert">
          <ErrorLines text={error} />
        </div>
      )}
      {plan?.loadError && <LoadErrorAlert loadError={plan.loadError} shown={plan.revision} />}
      {plan && (
        <>
          <div className="plan-summary" aria-label="Summary">
            <span>
              {PLAN_REVISION_WORDS[plan.loadError ? 'lastGood' : 'head']} <code title={plan.revision}>{shortRev(plan.revision)}</code>
            </span>
            {SUMMARY_ACTIONS.map((k) => (
              <span key={k} className={`plan-count act-${k}`}>
                <strong>{plan.summary?.[k] ?? 0}</strong> {k}
              </span>
            ))}
            {STATUSES.map((s) => (
              <span key={s} className={`plan-count ${statusClass(s)}`}>
                <strong>{plan.summary?.statuses?.[s] ?? 0}</strong> {STATUS_LABEL[s]}
              </span>
            ))}
          </div>
          {multi && (
            <div className="row plan-clusters" role="group" aria-label="Clusters">
              <MultiSelect label="Cluster" options={clusterOrder} selected={view.cluster} onChange={(cluster) => setView({ cluster })} />
              <label className="toggle">
                <input type="checkbox" checked={view.group === 'cluster'} onChange={(e) => setView({ group: e.target.checked ? 'cluster' : 'kind' })} />{' '}
                Group by cluster
              </label>
            </div>
          )}
          {comparing && (
            <label className="toggle compare">
              <input type="checkbox" checked={onlyDelta} onChange={(e) => setOnlyDelta(e.target.checked)} /> Only what differs from the
              current revision ({delta.size})
            </label>
          )}
          {visible.length === 0 ? (
            <div className="empty">
              <h3>No changes</h3>
              <p className="muted">
                {comparing && onlyDelta
                  ? 'Merging this revision would do nothing beyond what the current revision does.'
                  : 'Merging this revision would leave the cluster as it is.'}
              </p>
            </div>
          ) : (
            <table className="plan-table">
              <TableHead columns={['action', 'resource', 'node', 'why', 'changes']} />
              {groups.map((g) => (
              <tbody key={g.cluster || 'all'}>
                {g.cluster && (
                  <tr className="plan-group">
                    <th scope="rowgroup" colSpan={5}>
                      cluster {g.cluster} <span className="muted">· {g.actions.length}</span>
                    </th>
                  </tr>
                )}
                {g.actions.map((a) => (
                  <tr key={actionKey(a)} className={`plan-${planCategory(a)}`}>
                    <td data-label="action">
                      <ActionBadge action={a.action} conflict={a.status === 'Conflict'} />
                      {unplannable(a) && <StatusBadge status={a.status!} />}
                      {a.needsReboot && <span className="pill warn">reboot</span>}
                      {comparing && !onlyDelta && delta.has(actionKey(a)) && <span className="pill ok">this revision</span>}
                    </td>
                    <td data-label="resource">
                      <div className="muted small">
                        {a.kind}
                        {multi && <span className="plan-cluster"> · {resourceCluster(a)}</span>}
                      </div>
                      <strong>{a.name}</strong>
                      {a.vmid !== undefined && a.vmid !== null && <span className="muted"> #{a.vmid}</span>}
                    </td>
                    <td data-label="node">
                      {a.node || '—'}
                      {a.node && a.manifestNode && <div className="muted small">the manifest says {a.manifestNode}</div>}
                    </td>
                    <td data-label="why">
                      {a.reason}
                      {a.blockedBy && <div className="muted small">waits for {a.blockedBy}</div>}
                      {a.waiting && (
                        <div className="muted small" data-testid="waiting">
                          {waitText(a.waiting)}
                        </div>
                      )}
                    </td>
                    <td data-label="changes">
                      {(a.changes ?? []).map((c) => (
                        <div key={changeLabel(c)} className="mono small">
                          {changeLabel(c)}: <span className="del">{c.from || '—'}</span> → <span className="add">{c.to || '—'}</span>
                        </div>
                      ))}
                    </td>
                  </tr>
                ))}
              </tbody>
              ))}
            </table>
          )}
          {noneCount > 0 && (
            <label className="toggle">
              <input type="checkbox" checked={showNone} onChange={(e) => setShowNone(e.target.checked)} /> Show the {noneCount}{' '}
              unchanged resources
            </label>
          )}
        </>
      )}
    </div>
  );
}
