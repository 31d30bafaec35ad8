import type { NotificationList, NotificationStatus } from '../api/types';
import { useApiGet } from '../api/useApi';
import { formatTime, timeAgo } from '../lib/format';
import { TableHead } from './TableHead';

// Deliveries are retried within a minute or so: ask again that often.
export const POLL_MS = 15_000;

export type ReceiverState = 'ok' | 'failing' | 'recovered' | 'idle';

// receiverState says how a receiver is doing: failing while its last error is
// newer than its last delivery, recovered when a delivery came after an error.
export function receiverState(st: NotificationStatus): ReceiverState {
  const delivered = st.lastDelivery ? Date.parse(st.lastDelivery) : NaN;
  const failed = st.lastErrorAt ? Date.parse(st.lastErrorAt) : NaN;
  if (!Number.isNaN(failed) && (Number.isNaN(delivered) || failed > delivered)) return 'failing';
  if (!Number.isNaN(failed)) return 'recovered';
  return Number.isNaN(delivered) ? 'idle' : 'ok';
}

const stateText: Record<ReceiverState, string> = {
  ok: 'delivering',
  failing: 'failing',
  recovered: 'delivering again',
  idle: 'nothing sent yet',
};

function Receiver({ st }: { st: NotificationStatus }) {
  const state = receiverState(st);
  return (
    <tr data-testid={`receiver-${st.name}`}>
      <td data-label="receiver">
        <strong>{st.name}</strong> <span className="muted">{st.service}</span>
        <div className="muted small">{st.url}</div>
      </td>
      <td data-label="events">
        {(st.on ?? []).join(', ')}
        {st.resources && st.resources.length > 0 && <div className="muted small">for {st.resources.join(', ')}</div>}
      </td>
      <td data-label="last delivery" title={st.lastDelivery ? formatTime(st.lastDelivery) : undefined}>
        {timeAgo(st.lastDelivery ?? undefined)}
        <div className="muted small">
          {st.delivered} delivered{st.failed > 0 ? `, ${st.failed} given up` : ''}
          {st.pending > 0 ? `, ${st.pending} pending` : ''}
        </div>
      </td>
      <td data-label="state">
        <span className={`pill${state === 'failing' ? ' warn' : state === 'idle' ? '' : ' ok'}`}>{stateText[state]}</span>
        {st.lastError && (
          <div className="small" data-testid={`last-error-${st.name}`}>
            last error {timeAgo(st.lastErrorAt ?? undefined)}: {st.lastError}
          </div>
        )}
      </td>
    </tr>
  );
}

// Notifications lists the receivers of `notifications:` with their last delivery
// and last error; the list itself lives in the config file.
export function Notifications() {
  // Asked again after a failure too: the daemon may be restarting.
  const { data, reload } = useApiGet<NotificationList>('/api/v1/notifications', { every: POLL_MS, pollFailures: true, dropOnError: true });
  const list = data?.notifications ?? null;
  if (!list) return null;
  return (
    <section className="panel" aria-label="Notifications">
      <h2>Notifications</h2>
      {list.length === 0 ? (
        <p className="muted small">
          None configured: list receivers under <code>notifications:</code> in the config file (docs/configuration.md).
        </p>
      ) : (
        <>
          <table className="list">
            <TableHead columns={['receiver', 'events', 'last delivery', 'state']} />
            <tbody>
              {list.map((st) => (
                <Receiver key={st.name} st={st} />
              ))}
            </tbody>
          </table>
          <button type="button" className="btn small" onClick={() => reload()}>
            Refresh
          </button>
        </>
      )}
    </section>
  );
}
