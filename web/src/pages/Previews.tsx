import { useApiGet } from '../api/useApi';
import type { PlanAction, PullRequest, PullRequestList } from '../api/types';
import { resourceKey } from '../api/types';
import { ErrorLines } from '../components/LoadError';
import { ActionBadge, StatusBadge, unplannable } from '../components/Status';
import { shortRev, timeAgo } from '../lib/format';
import { useLocation } from '../lib/router';
import { planCategory, sortPlan } from './Plan';

// The word and colour of each commit status proxmops set on a request.
const STATE: Record<PullRequest['state'], { label: string; cls: string }> = {
  success: { label: 'plan ok', cls: 'st-synced' },
  failure: { label: 'cannot merge as is', cls: 'st-failed' },
  error: { label: 'no plan', cls: 'st-conflict' },
  pending: { label: 'planning', cls: 'st-progressing' },
};

// requestNoun is what the forge calls a request: GitLab's are merge requests.
export function requestNoun(forge: string): string {
  return forge === 'gitlab' ? 'merge request' : 'pull request';
}

// changedActions are the plan's entries that change or block something: what a
// reviewer reads first, in the plan page's order.
export function changedActions(actions: PlanAction[] | null | undefined): PlanAction[] {
  return sortPlan(actions ?? []).filter((a) => planCategory(a) !== 'none' || unplannable(a));
}

function RequestPlan({ pr }: { pr: PullRequest }) {
  const actions = changedActions(pr.plan?.actions);
  if (pr.errors?.length) {
    return (
      <div className="alert error" role="alert">
        <ErrorLines text={pr.errors.join('\n')} />
      </div>
    );
  }
  if (!pr.plan) return <p className="muted">Not planned yet.</p>;
  if (actions.length === 0) return <p className="muted">Merging it would leave the cluster as it is.</p>;
  return (
    <ul className="pr-actions" aria-label={`Plan of ${requestNoun(pr.forge)} ${pr.number}`}>
      {actions.map((a) => (
        <li key={resourceKey(a)}>
          <ActionBadge action={a.action} conflict={a.status === 'Conflict'} />
          {unplannable(a) && <StatusBadge status={a.status!} />} <strong>{resourceKey(a)}</strong>
          {a.reason && <span className="muted"> — {a.reason}</span>}
          {(a.changes ?? []).map((c) => (
            <div key={c.field} className="mono small">
              {c.field}: <span className="del">{c.from || '—'}</span> → <span className="add">{c.to || '—'}</span>
            </div>
          ))}
        </li>
      ))}
    </ul>
  );
}

export default function Previews() {
  const loc = useLocation();
  const focus = Number(new URLSearchParams(loc.search).get('request') ?? '');
  const { data: list, error } = useApiGet<PullRequestList>('/api/v1/previews');

  return (
    <div className="page previews-page">
      <header className="page-head">
        <h1>Pull-request previews</h1>
        <p className="muted">Each open request's head, planned against the cluster as it is now; the same plan is its comment on the forge.</p>
      </header>
      {error && (
        <div className="alert error" role="alert">
          <ErrorLines text={error} />
        </div>
      )}
      {list && !list.requests?.length && (
        <div className="empty">
          <h3>No open requests</h3>
          <p className="muted">
            {list.enabled
              ? 'A request appears here when the forge sends its webhook: opened, reopened or pushed to.'
              : 'Previews are off: set forge.pullRequestPreviews (docs/operations.md, "Pull-request previews").'}
          </p>
        </div>
      )}
      {list?.requests?.map((pr) => {
        const st = STATE[pr.state] ?? STATE.error;
        return (
          <details key={`${pr.forge}/${pr.number}`} className={`card pr-row ${st.cls}`} open={focus === pr.number || list.requests?.length === 1}>
            <summary>
              <span className={`badge ${st.cls}`}>{st.label}</span>{' '}
              <strong>
                {requestNoun(pr.forge)} {pr.forge === 'gitlab' ? '!' : '#'}
                {pr.number}
              </strong>{' '}
              {pr.title} <span className="muted small">· {pr.description}</span>
            </summary>
            <div className="muted small">
              head <code title={pr.planned || pr.commit}>{shortRev(pr.planned || pr.commit)}</code> · planned {timeAgo(pr.updatedAt)}
              {pr.url && (
                <>
                  {' · '}
                  <a href={pr.url} target="_blank" rel="noreferrer">
                    open on the forge
                  </a>
                </>
              )}
              {pr.commentURL && (
                <>
                  {' · '}
                  <a href={pr.commentURL} target="_blank" rel="noreferrer">
                    its comment
                  </a>
                </>
              )}
            </div>
            <RequestPlan pr={pr} />
          </details>
        );
      })}
    </div>
  );
}
