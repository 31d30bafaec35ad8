import { useState } from 'react';
import { api, errorMessage } from '../api/client';
import type { Pin } from '../api/types';
import { shortRev } from '../lib/format';
import { Link } from '../lib/router';
import { ErrorAlert } from './RoleSelect';

// PinBanner says loudly that the controller applies a pinned revision, not the
// branch head, with the way back (admins only may unpin).
export default function PinBanner({ pinned, isAdmin, onUnpinned }: { pinned: Pin | null; isAdmin: boolean; onUnpinned?: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  if (!pinned) return null;
  const unpin = async () => {
    setBusy(true);
    setError('');
    try {
      await api.del('/api/v1/revisions/pin');
      onUnpinned?.();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="alert pin-banner" role="status">
      <strong>
        Pinned to <code title={pinned.revision}>{shortRev(pinned.revision)}</code>
      </strong>
      {pinned.message && <span className="rev-msg"> {pinned.message}</span>}
      <span className="muted small"> · the branch head is not applied until unpinned{pinned.by ? ` (pinned by ${pinned.by})` : ''}</span>{' '}
      {isAdmin ? (
        <button type="button" className="btn small" onClick={unpin} disabled={busy}>
          Unpin
        </button>
      ) : (
        <Link href="/revisions">Revisions</Link>
      )}
      <ErrorAlert error={error} />
    </div>
  );
}
