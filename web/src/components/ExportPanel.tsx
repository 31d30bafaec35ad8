import { useState } from 'react';
import { ApiError } from '../api/client';
import { useAction } from '../api/useAction';
import { EXPORT_KINDS, GUEST_KINDS } from '../lib/kinds';
import { useTransient } from '../lib/transient';
import { SubmitRow } from './RoleSelect';
import { submitted } from '../lib/forms';


// exportURL builds the query of GET /api/v1/export from the form.
export function exportURL(o: { vmids: string; node: string; kinds: string[] }): string {
  const q = new URLSearchParams();
  if (o.vmids.trim()) q.set('vmid', o.vmids.trim());
  else q.set('all', 'true');
  if (o.node.trim()) q.set('node', o.node.trim());
  for (const k of o.kinds) q.append('kind', k);
  return `/api/v1/export?${q.toString()}`;
}

// ExportPanel downloads the manifests of what is already on the cluster,
// as `proxmops export` writes them, for onboarding (admins only).
export default function ExportPanel() {
  const [vmids, setVmids] = useState('');
  const [node, setNode] = useState('');
  const [kinds, setKinds] = useState<string[]>([...GUEST_KINDS]);
  const { busy, error, run } = useAction<'export'>();
  const [done, setDone] = useTransient();

  const download = () =>
    run('export', async () => {
      setDone('');
      const res = await fetch(exportURL({ vmids, node, kinds }), { credentials: 'same-origin' });
      if (!res.ok) {
        let msg = `${res.status} ${res.statusText || 'error'}`;
        try {
          const data = (await res.json()) as { error?: string };
          if (data.error) msg = data.error;
        } catch {
          // not JSON: keep the status
        }
        throw new ApiError(res.status, msg);
      }
      const blob = await res.blob();
      const name = /filename="([^"]+)"/.exec(res.headers.get('Content-Disposition') ?? '')?.[1] ?? 'proxmops-export.tar.gz';
      const url = URL.createObjectURL(blob);
      const a = document.createElement('a');
      a.href = url;
      a.download = name;
      document.body.appendChild(a);
      a.click();
      a.remove();
      URL.revokeObjectURL(url);
      setDone(`Downloaded ${name} (${res.headers.get('X-Proxmops-Manifests') ?? '?'} manifests).`);
    });

  return (
    <section className="panel" aria-label="Export">
      <h2>Export the cluster to manifests</h2>
      <p className="muted">
        One manifest per guest already on the cluster, annotated for adoption: review them, commit them, and the next plan shows only the adoptions.
      </p>
      <form
        className="settings-form"
        onSubmit={submitted(download)}
      >
        <label className="field">
          <span className="field-label">VMIDs (empty: all guests)</span>
          <input aria-label="VMIDs to export" placeholder="100,105-110" value={vmids} onChange={(e) => setVmids(e.target.value)} />
        </label>
        <label className="field">
          <span className="field-label">Node (empty: all nodes)</span>
          <input aria-label="Node to export" placeholder="pve1" value={node} onChange={(e) => setNode(e.target.value)} />
        </label>
        <fieldset>
          <legend>Kinds</legend>
          {EXPORT_KINDS.map((k) => (
            <label key={k} className="check">
              <input
                type="checkbox"
                checked={kinds.includes(k)}
                onChange={(e) => setKinds(e.target.checked ? [...kinds, k] : kinds.filter((x) => x !== k))}
              />{' '}
              {k}
            </label>
          ))}
        </fieldset>
        <SubmitRow
          label="Download manifests (.tar.gz)"
          busyLabel="Exporting…"
          busy={busy === 'export'}
          disabled={kinds.length === 0}
          done={done}
          error={error}
        />
      </form>
    </section>
  );
}
