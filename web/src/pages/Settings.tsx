import { useEffect, useState, type ReactNode } from 'react';
import { api, errorMessage } from '../api/client';
import { useAction } from '../api/useAction';
import { useApiGet } from '../api/useApi';
import type { ApiToken, Check, CheckLevel, NewToken, Role, Settings as SettingsDoc, TestResult, TokenList } from '../api/types';
import { ChangePassword, Users } from '../components/Accounts';
import ExportPanel from '../components/ExportPanel';
import { Notifications } from '../components/Notifications';
import { ErrorAlert, Notice, RoleSelect } from '../components/RoleSelect';
import { formatTime } from '../lib/format';
import { useTransient } from '../lib/transient';
import { useSession } from '../state/session';
import { isSet, secretId, settingsPayload, type SecretEdits } from '../state/settings';
import { TableHead } from '../components/TableHead';
import { submitted } from '../lib/forms';

type Section = 'cluster' | 'source' | 'reconcile' | 'forge';

// The hint stays outside the <label> so that the control's accessible name is the label alone.
function Field({ label, hint, children }: { label: string; hint?: string; children: ReactNode }) {
  return (
    <div className="field">
      <label className="field">
        <span className="field-label">{label}</span>
        {children}
      </label>
      {hint && <span className="field-hint">{hint}</span>}
    </div>
  );
}

function SecretField({
  label,
  state,
  edit,
  onEdit,
  multiline = false,
}: {
  label: string;
  state: string;
  edit: { value: string; clear: boolean } | undefined;
  onEdit: (e: { value: string; clear: boolean }) => void;
  multiline?: boolean;
}) {
  const set = isSet(state);
  const e = edit ?? { value: '', clear: false };
  const placeholder = set ? 'set (leave blank to keep)' : 'not set';
  return (
    <div className="field">
      <span className="field-label">
        {label} <span className={`pill ${set ? 'ok' : ''}`}>{set ? 'set' : 'not set'}</span>
      </span>
      {multiline ? (
        <textarea
          aria-label={label}
          value={e.value}
          placeholder={placeholder}
          rows={3}
          className="mono"
          onChange={(ev) => onEdit({ value: ev.target.value, clear: false })}
        />
      ) : (
        <input
          type="password"
          aria-label={label}
          autoComplete="new-password"
          value={e.value}
          placeholder={placeholder}
          onChange={(ev) => onEdit({ value: ev.target.value, clear: false })}
        />
      )}
      {set && (
        <label className="check small">
          <input type="checkbox" checked={e.clear} onChange={(ev) => onEdit({ value: '', clear: ev.target.checked })} /> clear
          it
        </label>
      )}
    </div>
  );
}

