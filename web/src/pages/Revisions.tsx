import { useEffect, useRef, useState } from 'react';
import { api, errorMessage } from '../api/client';
import { useApiGet } from '../api/useApi';
import { resourceKey, STATUSES, type CommitHistory, type HistoryEvent, type PinAccepted, type Revision, type RevisionList, type RevisionResult } from '../api/types';
import PinBanner from '../components/PinBanner';
import { STATUS_LABEL, statusClass } from '../components/Status';
import { actorText, formatTime, shortRev, timeAgo } from '../lib/format';
import { resourceHref } from '../lib/links';
import { useTransient } from '../lib/transient';
import { Link, useLocation } from '../lib/router';
import { useSession } from '../state/session';
import { ErrorAlert } from '../components/RoleSelect';

const EVENTS: HistoryEvent[] = ['created', 'applied', 'synced', 'drifted', 'failed', 'deleted'];

// resultText sums up what the passes at a commit did, in words.
export function resultText(r: RevisionResult | null): string {
  if (!r) return 'never applied';
  const ev = EVENTS.filter((e) => (r.events?.[e] ?? 0) > 0).map((e) => `${r.events?.[e]} ${e}`);
  return ev.length ? ev.join(', ') : 'no changes recorded';
}

function ResultCounts({ r }: { r: RevisionResult }) {
  const shown = STATUSES.filter((s) => (r.counts?.[s] ?? 0) > 0);
  if (!shown.length) return null;
  return (
    <span className="rev-counts" aria-label="Statuses after the last pass at this commit">
      {shown.map((s) => (
        <span key={s} className={`badge ${statusClass(s)}`}>
          {r.counts?.[s]} {STATUS_LABEL[s]}
        </span>
      ))}
    </span>
  );
}

// matchesCommit: a link's commit (full or abbreviated) names this hash.
export function matchesCommit(hash: string, commit: string): boolean {
  return commit.length >= 7 && hash.toLowerCase().startsWith(commit.toLowerCase());
}

// CommitEvents lists what the history recorded at a commit, each entry
// linking to its resource's drawer.
function CommitEvents({ hash }: { hash: string }) {
  const { data: doc, error } = useApiGet<CommitHistory>(`/api/v1/revisions/${hash}/history`);
  if (error) return <p className="alert error">{error}</p>;
  if (!doc) return <p className="muted small">Loading…</p>;
  if (!doc.entries?.length) return <p className="muted small">Nothing recorded at this commit (or it is past the history kept).</p>;
  return (
    <ul className="rev-events" aria-label={`Events at ${shortRev(hash)}`}>
      {(doc.entries ?? []).map((e) => {
        const kn = { kind: e.kind ?? '', name: e.name ?? '' };
        const key = resourceKey(kn);
        return (
          <li key={e.id}>
            <span className={`rev-ev tl-${e.event}`}>{e.event}</span>{' '}
            <Link href={resourceHref(resourceKey({ cluster: e.cluster, ...kn }))}>{e.cluster ? `${e.cluster}: ${key}` : key}</Link>{' '}
            <time className="muted" dateTime={e.time} title={formatTime(e.time)}>
              {timeAgo(e.time)}
            </time>
            {e.actor && <span className="muted tl-user"> by {actorText(e.actor)}</span>}
            {e.message && <div className="rev-ev-msg small">{e.message}</div>}
          </li>
        );
      })}
    </ul>
  );
}

