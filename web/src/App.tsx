import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { api, ApiError, errorMessage, setCsrfToken } from './api/client';
import type { Me, SetupState } from './api/types';
import { Link, navigate, useLocation } from './lib/router';
import { isRoute, ROUTES, type RoutePath } from './lib/routes';
import { ReplicaBadge } from './components/Replicas';
import { Login, Logo, Setup } from './pages/Auth';
import Logs from './pages/Logs';
import Overview from './pages/Overview';
import Plan from './pages/Plan';
import Previews from './pages/Previews';
import Revisions from './pages/Revisions';
import Settings from './pages/Settings';
import { SessionContext, type Session } from './state/session';
import { useTheme, type ThemeChoice } from './state/theme';
import { ResourcesProvider } from './state/useResources';
import { useMenuRef } from './lib/menu';

type Boot = { phase: 'loading' } | { phase: 'setup' } | { phase: 'login' } | { phase: 'ready'; me: Me } | { phase: 'down'; error: string };

// A hint, not a secret: whether this browser signed in before. Without it the app
// shows the sign-in page at once instead of asking /me and getting a 401.
const SIGNED_IN_HINT = 'proxmops.signedIn';
function hint(on?: boolean): boolean {
  try {
    if (on === true) localStorage.setItem(SIGNED_IN_HINT, '1');
    if (on === false) localStorage.removeItem(SIGNED_IN_HINT);
    return localStorage.getItem(SIGNED_IN_HINT) === '1';
  } catch {
    return true;
  }
}

function UserMenu({ me, onLogout, theme, setTheme }: { me: Me; onLogout: () => void; theme: ThemeChoice; setTheme: (c: ThemeChoice) => void }) {
  const ref = useMenuRef();
  return (
    <details
      className="menu user-menu"
      ref={ref}
      onKeyDown={(e) => {
        if (e.key === 'Escape' && ref.current?.open) {
          ref.current.open = false;
          ref.current.querySelector('summary')?.focus();
        }
      }}
    >
      <summary title={`Account: ${me.username}`}>
        <span className="avatar" aria-hidden="true">
          {me.username.slice(0, 1).toUpperCase()}
        </span>
        <span className="user-name">{me.username}</span>
      </summary>
      <div className="menu-pop right">
        <div className="menu-head">
          <strong>{me.username}</strong>
          <div className="muted small">{me.role === 'admin' ? 'administrator' : 'viewer (read only)'}</div>
        </div>
        <div className="menu-section" role="radiogroup" aria-label="Theme">
          <div className="muted small">Theme</div>
          <div className="seg">
            {(['system', 'light', 'dark'] as ThemeChoice[]).map((c) => (
              <button type="button" key={c} role="radio" aria-checked={theme === c} onClick={() => setTheme(c)}>
                {c}
              </button>
            ))}
          </div>
        </div>
        <Link href="/settings" className="btn block" onClick={() => ref.current && (ref.current.open = false)}>
          {me.role === 'admin' ? 'Settings and password' : 'Change password'}
        </Link>
        <button type="button" className="btn block" onClick={onLogout}>
          Sign out
        </button>
      </div>
    </details>
  );
}

function ThemeToggle({ resolved, setTheme }: { resolved: 'light' | 'dark'; setTheme: (c: ThemeChoice) => void }) {
  const next = resolved === 'dark' ? 'light' : 'dark';
  return (
    <button type="button" className="btn icon" onClick={() => setTheme(next)} aria-label={`Switch to the ${next} theme`} title={`Switch to the ${next} theme`}>
      {resolved === 'dark' ? '☀' : '☾'}
    </button>
  );
}

