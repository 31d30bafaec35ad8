// The drawer's comparison of Git and the cluster, as Argo CD has it: an aligned diff
// (one row per Proxmox key, manifest beside cluster, changed rows highlighted), the
// desired manifest as it is in Git and the live config as Proxmox answers it.

import { useMemo, useRef, useState, type KeyboardEvent } from 'react';
import { resourcePath } from '../api/client';
import { useApiGet } from '../api/useApi';
import type { Change, LiveConfig, ManifestText } from '../api/types';
import { align, GROUPS, shortKey, yaml, type AlignedRow } from '../lib/align';
import { changeNote, formatTime } from '../lib/format';
import { TableHead } from './TableHead';

const CLIP = 160;

function Value({ field, lines }: { field: string; lines: string[] | null }) {
  if (lines === null || lines.length === 0 || (lines.length === 1 && lines[0] === ''))
    return (
      <span className="muted">
        —<span className="sr-only"> not set</span>
      </span>
    );
  return (
    <>
      {lines.map((l, i) => {
        const shown = field === 'sshkeys' || field === 'ssh-public-keys' ? shortKey(l) : l.length > CLIP ? `${l.slice(0, CLIP)}…` : l;
        return (
          <div key={i} className={`val${l.startsWith('pending: ') ? ' pending' : ''}`} title={shown !== l ? l : undefined}>
            {shown}
          </div>
        );
      })}
    </>
  );
}

function Rows({ rows }: { rows: AlignedRow[] }) {
  return (
    <>
      {rows.map((r) => (
        <tr key={r.field} className={r.changed ? 'changed' : undefined}>
          <th scope="row" title={r.path ? `${r.field} · ${r.path}` : r.field}>
            {r.changed && (
              <span className="diff-mark" aria-hidden="true">
                ≠
              </span>
            )}
            {r.field}
            {r.change && changeNote(r.change)}
            {r.changed && <span className="sr-only"> (differs)</span>}
          </th>
          <td>
            <Value field={r.field} lines={r.desired} />
          </td>
          <td>
            <Value field={r.field} lines={r.observed} />
          </td>
        </tr>
      ))}
    </>
  );
}

// summaryText says how the sides compare; with one side missing nothing is
// marked (every field would differ), which is not "no field differs".
export function summaryText(desired: unknown, observed: unknown, changed: number): string {
  if (observed === null || observed === undefined) return 'Nothing on the cluster to compare with: no field is marked.';
  if (desired === null || desired === undefined) return 'No manifest in Git to compare with: no field is marked.';
  return changed === 0 ? 'No field differs.' : `${changed} field${changed === 1 ? '' : 's'} differ${changed === 1 ? 's' : ''}.`;
}

export function AlignedDiff({
  kind,
  desired,
  observed,
  changes,
  fieldPaths,
}: {
  kind: string;
  desired: unknown;
  observed: unknown;
  changes: Change[] | null | undefined;
  fieldPaths?: Record<string, string> | null;
}) {
  const rows = useMemo(() => align(kind, desired, observed, changes, fieldPaths), [kind, desired, observed, changes, fieldPaths]);
  const [onlyChanged, setOnlyChanged] = useState(false);
  const [showExtra, setShowExtra] = useState(false);
  const changed = rows.filter((r) => r.changed).length;
  const extra = rows.filter((r) => r.group === 'not in the manifest' && !r.changed);
  const groups = GROUPS.map((g) => ({
    g,
    rows: rows.filter((r) => r.group === g && (!onlyChanged || r.changed) && (g !== 'not in the manifest' || showExtra || r.changed)),
  })).filter((x) => x.rows.length > 0);
  if (rows.length === 0) return <p className="muted">Nothing to compare: neither side has fields.</p>;
  return (
    <div className="aligned-wrap">
      <div className="row aligned-tools">
        <span className="small">{summaryText(desired, observed, changed)}</span>
        <label className="check small">
          <input type="checkbox" checked={onlyChanged} onChange={(e) => setOnlyChanged(e.target.checked)} /> only differences
        </label>
        {extra.length > 0 && !onlyChanged && (
          <button type="button" className="btn small" aria-expanded={showExtra} onClick={() => setShowExtra((s) => !s)}>
            {showExtra ? 'Hide' : 'Show'} {extra.length} cluster setting{extra.length === 1 ? '' : 's'} the manifest does not set
          </button>
        )}
      </div>
      <table className="aligned">
        <caption className="sr-only">Each field in the manifest and on the cluster, one row per Proxmox key</caption>
        <colgroup>
          <col className="c-field" />
          <col />
          <col />
        </colgroup>
        <TableHead columns={['field', 'manifest (Git)', 'cluster (Proxmox)']} />
        {groups.map(({ g, rows: rs }) => (
          <tbody key={g}>
            <tr className="group">
              <th scope="colgroup" colSpan={3}>
                {g}
              </th>
            </tr>
            <Rows rows={rs} />
          </tbody>
        ))}
      </table>
    </div>
  );
}

