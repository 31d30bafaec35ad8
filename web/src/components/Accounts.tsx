// Accounts on the Settings page (docs/api.md, "Accounts"): every user changes their
// own password; administrators add and remove users, change their role and reset
// their password.

import { useState } from 'react';
import { api, errorMessage, setCsrfToken } from '../api/client';
import { useAction } from '../api/useAction';
import { useApiGet } from '../api/useApi';
import type { Me, Role, User, UserList } from '../api/types';
import { formatTime } from '../lib/format';
import { useTransient } from '../lib/transient';
import { useSession } from '../state/session';
import { ErrorAlert, Notice, RoleSelect, SubmitRow } from './RoleSelect';
import { TableHead } from './TableHead';
import { submitted } from '../lib/forms';

const userPath = (name: string) => `/api/v1/users/${encodeURIComponent(name)}`;

// ChangePassword is the own-password form; a user signed in by single sign-on has
// no password here and is told where to change it.
export function ChangePassword() {
  const { me } = useSession();
  if (me.via === 'oidc') {
    return (
      <section className="panel" aria-label="Your password">
        <h2>Your password</h2>
        <p className="muted">You signed in with single sign-on: your password is your identity provider’s, changed there.</p>
      </section>
    );
  }
  return <PasswordForm />;
}

function PasswordForm() {
  const [form, setForm] = useState({ current: '', next: '', again: '' });
  const { busy, error, setError, run } = useAction<'change'>();
  const [done, setDone] = useTransient();
  const mismatch = form.again !== '' && form.next !== form.again;
  const submit = async () => {
    setDone('');
    if (form.next !== form.again) {
      setError('The new password and its repetition differ.');
      return;
    }
    await run('change', async () => {
      const me = await api.post<Me>('/api/v1/me/password', { currentPassword: form.current, newPassword: form.next });
      // The server replaced this session: later writes need the new CSRF token.
      setCsrfToken(me.csrfToken);
      setForm({ current: '', next: '', again: '' });
      setDone('Password changed. Your other sessions were signed out.');
    });
  };
  return (
    <section className="panel" aria-label="Your password">
      <h2>Your password</h2>
      <form
        className="settings-form"
        onSubmit={submitted(submit)}
      >
        <label className="field">
          <span className="field-label">Current password</span>
          <input type="password" autoComplete="current-password" value={form.current} onChange={(e) => setForm({ ...form, current: e.target.value })} required />
        </label>
        <label className="field">
          <span className="field-label">New password</span>
          <input
            type="password"
            autoComplete="new-password"
            minLength={10}
            value={form.next}
            onChange={(e) => setForm({ ...form, next: e.target.value })}
            required
          />
        </label>
        <label className="field">
          <span className="field-label">New password again</span>
          <input
            type="password"
            autoComplete="new-password"
            value={form.again}
            aria-invalid={mismatch}
            onChange={(e) => setForm({ ...form, again: e.target.value })}
            required
          />
        </label>
        <span className="field-hint">10 to 1024 characters.</span>
        <SubmitRow label="Change password" busyLabel="Changing…" busy={busy === 'change'} disabled={mismatch} done={done} error={error} />
      </form>
    </section>
  );
}

function UserRow({ u, self, onChanged, onError }: { u: User; self: boolean; onChanged: (msg: string) => void; onError: (msg: string) => void }) {
  const [resetting, setResetting] = useState(false);
  const [password, setPassword] = useState('');
  const patch = async (body: { role?: Role; password?: string }, msg: string) => {
    onError('');
    try {
      await api.patch(userPath(u.username), body);
      onChanged(msg);
      return true;
    } catch (err) {
      onError(errorMessage(err));
      return false;
    }
  };
  const remove = async () => {
    if (!window.confirm(`Delete the user ${u.username}?`)) return;
    onError('');
    try {
      await api.del(userPath(u.username));
      onChanged(`${u.username} was deleted.`);
    } catch (err) {
      onError(errorMessage(err));
    }
  };
  return (
    <tr>
      <td data-label="user">
        {u.username}
        {self && <span className="muted"> (you)</span>}
      </td>
      <td data-label="role">
        {self ? (
          u.role
        ) : (
          <RoleSelect label={`Role of ${u.username}`} value={u.role} onChange={(role) => patch({ role }, `${u.username} is now ${role}.`)} />
        )}
      </td>
      <td data-label="created">{formatTime(u.createdAt)}</td>
      <td className="right">
        <div className="user-actions">
        {!self && !resetting && (
          <button type="button" className="btn small" onClick={() => setResetting(true)}>
            Reset password…
          </button>
        )}
        {!self && resetting && (
          <form
            className="row reset-form"
            onSubmit={async (e) => {
              e.preventDefault();
              if (await patch({ password }, `The password of ${u.username} was reset; their sessions ended.`)) {
                setResetting(false);
                setPassword('');
              }
            }}
          >
            <input
              type="password"
              aria-label={`New password for ${u.username}`}
              placeholder="new password"
              autoComplete="new-password"
              minLength={10}
              value={password}
              onChange={(e) => setPassword(e.target.value)}
              required
            />
            <button type="submit" className="btn small primary">
              Set
            </button>
            <button type="button" className="btn small" onClick={() => setResetting(false)}>
              Cancel
            </button>
          </form>
        )}
        {!self && (
          <button type="button" className="btn small danger" onClick={remove}>
            Delete
          </button>
        )}
        </div>
      </td>
    </tr>
  );
}

export function Users() {
  const { me } = useSession();
  const list = useApiGet<UserList>('/api/v1/users');
  const users = list.data?.users ?? [];
  const { error, setError, run } = useAction<'add'>();
  const [notice, setNotice] = useTransient();
  const [form, setForm] = useState({ username: '', password: '', role: 'viewer' as Role });
  const add = () =>
    run('add', async () => {
      setNotice('');
      await api.post('/api/v1/users', form);
      setForm({ username: '', password: '', role: 'viewer' });
      list.reload();
    });
  const changed = (msg: string) => {
    setNotice(msg);
    list.reload();
  };
  return (
    <section className="panel" aria-label="Users">
      <h2>Users</h2>
      <table className="list">
        <TableHead columns={['user', 'role', 'created']} actions />
        <tbody>
          {users.map((u) => (
            <UserRow key={u.username} u={u} self={u.username === me.username} onChanged={changed} onError={setError} />
          ))}
        </tbody>
      </table>
      <Notice text={notice} block />
      <form
        className="row inline-form"
        onSubmit={submitted(add)}
      >
        <input aria-label="New user's name" placeholder="username" value={form.username} onChange={(e) => setForm({ ...form, username: e.target.value })} required />
        <input
          aria-label="New user's password"
          placeholder="password"
          type="password"
          autoComplete="new-password"
          value={form.password}
          onChange={(e) => setForm({ ...form, password: e.target.value })}
          required
        />
        <RoleSelect label="New user's role" value={form.role} onChange={(role) => setForm({ ...form, role })} />
        <button type="submit" className="btn">
          Add user
        </button>
      </form>
      <ErrorAlert error={error || list.error} />
    </section>
  );
}
