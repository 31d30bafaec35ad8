import { useEffect, useRef, useState } from 'react';
import { api, resourcePath } from '../api/client';
import { useAction } from '../api/useAction';
import type { AdoptResult, Change } from '../api/types';
import { changeLabel } from '../lib/format';
import { isGuest } from '../lib/kinds';
import { useModal } from '../lib/modal';
import { ErrorAlert } from './RoleSelect';
import { ChangeCells } from './ChangeTable';
import { ConfirmRow } from './ConfirmRow';
import { TableHead } from './TableHead';

// Adoption of a Conflict's guest (docs/api.md, "Adoption"), for admins: a dry run
// first shows what adopting does (the ownership tag now, then the ordinary updates a
// sync applies, an undeclared tag's removal included), and only a confirmation adopts.

// Tags the sync would remove: on the guest, not in the manifest.
export function removedTags(changes: Change[]): string[] {
  const tags = changes.find((c) => c.field === 'tags');
  if (!tags) return [];
  const split = (s: string) => s.split(/[;,\s]+/).filter(Boolean);
  const keep = new Set(split(tags.to));
  return split(tags.from).filter((t) => !keep.has(t));
}

function AdoptConfirm({ name, plan, busy, onCancel, onConfirm }: { name: string; plan: AdoptResult; busy: boolean; onCancel: () => void; onConfirm: () => void }) {
  const cancel = useRef<HTMLButtonElement>(null);
  const dialog = useRef<HTMLDivElement>(null);
  // Escape cancels, unless the confirmed action already runs.
  useModal(dialog, () => !busy && onCancel(), () => cancel.current);
  const changes = plan.plan.changes ?? [];
  const removed = removedTags(changes);
  const later = changes.filter((c) => c.field !== 'tags');
  return (
    <div className="confirm" role="alertdialog" aria-modal="true" ref={dialog} aria-labelledby="adopt-title" aria-describedby="adopt-desc">
      <h4 id="adopt-title">
        Adopt VMID {plan.vmid} on {plan.node} as {name}?
      </h4>
      <div id="adopt-desc">
        <p>
          proxmops did not make this guest. Adopting adds the tags <span className="mono">managed-by-proxmops</span> and{' '}
          <span className="mono">adopted-by-proxmops</span> to it, records its disk sizes in its description (a{' '}
          <span className="mono">proxmops-adopted:</span> line) and changes nothing else now; from then on proxmops reconciles it
          with the manifest and keeps what it was made with: nothing is replaced or moved, and a disk larger than declared is
          reported, never shrunk (one grown beyond its size at adoption is reported as drift).
        </p>
        {plan.plan.reason && <p className="muted small">{plan.plan.reason}</p>}
        {removed.length > 0 && (
          <p className="alert">
            Tags are managed: the next sync sets the manifest's tags and removes {removed.length === 1 ? 'the tag' : 'the tags'}{' '}
            <strong>{removed.join(', ')}</strong> from the guest. Declare {removed.length === 1 ? 'it' : 'them'} in the manifest to keep{' '}
            {removed.length === 1 ? 'it' : 'them'}.
          </p>
        )}
        <table className="changes" aria-label="The plan after adoption">
          <TableHead columns={['field', 'on the guest', 'after', 'when']} />
          <tbody>
            {changes.map((c) => (
              <tr key={changeLabel(c)}>
                <ChangeCells c={c} from="on the guest" to="after" />
                <td data-label="when">{c.field === 'tags' ? 'ownership tag now, the rest at the next sync' : 'at the next sync'}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {later.length === 0 && <p>Apart from the tags the guest already matches the manifest.</p>}
      </div>
      <ConfirmRow tone="primary" label="Adopt" busyLabel="Adopting…" busy={busy} onConfirm={onConfirm} onCancel={onCancel} cancelRef={cancel} />
    </div>
  );
}

// onDone gets the result's words: the drawer shows them, as this section goes once the
// guest is no longer a Conflict.
export default function Adopt({ kind, name, cluster = '', onDone }: { kind: string; name: string; cluster?: string; onDone: (message: string) => void }) {
  const [plan, setPlan] = useState<AdoptResult | null>(null);
  const { busy, error, setError, run } = useAction<'plan' | 'adopt'>();

  useEffect(() => {
    setPlan(null);
    setError('');
  }, [kind, name]);

  if (!isGuest(kind)) return null;
  const path = resourcePath(kind, name, '/adopt', cluster);

  const preview = () =>
    run('plan', async () => {
      setPlan(await api.post<AdoptResult>(path, { dryRun: true }));
    });
  const adopt = () =>
    run('adopt', async () => {
      const r = await api.post<AdoptResult>(path, {});
      setPlan(null);
      onDone(`Adopted. ${r.message}`);
    });

  return (
    <section className="actions" aria-label="Adoption">
      <button type="button" className="btn" onClick={preview} disabled={busy !== '' || plan !== null}>
        {busy === 'plan' ? 'Planning the adoption…' : 'Adopt…'}
      </button>
      <span className="muted small">Take ownership of this guest: proxmops then reconciles it with the manifest.</span>
      <ErrorAlert error={error} />
      {plan && <AdoptConfirm name={name} plan={plan} busy={busy === 'adopt'} onCancel={() => setPlan(null)} onConfirm={adopt} />}
    </section>
  );
}
