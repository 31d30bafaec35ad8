import { lazy, Suspense, useCallback, useEffect, useMemo, useState } from 'react';
import { api, errorMessage } from '../api/client';
import { STATUSES, type Accepted, type Status } from '../api/types';
import Cards from '../components/Cards';
import Drawer from '../components/Drawer';
import SyncDialog, { clusterWords } from '../components/SyncDialog';
import { ErrorLines, LoadErrorAlert } from '../components/LoadError';
import { useTransient } from '../lib/transient';
import MultiSelect from '../components/MultiSelect';
import PinBanner from '../components/PinBanner';
import { ErrorAlert } from '../components/RoleSelect';
import { STATUS_LABEL, statusClass } from '../components/Status';
import { formatTime, shortRev, timeAgo } from '../lib/format';
import { REVISION_STATE_CLASS, REVISION_STATE_SHORT, REVISION_STATE_WORDS, revisionState, shownRevisions, type ShownRevision } from '../lib/revstate';
import { setQuery, useLocation } from '../lib/router';
import { applyFilters, clusterChoices, effectiveFilters, facetValues, parseFilters, resourceCluster, writeFilters, type Filters } from '../state/filters';
import { countByStatus } from '../state/resources';
import { useSession } from '../state/session';
import { useResources } from '../state/useResources';

const Graph = lazy(() => import('../components/Graph'));

function useNow(ms: number): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const id = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(id);
  }, [ms]);
  return now;
}

// ClusterDownAlert names why the cluster cannot be observed, apart from the Git
// source: every resource is Unknown and shows what was last observed, and when.
function ClusterDownAlert({ error, lastObserved, now }: { error: string; lastObserved: string; now: number }) {
  return (
    <div className="alert error" role="alert" aria-label="Cluster unreachable">
      Cluster unreachable: <ErrorLines text={error} />
      <div className="small">
        {lastObserved
          ? `Resources are Unknown and show what was observed ${timeAgo(lastObserved, now)} (${formatTime(lastObserved)}); nothing is applied until the cluster answers.`
          : 'Resources are Unknown: the cluster has not been observed since the daemon started; nothing is applied until it answers.'}
      </div>
    </div>
  );
}

