import { useEffect, useState, type FormEvent, type ReactNode } from 'react';
import { api, errorMessage } from '../api/client';
import type { AuthMethods } from '../api/types';
import { ErrorAlert } from '../components/RoleSelect';

function AuthCard({ title, intro, children }: { title: string; intro?: ReactNode; children: ReactNode }) {
  return (
    <main className="auth">
      <div className="auth-card">
        <div className="brand big">
          <Logo /> proxmops
        </div>
        <h1>{title}</h1>
        {intro && <p className="muted">{intro}</p>}
        {children}
      </div>
    </main>
  );
}

export function Logo() {
  return (
    <svg className="logo" viewBox="0 0 32 32" width="22" height="22" aria-hidden="true">
      <rect x="2" y="2" width="28" height="28" rx="7" fill="var(--accent)" />
      <path d="M9 22V10h7a4 4 0 0 1 0 8h-7" fill="none" stroke="#fff" strokeWidth="3" strokeLinecap="round" strokeLinejoin="round" />
      <circle cx="23" cy="22" r="2.5" fill="#fff" />
    </svg>
  );
}

// onSSO runs as the browser leaves for the identity provider: it comes back
// signed in (or to a page that says why not).
export function Login({ onDone, onSSO }: { onDone: () => void; onSSO?: () => void }) {
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const [methods, setMethods] = useState<AuthMethods | null>(null);
  useEffect(() => {
    let live = true;
    api
      .get<AuthMethods>('/api/v1/auth')
      .then((m) => live && setMethods(m))
      .catch(() => undefined); // an older daemon: passwords only
    return () => {
      live = false;
    };
  }, []);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setBusy(true);
    setError('');
    try {
      await api.post('/api/v1/login', { username, password });
      onDone();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <AuthCard title="Sign in">
      <form onSubmit={submit} className="stack">
        <label className="field">
          <span className="field-label">Username</span>
          <input autoFocus autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        </label>
        <label className="field">
          <span className="field-label">Password</span>
          <input type="password" autoComplete="current-password" value={password} onChange={(e) => setPassword(e.target.value)} required />
        </label>
        <ErrorAlert error={error} />
        <button type="submit" className="btn primary" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      {methods?.oidc && (
        <div className="stack sso">
          <p className="muted sso-or">or</p>
          <a className="btn" href={methods.oidc.loginURL} onClick={() => onSSO?.()}>
            Sign in with {methods.oidc.name}
          </a>
        </div>
      )}
    </AuthCard>
  );
}

export function Setup({ onDone }: { onDone: () => void }) {
  const [token, setToken] = useState('');
  const [username, setUsername] = useState('admin');
  const [password, setPassword] = useState('');
  const [confirm, setConfirm] = useState('');
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  const submit = async (e: FormEvent) => {
    e.preventDefault();
    if (password !== confirm) {
      setError('The two passwords differ.');
      return;
    }
    setBusy(true);
    setError('');
    try {
      await api.post('/api/v1/setup', { token: token.trim(), username, password });
      // The setup may or may not open a session; signing in makes sure it does.
      await api.post('/api/v1/login', { username, password }).catch(() => undefined);
      onDone();
    } catch (err) {
      setError(errorMessage(err));
      setBusy(false);
    }
  };
  return (
    <AuthCard
      title="Welcome: create the first administrator"
      intro={
        <>
          The daemon printed a one-time <strong>setup token</strong> in its log when it started. Paste it here to create the first
          administrator account.
        </>
      }
    >
      <form onSubmit={submit} className="stack">
        <label className="field">
          <span className="field-label">Setup token</span>
          <input className="mono" autoFocus autoComplete="off" value={token} onChange={(e) => setToken(e.target.value)} required />
        </label>
        <label className="field">
          <span className="field-label">Administrator's username</span>
          <input autoComplete="username" value={username} onChange={(e) => setUsername(e.target.value)} required />
        </label>
        <div className="field">
          <label className="field">
            <span className="field-label">Password</span>
            <input type="password" autoComplete="new-password" value={password} onChange={(e) => setPassword(e.target.value)} required minLength={10} aria-describedby="pw-hint" />
          </label>
          <span className="field-hint" id="pw-hint">
            At least 10 characters.
          </span>
        </div>
        <label className="field">
          <span className="field-label">Password again</span>
          <input type="password" autoComplete="new-password" value={confirm} onChange={(e) => setConfirm(e.target.value)} required />
        </label>
        <ErrorAlert error={error} />
        <button type="submit" className="btn primary" disabled={busy}>
          {busy ? 'Creating…' : 'Create administrator'}
        </button>
      </form>
    </AuthCard>
  );
}