function ConnectionSettings() {
  const [doc, setDoc] = useState<SettingsDoc | null>(null);
  const [form, setForm] = useState<SettingsDoc | null>(null);
  const [edits, setEdits] = useState<SecretEdits>({});
  // "Saved." goes by itself; an error stays until the next save or test.
  const [saved, setSaved] = useTransient();
  const { busy, error, setError, run } = useAction<'save' | 'test'>();
  const [result, setResult] = useState<TestResult | null>(null);

  const load = () =>
    api
      .get<SettingsDoc>('/api/v1/settings')
      .then((d) => {
        setDoc(d);
        setForm(structuredClone(d));
        setEdits({});
      })
      .catch((err) => setError(errorMessage(err)));
  useEffect(() => {
    load();
  }, []);

  if (!form || !doc) return error ? <div className="alert error">{error}</div> : <p className="muted">Loading settings…</p>;

  const set = <S extends Section>(section: S, field: keyof NonNullable<SettingsDoc[S]>, value: unknown) =>
    setForm((f) => (f ? { ...f, [section]: { ...f[section], [field]: value } } : f));
  const editSecret = (section: string, field: string) => (e: { value: string; clear: boolean }) =>
    setEdits((m) => ({ ...m, [secretId(section, field)]: e }));
  const text = <S extends Section>(section: S, field: keyof NonNullable<SettingsDoc[S]>, label: string, hint?: string, placeholder?: string) => (
    <Field label={label} hint={hint}>
      <input
        value={String((form[section] as NonNullable<SettingsDoc[S]> | undefined)?.[field] ?? '')}
        placeholder={placeholder}
        onChange={(e) => set(section, field, e.target.value)}
      />
    </Field>
  );
  const bool = <S extends Section>(section: S, field: keyof NonNullable<SettingsDoc[S]>, label: string) => (
    <label className="check">
      <input type="checkbox" checked={Boolean((form[section] as NonNullable<SettingsDoc[S]> | undefined)?.[field])} onChange={(e) => set(section, field, e.target.checked)} /> {label}
    </label>
  );

  const save = () => {
    setSaved('');
    return run('save', async () => {
      await api.put('/api/v1/settings', settingsPayload(form, edits));
      setSaved('Saved. The daemon uses the new settings from its next pass.');
      await load();
    });
  };
  const test = () => {
    setResult(null);
    return run('test', async () => {
      setResult(await api.post<TestResult>('/api/v1/settings/test', settingsPayload(form, edits)));
    });
  };

  return (
    <form
      className="settings-form"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      {doc.warnings && doc.warnings.length > 0 && (
        <div className="alert" role="status">
          <strong>Advice about this configuration</strong>
          <ul>
            {doc.warnings.map((w) => (
              <li key={w}>{w}</li>
            ))}
          </ul>
        </div>
      )}
      <fieldset>
        <legend>Proxmox VE cluster</legend>
        {text('cluster', 'endpoint', 'API endpoint', undefined, 'https://pve.example.com:8006/api2/json')}
        {text('cluster', 'tokenId', 'API token ID', undefined, 'proxmops@pve!gitops')}
        <SecretField label="API token secret" state={doc.cluster.tokenSecret} edit={edits['cluster.tokenSecret']} onEdit={editSecret('cluster', 'tokenSecret')} />
        {text('cluster', 'fingerprint', 'Certificate fingerprint (SHA-256)', 'Pins a self-signed certificate.')}
        {text('cluster', 'caFile', 'CA file', 'Path on the daemon’s machine.')}
        {bool('cluster', 'insecureSkipVerify', 'Skip TLS verification (not recommended)')}
      </fieldset>
      <fieldset>
        <legend>Git source</legend>
        {text('source', 'repoURL', 'Repository URL', 'https, ssh, file:// or a local directory.')}
        {text('source', 'path', 'Path in the repository')}
        {text('source', 'revision', 'Revision', 'Branch, tag or commit.')}
        {text('source', 'username', 'Username (https)')}
        <SecretField label="Access token (https)" state={doc.source.token} edit={edits['source.token']} onEdit={editSecret('source', 'token')} />
        <SecretField label="SSH private key" state={doc.source.sshKey} edit={edits['source.sshKey']} onEdit={editSecret('source', 'sshKey')} multiline />
        {'knownHostsFile' in form.source && text('source', 'knownHostsFile', 'SSH known_hosts file', 'Path on the daemon’s machine.')}
        {'insecureIgnoreHostKey' in form.source && bool('source', 'insecureIgnoreHostKey', 'Skip the SSH host key check (not recommended)')}
        {bool('source', 'submodules', 'Fetch submodules')}
      </fieldset>
      {form.reconcile && (
        <fieldset>
          <legend>Reconciliation</legend>
          {text('reconcile', 'interval', 'Interval', 'How often a full pass runs, e.g. 60s or 5m.')}
          <Field label="Concurrency">
            <input type="number" min={1} value={form.reconcile.concurrency} onChange={(e) => set('reconcile', 'concurrency', e.target.value)} />
          </Field>
          {form.reconcile.historyPerResource !== undefined && (
            <Field label="History kept per resource">
              <input type="number" min={1} value={form.reconcile.historyPerResource} onChange={(e) => set('reconcile', 'historyPerResource', e.target.value)} />
            </Field>
          )}
          {form.reconcile.historyTotal !== undefined && (
            <Field label="History kept in all">
              <input type="number" min={1} value={form.reconcile.historyTotal} onChange={(e) => set('reconcile', 'historyTotal', e.target.value)} />
            </Field>
          )}
          {bool('reconcile', 'autoSync', 'Apply changes automatically')}
          {bool('reconcile', 'prune', 'Prune: delete owned resources whose manifest is gone')}
          {bool('reconcile', 'dryRun', 'Dry run: plan only, never change the cluster')}
        </fieldset>
      )}
      {form.forge && doc.forge && (
        <fieldset>
          <legend>Pull-request previews</legend>
          <Field label="Forge" hint="Where the pull requests (GitLab: merge requests) are.">
            <select value={form.forge.type} onChange={(e) => set('forge', 'type', e.target.value)}>
              <option value="">none</option>
              <option value="github">GitHub</option>
              <option value="gitea">Gitea, Forgejo</option>
              <option value="gitlab">GitLab</option>
            </select>
          </Field>
          {text('forge', 'apiURL', 'Forge API URL', 'GitHub: https://api.github.com; Gitea, Forgejo, GitLab: the instance’s address.')}
          {text('forge', 'repository', 'Repository', 'owner/name; GitLab: the project’s path.', 'you/homelab')}
          <SecretField label="Forge token" state={doc.forge.token} edit={edits['forge.token']} onEdit={editSecret('forge', 'token')} />
          {bool('forge', 'pullRequestPreviews', 'Plan every open request and post the plan on it')}
        </fieldset>
      )}
      <div className="row">
        <button type="submit" className="btn primary" disabled={busy !== ''}>
          {busy === 'save' ? 'Saving…' : 'Save'}
        </button>
        <button type="button" className="btn" onClick={test} disabled={busy !== ''}>
          {busy === 'test' ? 'Testing…' : 'Test connection'}
        </button>
        <Notice text={saved} />
      </div>
      <ErrorAlert error={error} />
      {result && <CheckReport result={result} />}
    </form>
  );
}