export default function Overview({ theme }: { theme: 'light' | 'dark' }) {
  const { state, conn, error } = useResources();
  const { isAdmin } = useSession();
  const loc = useLocation();
  const all = useMemo(() => [...state.byKey.values()], [state.byKey]);
  // The cluster filter and grouping appear only with several clusters.
  const clusters = useMemo(() => clusterChoices(state.clusters, all), [state.clusters, all]);
  const multi = clusters.length > 1;
  const filters = useMemo(() => effectiveFilters(parseFilters(loc.search), clusters), [loc.search, clusters]);
  const openKey = new URLSearchParams(loc.search).get('r');
  const [search, setSearch] = useState(filters.q);
  const [notice, setNotice] = useTransient();
  const [postError, setPostError] = useState('');
  const [syncing, setSyncing] = useState(false);
  const now = useNow(5000);

  // The box follows the URL when it changes from outside (back button, shared link).
  useEffect(() => setSearch(filters.q), [filters.q]);

  const update = useCallback(
    (patch: Partial<Filters>, replace = false) => {
      const cur = parseFilters(window.location.search);
      setQuery(writeFilters({ ...cur, ...patch }, window.location.search), { replace });
    },
    [],
  );
  const open = useCallback((key: string) => {
    const p = new URLSearchParams(window.location.search);
    p.set('r', key);
    setQuery(p);
  }, []);
  const close = useCallback(() => {
    const p = new URLSearchParams(window.location.search);
    p.delete('r');
    setQuery(p);
  }, []);

  const facets = useMemo(() => facetValues(all), [all]);
  // With a Cluster filter the bar counts what it shows, that cluster's resources
  // (and says so); without one, every cluster's, and each cluster's own below.
  const inClusters = useMemo(() => (multi && filters.cluster.length ? clusters.filter((c) => filters.cluster.includes(c)) : []), [multi, clusters, filters.cluster]);
  const scoped = useMemo(() => (inClusters.length ? all.filter((r) => inClusters.includes(resourceCluster(r))) : all), [all, inClusters]);
  const counts = useMemo(() => countByStatus(scoped), [scoped]);
  const perCluster = useMemo(() => {
    if (!multi || inClusters.length) return [];
    return clusters.map((c) => {
      const rs = all.filter((r) => resourceCluster(r) === c);
      return { cluster: c, total: rs.length, synced: rs.filter((r) => r.status === 'Synced').length };
    });
  }, [multi, inClusters, clusters, all]);
  const scopeWords = !multi ? '' : inClusters.length ? `in ${clusterWords(inClusters)}` : `in all ${clusters.length} clusters`;
  // "Sync all" syncs what the overview shows: the filtered clusters, or every one.
  const syncScope = multi ? { clusters: inClusters.length ? inClusters : clusters, every: !inClusters.length || inClusters.length === clusters.length } : undefined;
  const shown = useMemo(() => applyFilters(all, filters), [all, filters]);

  const post = async (path: string, done: string) => {
    setNotice('');
    setPostError('');
    try {
      const r = await api.post<Accepted | undefined>(path);
      setNotice(r?.status || done);
    } catch (err) {
      // An error stays until dismissed or replaced; only the notice goes by itself.
      setPostError(errorMessage(err));
    }
  };

  // What the bar and the Git source node name: with a clusters list the shown
  // clusters' own revision (pins and load errors are per cluster), each one's when they differ.
  const revs = useMemo(() => {
    const top: ShownRevision = {
      revision: state.revision,
      revisionMessage: state.revisionMessage,
      lastPass: state.lastPass,
      passDurationMs: state.passDurationMs,
      pinned: state.pinned,
      loadError: state.loadError,
    };
    const names = inClusters.length ? inClusters : clusters;
    const passes = multi ? names.filter((c) => state.clusterPasses[c]).map((c) => ({ cluster: c, ...state.clusterPasses[c] })) : [];
    return passes.length ? shownRevisions(passes) : [top];
  }, [state.revision, state.revisionMessage, state.lastPass, state.passDurationMs, state.pinned, state.loadError, state.clusterPasses, multi, inClusters, clusters]);
  const rev = revs[0];
  const revState = revisionState(rev.pinned, rev.loadError);
  const pinned = revs.find((r) => r.pinned)?.pinned ?? null;
  const loadError = revs.find((r) => r.loadError)?.loadError ?? null;
  const lastPass = revs.some((r) => !r.lastPass) ? '' : revs.map((r) => r.lastPass).sort()[0];
  const filtered =
    filters.cluster.length + filters.kind.length + filters.status.length + filters.node.length + filters.tag.length > 0 || filters.q !== '' || filters.driftOnly;

  return (
    <div className="overview">
      <h1 className="sr-only">Overview</h1>
      <section className="summary" aria-label="Reconciliation">
        <div className="summary-rev">
          {/* What is reconciled is not always the branch head: a pin or a head that fails to load says so here too. */}
          {revs.length === 1 ? (
            <>
              <div className={REVISION_STATE_CLASS[revState]}>{REVISION_STATE_WORDS[revState]}</div>
              <div>
                <code title={rev.revision}>{shortRev(rev.revision)}</code>{' '}
                <span className="rev-msg" title={rev.revisionMessage}>
                  {rev.revisionMessage}
                </span>
              </div>
            </>
          ) : (
            <>
              <div className="muted small">revisions being reconciled, by cluster</div>
              {revs.map((r) => {
                const st = revisionState(r.pinned, r.loadError);
                return (
                  <div key={r.cluster} className="summary-rev-cluster" title={`${r.cluster}: ${REVISION_STATE_WORDS[st]} ${r.revision} ${r.revisionMessage}`}>
                    {r.cluster} <code>{shortRev(r.revision)}</code> <span className={st === 'head' ? 'muted small' : REVISION_STATE_CLASS[st]}>{REVISION_STATE_SHORT[st]}</span>
                  </div>
                );
              })}
            </>
          )}
        </div>
        <div className="summary-pass">
          <div className="muted small">last pass</div>
          <div title={formatTime(lastPass)}>
            {lastPass ? timeAgo(lastPass, now) : 'not yet'}
            {revs.length === 1 && rev.passDurationMs !== null && <span className="muted"> · {rev.passDurationMs} ms</span>}
          </div>
          {state.clusterError && (
            <div className="small rev-state error" data-testid="summary-cluster-down" title={state.clusterError}>
              cluster unreachable · last observed {state.lastObserved ? timeAgo(state.lastObserved, now) : 'not since the start'}
            </div>
          )}
        </div>
        <div className="summary-counts" role="group" aria-label={scopeWords ? `Counts by status ${scopeWords}` : 'Counts by status'}>
          {scopeWords && (
            <div className="summary-scope small" data-testid="summary-scope">
              {scopeWords}
              {perCluster.length > 0 && (
                <>
                  {': '}
                  {perCluster.map((c, i) => (
                    <span key={c.cluster}>
                      {i > 0 && ' · '}
                      <button type="button" className="linkish" onClick={() => update({ cluster: [c.cluster] })} title={`Show only cluster ${c.cluster}`}>
                        {c.cluster}
                      </button>{' '}
                      {c.synced} of {c.total} in sync
                    </span>
                  ))}
                </>
              )}
            </div>
          )}
          <div className="summary-chips">
            {STATUSES.map((s) => (
              <button
                type="button"
                key={s}
                className={`count-chip ${statusClass(s)}${filters.status.includes(s) ? ' on' : ''}`}
                aria-pressed={filters.status.includes(s)}
                onClick={() => update({ status: filters.status.includes(s) ? filters.status.filter((x) => x !== s) : [...filters.status, s] })}
                title={`Show only ${STATUS_LABEL[s]}`}
              >
                <span className="n">{counts[s]}</span> {STATUS_LABEL[s]}
              </button>
            ))}
          </div>
        </div>
        <div className="summary-side">
          <span className={`conn conn-${conn}`} role="status" title="Live updates from the daemon">
            {conn === 'live' ? 'live' : conn === 'connecting' ? 'connecting…' : 'reconnecting…'}
          </span>
          {isAdmin && (
            <>
              <button type="button" className="btn small" onClick={() => post('/api/v1/refresh', 'Pulling Git now.')}>
                Refresh
              </button>
              <button type="button" className="btn small primary" onClick={() => setSyncing(true)}>
                {syncScope && !syncScope.every ? `Sync all in ${syncScope.clusters.join(', ')}` : 'Sync all'}
              </button>
            </>
          )}
        </div>
      </section>
      <PinBanner pinned={pinned} isAdmin={isAdmin} />
      {loadError && <LoadErrorAlert loadError={loadError} shown={revs.find((r) => r.loadError)?.revision} />}
      {state.clusterError && <ClusterDownAlert error={state.clusterError} lastObserved={state.lastObserved} now={now} />}
      {state.sourceError && (
        <div className="alert error" role="alert">
          Git source: <ErrorLines text={state.sourceError} />
        </div>
      )}
      {error && <div className="alert error" role="alert">{error}</div>}
      {notice && <div className="alert" role="status">{notice}</div>}
      <ErrorAlert error={postError} onDismiss={() => setPostError('')} />
      {syncing && <SyncDialog target={null} scope={syncScope} onClose={() => setSyncing(false)} onDone={setNotice} />}

      <section className="filters" aria-label="Filters">
        <input
          type="search"
          className="search"
          placeholder="Search name, node, tag, VMID…"
          aria-label="Search resources"
          value={search}
          onChange={(e) => {
            setSearch(e.target.value);
            update({ q: e.target.value }, true);
          }}
        />
        {multi && <MultiSelect label="Cluster" options={clusters} selected={filters.cluster} onChange={(cluster) => update({ cluster })} />}
        <MultiSelect label="Kind" options={facets.kind} selected={filters.kind} onChange={(kind) => update({ kind })} />
        <MultiSelect
          label="Status"
          options={STATUSES}
          selected={filters.status}
          onChange={(status) => update({ status: status as Status[] })}
          render={(s) => STATUS_LABEL[s as Status]}
        />
        <MultiSelect label="Node" options={facets.node} selected={filters.node} onChange={(node) => update({ node })} />
        <MultiSelect label="Tag" options={facets.tag} selected={filters.tag} onChange={(tag) => update({ tag })} />
        <label className="toggle">
          <input type="checkbox" checked={filters.driftOnly} onChange={(e) => update({ driftOnly: e.target.checked })} />
          Drift only
        </label>
        {filtered && (
          <button type="button" className="btn small" onClick={() => update({ cluster: [], kind: [], status: [], node: [], tag: [], q: '', driftOnly: false })}>
            Clear filters
          </button>
        )}
        <span className="spacer" />
        <label className="select">
          Group by
          <select value={filters.group} onChange={(e) => update({ group: e.target.value as Filters['group'] })}>
            <option value="kind">kind</option>
            <option value="node">node</option>
            {multi && <option value="cluster">cluster</option>}
            <option value="tag" disabled={filters.view === 'graph'}>
              tag{filters.view === 'graph' ? ' (cards)' : ''}
            </option>
          </select>
        </label>
        {filters.view === 'graph' && (
          <label className="select">
            Highlight
            <select value={filters.highlight} onChange={(e) => update({ highlight: e.target.value as Status | '' })}>
              <option value="">none</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {STATUS_LABEL[s]}
                </option>
              ))}
            </select>
          </label>
        )}
        <div className="seg" role="group" aria-label="View">
          <button type="button" aria-pressed={filters.view === 'graph'} onClick={() => update({ view: 'graph' })}>
            Graph
          </button>
          <button type="button" aria-pressed={filters.view === 'cards'} onClick={() => update({ view: 'cards' })}>
            Cards
          </button>
        </div>
      </section>

      <div className="muted small shown-count" aria-live="polite">
        {state.loaded ? `${shown.length} of ${all.length} resources` : 'Loading resources…'}
      </div>

      <div className="view">
        {state.loaded && all.length === 0 && (
          <div className="empty">
            <h3>No resources yet</h3>
            <p className="muted">
              {loadError
                ? 'The manifests failed to load; see the errors above.'
                : state.sourceError
                ? 'The Git source could not be read; see the message above.'
                : 'Once the daemon has read the Git source and the cluster, every resource shows up here.'}
            </p>
          </div>
        )}
        {state.loaded && all.length > 0 && shown.length === 0 && (
          <div className="empty">
            <h3>Nothing matches these filters</h3>
          </div>
        )}
        {shown.length > 0 &&
          (filters.view === 'graph' ? (
            <Suspense fallback={<div className="muted">Loading graph…</div>}>
              <Graph
                resources={shown}
                groupBy={filters.group === 'node' || filters.group === 'cluster' ? filters.group : 'kind'}
                highlight={filters.highlight}
                revision={rev.revision}
                revisionMessage={rev.revisionMessage}
                lastPass={lastPass}
                pinned={rev.pinned}
                loadError={rev.loadError}
                clusterRevisions={revs.length > 1 ? revs : undefined}
                onOpen={open}
                colorMode={theme}
              />
            </Suspense>
          ) : (
            <Cards resources={shown} groupBy={filters.group} onOpen={open} />
          ))}
      </div>
      {openKey && <Drawer resourceKey={openKey} onClose={close} />}
    </div>
  );
}
