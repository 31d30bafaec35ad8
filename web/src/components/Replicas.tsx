import type { ReplicaStatus } from '../api/types';
import { useApiGet } from '../api/useApi';
import { formatTime, timeAgo } from '../lib/format';

// How often the badge asks again: a failover is over within the failover timeout.
export const POLL_MS = 10_000;

// replicaText says which replica leads, in words, or '' for a single daemon.
export function replicaText(st: ReplicaStatus): { text: string; title: string } {
  if (st.role === 'single') return { text: '', title: '' };
  const l = st.leader;
  if (!l) {
    return { text: `Replica ${st.replica} · no leader (failover under way)`, title: 'No replica leads right now: actions wait until one does.' };
  }
  const detail = `Leader ${l.replica} on ${l.host} (pid ${l.pid}), term ${l.term}, leading since ${formatTime(l.since)}`;
  if (st.role === 'leader') return { text: `Leader: this replica (${st.replica})`, title: detail };
  return { text: `Replica ${st.replica} · leader ${l.replica}, took over ${timeAgo(l.since)}`, title: `${detail}. This replica serves the UI and forwards actions to the leader.` };
}

// ReplicaBadge shows the leader among several replicas; nothing for one daemon
// on SQLite or when the daemon does not answer the question (asked again
// all the same: it may be restarting).
export function ReplicaBadge() {
  const { data: st } = useApiGet<ReplicaStatus>('/api/v1/replicas', { every: POLL_MS, pollFailures: true, dropOnError: true });
  if (!st) return null;
  const { text, title } = replicaText(st);
  if (!text) return null;
  return (
    <span className={`replica-badge${st.leader ? '' : ' warn'}`} role="status" title={title}>
      {text}
    </span>
  );
}