// checkLevel is a line's level; a daemon older than the levels sends ok only.
const checkLevel = (c: Check): CheckLevel => c.level ?? (c.ok ? 'OK' : 'FAIL');

const levelClass: Record<CheckLevel, string> = { OK: 'ok', WARN: 'warn', FAIL: 'bad' };
const levelWords: Record<CheckLevel, string> = { OK: 'passed', WARN: 'passed with a warning', FAIL: 'failed' };

// CheckReport shows the report of `proxmops check` (POST /api/v1/settings/test):
// one line per check, OK, WARN or FAIL, with what to do.
function CheckReport({ result }: { result: TestResult }) {
  const warnings = (result.checks ?? []).filter((c) => checkLevel(c) === 'WARN').length;
  const title = !result.ok ? 'Some checks failed' : warnings > 0 ? `Every check passed, ${warnings} with a warning` : 'Every check passed';
  return (
    <section className={`checks ${result.ok ? 'ok' : 'bad'}`} aria-label="Connection test">
      <h4>{title}</h4>
      <ul>
        {(result.checks ?? []).map((c, i) => {
          const level = checkLevel(c);
          return (
            <li key={`${c.name}-${i}`} className={levelClass[level]}>
              <span className="level">{level}</span> <strong>{c.name}</strong>
              {c.message && <span className="muted"> — {c.message}</span>}
              {c.fix && <div className="fix">What to do: {c.fix}</div>}
              <span className="sr-only">{levelWords[level]}</span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}

function Tokens() {
  const list = useApiGet<TokenList>('/api/v1/tokens');
  const tokens = list.data?.tokens ?? [];
  const { error, run } = useAction<'create' | 'revoke'>();
  const [form, setForm] = useState({ name: '', role: 'viewer' as Role });
  const [created, setCreated] = useState<NewToken | null>(null);
  const [copied, setCopied] = useState(false);
  const add = () =>
    run('create', async () => {
      setCopied(false);
      setCreated(await api.post<NewToken>('/api/v1/tokens', form));
      setForm({ name: '', role: 'viewer' });
      list.reload();
    });
  const remove = async (t: ApiToken) => {
    if (!window.confirm(`Revoke the token ${t.name}? Scripts using it stop working.`)) return;
    await run('revoke', async () => {
      await api.del(`/api/v1/tokens/${encodeURIComponent(String(t.id))}`);
      list.reload();
    });
  };
  return (
    <section className="panel" aria-label="API tokens">
      <h2>API tokens</h2>
      <p className="muted small">
        For scripts and CI: send <code>Authorization: Bearer TOKEN</code>.
      </p>
      {created && (
        <div className="alert token-once" role="status">
          <div>
            Token <strong>{created.name}</strong> created. Copy it now: it is shown only once.
          </div>
          <div className="row">
            <code className="token-value" data-testid="new-token">
              {created.token}
            </code>
            <button
              type="button"
              className="btn small"
              onClick={() => navigator.clipboard?.writeText(created.token).then(() => setCopied(true), () => setCopied(false))}
            >
              {copied ? 'Copied' : 'Copy'}
            </button>
            <button type="button" className="btn small" onClick={() => setCreated(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <table className="list">
        <TableHead columns={['name', 'role', 'created', 'last used']} actions />
        <tbody>
          {tokens.length === 0 && (
            <tr>
              <td colSpan={5} className="muted">
                No tokens.
              </td>
            </tr>
          )}
          {tokens.map((t) => (
            <tr key={String(t.id)}>
              <td data-label="name">{t.name}</td>
              <td data-label="role">{t.role}</td>
              <td data-label="created">{formatTime(t.createdAt)}</td>
              <td data-label="last used">{t.lastUsedAt ? formatTime(t.lastUsedAt) : 'never'}</td>
              <td className="right">
                <button type="button" className="btn small danger" onClick={() => remove(t)}>
                  Revoke
                </button>
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <form className="row inline-form" onSubmit={submitted(add)}>
        <input aria-label="New token's name" placeholder="token name, e.g. ci" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} required />
        <RoleSelect label="New token's role" value={form.role} onChange={(role) => setForm({ ...form, role })} />
        <button type="submit" className="btn">
          Create token
        </button>
      </form>
      <ErrorAlert error={error || list.error} />
    </section>
  );
}

export default function Settings() {
  const { isAdmin } = useSession();
  if (!isAdmin) {
    return (
      <div className="page settings-page">
        <header className="page-head">
          <h1>Your account</h1>
        </header>
        <p className="muted">Only administrators can see and change the connections, users and tokens.</p>
        <div className="stack narrow">
          <ChangePassword />
        </div>
      </div>
    );
  }
  return (
    <div className="page settings-page">
      <header className="page-head">
        <h1>Settings</h1>
      </header>
      <div className="settings-grid">
        <section className="panel" aria-label="Connections">
          <h2>Connections</h2>
          <ConnectionSettings />
        </section>
        <div className="stack">
          <ChangePassword />
          <Users />
          <Tokens />
          <Notifications />
          <ExportPanel />
        </div>
      </div>
    </div>
  );
}