function RevisionRow({ rev, isAdmin, onPin, linked }: { rev: Revision; isAdmin: boolean; onPin: (hash: string) => Promise<void>; linked: boolean }) {
  const [confirming, setConfirming] = useState(false);
  const [busy, setBusy] = useState(false);
  const row = useRef<HTMLLIElement>(null);
  const short = shortRev(rev.hash);
  const [showEvents, setShowEvents] = useState(linked);
  const recorded = Object.values(rev.result?.events ?? {}).some((n) => (n ?? 0) > 0);
  // A link from a log line or a history entry lands on its commit.
  useEffect(() => {
    if (linked) row.current?.scrollIntoView?.({ block: 'center' });
  }, [linked]);
  return (
    <li ref={row} className={`rev-row${rev.current ? ' current' : ''}${linked ? ' linked' : ''}`} aria-current={linked ? 'true' : undefined}>
      <div className="rev-line">
        <code title={rev.hash}>{short}</code> <span className="rev-msg">{rev.message}</span>
        {rev.current && <span className="pill ok">applied now</span>}
        {rev.pinned && <span className="pill warn">pinned</span>}
      </div>
      <div className="muted small">
        {rev.author} · <time dateTime={rev.time} title={formatTime(rev.time)}>{timeAgo(rev.time)}</time> · {resultText(rev.result)}
        {rev.result && <> · last pass {timeAgo(rev.result.lastPass)}</>}
      </div>
      {rev.result && <ResultCounts r={rev.result} />}
      {rev.loadErrors && rev.loadErrors.length > 0 && (
        <div className="alert error" role="alert" aria-label={`${short} failed to load`}>
          <strong>Its manifests fail to load</strong>: it is neither applied nor can it be synced to; the cluster keeps the last good
          revision until a commit fixes them.
          <ul className="error-list">
            {rev.loadErrors.map((e, i) => (
              <li key={i} className="mono small">
                {e}
              </li>
            ))}
          </ul>
        </div>
      )}
      {recorded && (
        <button type="button" className="btn small rev-toggle" aria-expanded={showEvents} onClick={() => setShowEvents((s) => !s)}>
          {showEvents ? 'Hide' : 'Show'} what happened at {short}
        </button>
      )}
      {recorded && showEvents && <CommitEvents hash={rev.hash} />}
      {isAdmin && !rev.pinned && rev.current && (
        <p className="rev-actions muted small">Applied now: syncing to it would change nothing.</p>
      )}
      {isAdmin && !rev.pinned && !rev.current && !rev.loadErrors?.length && (
        <div className="rev-actions">
          {confirming ? (
            <div role="group" aria-label={`Confirm sync to ${short}`}>
              <span>Sync the cluster to {short} and stay on it until unpinned?</span>{' '}
              <button
                type="button"
                className="btn small primary"
                disabled={busy}
                onClick={async () => {
                  setBusy(true);
                  await onPin(rev.hash);
                  setBusy(false);
                  setConfirming(false);
                }}
              >
                Yes, sync to {short}
              </button>{' '}
              <button type="button" className="btn small" onClick={() => setConfirming(false)}>
                Cancel
              </button>
            </div>
          ) : (
            <button type="button" className="btn small" onClick={() => setConfirming(true)} aria-label={`Sync to this revision ${short}`}>
              Sync to this revision
            </button>
          )}
        </div>
      )}
    </li>
  );
}

export default function Revisions() {
  const { isAdmin } = useSession();
  const linked = new URLSearchParams(useLocation().search).get('commit') ?? '';
  const { data: list, error, setError, reload } = useApiGet<RevisionList>('/api/v1/revisions');
  // "Pinned to …", "Unpinned …": banners that go by themselves; the pin itself stays in the PinBanner.
  const [notice, setNotice] = useTransient();

  const pin = async (hash: string) => {
    setNotice('');
    try {
      const r = await api.post<PinAccepted>('/api/v1/revisions/pin', { revision: hash });
      setNotice(r.status);
      reload();
    } catch (err) {
      setError(errorMessage(err));
    }
  };

  return (
    <div className="page revisions">
      <div className="page-head">
        <h1>Revisions</h1>
        <p className="muted">
          Recent commits of the watched branch{list?.branch ? <> (<code>{list.branch}</code>)</> : null}, with what the passes at each did.
          Syncing to an older one pins it: the controller applies it instead of the branch head until you unpin.
        </p>
      </div>
      <PinBanner
        pinned={list?.pinned ?? null}
        isAdmin={isAdmin}
        onUnpinned={() => {
          setNotice('Unpinned: following the branch head again.');
          reload();
        }}
      />
      <ErrorAlert error={error} />
      {notice && (
        <div className="alert" role="status">
          {notice}
        </div>
      )}
      {list && !list.revisions?.length && <p className="muted">No commits yet: the repository has not been read, or it is not in Git.</p>}
      {list && linked && !(list.revisions ?? []).some((r) => matchesCommit(r.hash, linked)) && (
        <div className="alert" role="status">
          Commit <code title={linked}>{shortRev(linked)}</code> is not among the {list.revisions?.length ?? 0} latest commits of the branch: it is
          older, or was never on it (a force push, a previewed branch).
        </div>
      )}
      {list && !!list.revisions?.length && (
        <ol className="rev-list" aria-label="Commits, newest first">
          {list.revisions.map((r) => (
            <RevisionRow key={r.hash} rev={r} isAdmin={isAdmin} onPin={pin} linked={linked !== '' && matchesCommit(r.hash, linked)} />
          ))}
        </ol>
      )}
    </div>
  );
}