type Tab = 'diff' | 'desired' | 'live';
const TABS: { id: Tab; label: string }[] = [
  { id: 'diff', label: 'Diff' },
  { id: 'desired', label: 'Desired manifest' },
  { id: 'live', label: 'Live manifest' },
];

export default function ManifestTabs({
  kind,
  name,
  cluster = '',
  desired,
  observed,
  changes,
  fieldPaths,
  version,
}: {
  kind: string;
  name: string;
  cluster?: string;
  desired: unknown;
  observed: unknown;
  changes: Change[] | null | undefined;
  // The detail's Proxmox key -> manifest path map (docs/api.md, "One resource").
  fieldPaths?: Record<string, string> | null;
  // Changes when the resource does (its updatedAt): the YAML views are read again.
  version: unknown;
}) {
  const [tab, setTab] = useState<Tab>('diff');
  const tabs = useRef<(HTMLButtonElement | null)[]>([]);
  const manifest = useApiGet<ManifestText>(tab === 'desired' && desired ? resourcePath(kind, name, '/manifest', cluster) : null, { deps: [version], dropOnError: true });
  const live = useApiGet<LiveConfig>(tab === 'live' && observed ? resourcePath(kind, name, '/live', cluster) : null, { deps: [version], dropOnError: true });
  const onKey = (e: KeyboardEvent) => {
    const i = TABS.findIndex((t) => t.id === tab);
    const to = e.key === 'ArrowRight' ? (i + 1) % TABS.length : e.key === 'ArrowLeft' ? (i + TABS.length - 1) % TABS.length : -1;
    if (to < 0) return;
    e.preventDefault();
    setTab(TABS[to].id);
    tabs.current[to]?.focus();
  };
  const id = (t: Tab) => `mt-${t}`;
  return (
    <section className="manifests" aria-label="Manifest and cluster">
      <div role="tablist" aria-label="Compare the manifest and the cluster" className="tabs" onKeyDown={onKey}>
        {TABS.map((t, i) => (
          <button
            key={t.id}
            ref={(el) => {
              tabs.current[i] = el;
            }}
            type="button"
            role="tab"
            id={`${id(t.id)}-tab`}
            aria-selected={tab === t.id}
            aria-controls={id(t.id)}
            tabIndex={tab === t.id ? 0 : -1}
            onClick={() => setTab(t.id)}
          >
            {t.label}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={id(tab)} aria-labelledby={`${id(tab)}-tab`} className="tabpanel">
        {tab === 'diff' && <AlignedDiff kind={kind} desired={desired} observed={observed} changes={changes} fieldPaths={fieldPaths} />}
        {tab === 'desired' &&
          (!desired ? (
            <p className="muted">No manifest: this resource exists only on the cluster.</p>
          ) : manifest.error ? (
            <div className="alert error">{manifest.error}</div>
          ) : !manifest.data ? (
            <p className="muted">Loading…</p>
          ) : (
            <>
              <p className="muted small">
                <span className="mono">{manifest.data.file}</span> at <code title={manifest.data.revision}>{manifest.data.revision.slice(0, 8)}</code>, as in Git
              </p>
              <pre className="yaml" tabIndex={0} aria-label={`Desired manifest, ${manifest.data.file}`}>
                {manifest.data.text}
              </pre>
            </>
          ))}
        {tab === 'live' &&
          (!observed ? (
            <p className="muted">Not on the cluster.</p>
          ) : live.error ? (
            <div className="alert error">{live.error}</div>
          ) : !live.data ? (
            <p className="muted">Reading from Proxmox…</p>
          ) : (
            <>
              <p className="muted small">
                {live.data.source === 'proxmox' ? (
                  <>
                    As Proxmox answers <span className="mono">GET {live.data.path}</span>, read {formatTime(live.data.time)}
                  </>
                ) : (
                  <>As the last pass observed it, {formatTime(live.data.time)}</>
                )}
              </p>
              <pre className="yaml" tabIndex={0} aria-label="Live config, as Proxmox answers it">
                {yaml(live.data.data)}
              </pre>
            </>
          ))}
      </div>
    </section>
  );
}