function Shell({ session, theme }: { session: Session; theme: ReturnType<typeof useTheme> }) {
  const loc = useLocation();
  // On a phone the pages collapse into a menu, closed again by each navigation.
  const [navOpen, setNavOpen] = useState(false);
  useEffect(() => setNavOpen(false), [loc.pathname, loc.search]);
  const pages: Record<RoutePath, () => ReactNode> = {
    '/': () => <Overview theme={theme.resolved} />,
    '/plan': () => <Plan />,
    '/revisions': () => <Revisions />,
    '/previews': () => <Previews />,
    '/logs': () => <Logs />,
    '/settings': () => <Settings />,
  };
  const page = isRoute(loc.pathname) ? (
    pages[loc.pathname]()
  ) : (
    <div className="page">
      <h1>Not found</h1>
      <p>
        There is no page at <code>{loc.pathname}</code>. <Link href="/">Go to the overview</Link>.
      </p>
    </div>
  );
  useEffect(() => {
    const label = ROUTES.find((p) => p.path === loc.pathname)?.label ?? 'proxmops';
    document.title = `${label} · proxmops`;
  }, [loc.pathname]);
  return (
    <SessionContext.Provider value={session}>
      <ResourcesProvider>
        <a href="#main" className="skip">
          Skip to content
        </a>
        <header className="topbar">
          <Link href="/" className="brand">
            <Logo /> proxmops
          </Link>
          <button
            type="button"
            className="btn nav-toggle"
            aria-expanded={navOpen}
            aria-controls="pages-nav"
            onClick={() => setNavOpen((o) => !o)}
          >
            Menu
          </button>
          <nav aria-label="Pages" id="pages-nav" className={navOpen ? 'open' : undefined}>
            {ROUTES.filter((p) => !('admin' in p) || session.isAdmin).map((p) => (
              <Link key={p.path} href={p.path} aria-current={loc.pathname === p.path ? 'page' : undefined}>
                {p.label}
              </Link>
            ))}
          </nav>
          <span className="spacer" />
          <ReplicaBadge />
          <ThemeToggle resolved={theme.resolved} setTheme={theme.setChoice} />
          <UserMenu me={session.me} onLogout={session.logout} theme={theme.choice} setTheme={theme.setChoice} />
        </header>
        <main id="main" className="main">
          {page}
        </main>
      </ResourcesProvider>
    </SessionContext.Provider>
  );
}

export default function App() {
  const theme = useTheme();
  const [boot, setBoot] = useState<Boot>({ phase: 'loading' });

  const start = useCallback(async () => {
    try {
      const setup = await api.get<SetupState>('/api/v1/setup');
      if (setup.needed) {
        setBoot({ phase: 'setup' });
        return;
      }
      if (!hint()) {
        setBoot({ phase: 'login' });
        return;
      }
      const me = await api.get<Me>('/api/v1/me');
      setCsrfToken(me.csrfToken);
      setBoot({ phase: 'ready', me });
    } catch (err) {
      if (err instanceof ApiError && err.status === 401) {
        hint(false);
        setBoot({ phase: 'login' });
      } else setBoot({ phase: 'down', error: errorMessage(err) });
    }
  }, []);

  useEffect(() => {
    start();
  }, [start]);

  const signedIn = useCallback(() => {
    hint(true);
    start();
  }, [start]);

  const logout = useCallback(async () => {
    try {
      await api.post('/api/v1/logout');
    } catch {
      /* the session is dropped on this side either way */
    }
    hint(false);
    setCsrfToken('');
    navigate('/', { replace: true });
    setBoot({ phase: 'login' });
  }, []);

  switch (boot.phase) {
    case 'loading':
      return <div className="boot muted">Loading…</div>;
    case 'down':
      return (
        <main className="auth">
          <div className="auth-card">
            <h1>Cannot reach proxmops</h1>
            <p className="alert error">{boot.error}</p>
            <button type="button" className="btn primary" onClick={start}>
              Try again
            </button>
          </div>
        </main>
      );
    case 'setup':
      return <Setup onDone={signedIn} />;
    case 'login':
      return <Login onDone={signedIn} onSSO={() => hint(true)} />;
    case 'ready':
      return <Shell theme={theme} session={{ me: boot.me, isAdmin: boot.me.role === 'admin', logout }} />;
  }
}
