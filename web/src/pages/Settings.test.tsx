import { act, fireEvent, screen } from '@testing-library/react';
import { beforeEach, expect, test, vi } from 'vitest';
import type { Settings as SettingsDoc } from '../api/types';
import { TRANSIENT_MS } from '../lib/transient';
import { expectStays, expectTransient, fakeTimeouts, mockFetch, renderWith, settle } from '../test/helpers';
import Settings from './Settings';
import { partial } from '../test/partial';

// The Settings page as the daemon answers it: GET /api/v1/settings, users and tokens;
// `put` answers the save.
const doc = (): SettingsDoc => (partial({
  cluster: {
    endpoint: 'https://127.0.0.1:8006/api2/json',
    tokenId: 'root@pam!proxmops',
    tokenSecret: 'set',
    insecureSkipVerify: false,
    fingerprint: '',
    caFile: '',
  },
  source: partial({ repoURL: '/srv/gitops', path: '', revision: 'main', username: '', token: '', sshKey: '', submodules: false }),
  reconcile: partial({ interval: '60s', autoSync: true, prune: false, concurrency: 4, dryRun: false }),
}));

function serve(put: (body: unknown) => { status?: number; body?: unknown }) {
  return mockFetch(({ url, method, body }) => {
    if (url === '/api/v1/settings' && method === 'GET') return { body: doc() };
    if (url === '/api/v1/settings' && method === 'PUT') return put(typeof body === 'string' ? JSON.parse(body) : body);
    if (url === '/api/v1/users') return { body: { users: [{ username: 'alice', role: 'admin', createdAt: '2026-11-30T09:00:00Z' }] } };
    if (url === '/api/v1/tokens') return { body: { tokens: [] } };
    return undefined;
  });
}

const saved = () => screen.queryByText(/^Saved\./);
const alert = () => screen.queryByRole('alert');

beforeEach(() => {
  fakeTimeouts();
});
test('"Saved." goes by itself TRANSIENT_MS after the save, and the save sends the form', async () => {
  const calls = serve(() => ({ status: 200, body: doc() }));
  renderWith(<Settings />);
  const interval = await settle('the settings form', () => screen.queryByLabelText('Interval') as HTMLInputElement | null);
  fireEvent.change(interval, { target: { value: '5m' } });
  fireEvent.click(screen.getByRole('button', { name: 'Save' }));
  const banner = await settle('the saved banner', saved);
  expect(banner.getAttribute('role')).toBe('status');
  expect(banner.textContent).toBe('Saved. The daemon uses the new settings from its next pass.');
  const put = calls.find((c) => c.method === 'PUT');
  expect((put?.body as { reconcile: { interval: string } }).reconcile.interval).toBe('5m');
  // The secret left blank is not sent: the daemon keeps it.
  expect((put?.body as { cluster: Record<string, unknown> }).cluster).not.toHaveProperty('tokenSecret');
  expectTransient('"Saved."', saved);
});

test('a refused save’s error stays until the next save replaces it', async () => {
  let answer: { status?: number; body?: unknown } = { status: 400, body: { error: 'reconcile.interval: "soon" is not a duration' } };
  serve(() => answer);
  renderWith(<Settings />);
  await settle('the settings form', () => screen.queryByLabelText('Interval'));
  fireEvent.click(screen.getByRole('button', { name: 'Save' }));
  const error = await settle('the error', alert);
  expect(error.textContent).toBe('reconcile.interval: "soon" is not a duration');
  expect(saved()).toBeNull();
  expectStays('the error', alert);

  answer = { status: 200, body: doc() };
  await settle('the Save button again', () => (screen.getByRole('button', { name: 'Save' }) as HTMLButtonElement).disabled === false);
  fireEvent.click(screen.getByRole('button', { name: 'Save' }));
  await settle('the saved banner', saved);
  expect(alert()).toBeNull();
});

test('a second save restarts the banner’s time', async () => {
  serve(() => ({ status: 200, body: doc() }));
  renderWith(<Settings />);
  await settle('the settings form', () => screen.queryByLabelText('Interval'));
  fireEvent.click(screen.getByRole('button', { name: 'Save' }));
  await settle('the saved banner', saved);
  await settle('the Save button again', () => (screen.getByRole('button', { name: 'Save' }) as HTMLButtonElement).disabled === false);
  act(() => {
    vi.advanceTimersByTime(TRANSIENT_MS / 2);
  });
  fireEvent.click(screen.getByRole('button', { name: 'Save' }));
  // The save clears the banner, and it comes back for the new save.
  await settle('the saved banner, cleared', () => saved() === null);
  await settle('the saved banner, again', saved);
  expectTransient('"Saved." of the second save', saved);
});

test('"Test connection" shows the check report: each line’s level, what was checked, and what to do', async () => {
  const report = {
    ok: false,
    checks: [
      { name: 'cluster: tls', ok: true, level: 'OK', message: 'certificate pinned: fingerprint AB:CD matches cluster.fingerprint' },
      { name: 'node pve2', ok: true, level: 'WARN', message: 'the node is offline; no manifest names it', fix: 'bring it back' },
      {
        name: 'storage local-lvm on pve1',
        ok: false,
        level: 'FAIL',
        message: 'storage local-lvm takes rootdir, not images',
        fix: 'pvesm set local-lvm --content rootdir,images',
      },
    ],
  };
  const calls = mockFetch(({ url, method }) => {
    if (url === '/api/v1/settings' && method === 'GET') return { body: doc() };
    if (url === '/api/v1/settings/test' && method === 'POST') return { body: report };
    if (url === '/api/v1/users') return { body: { users: [] } };
    if (url === '/api/v1/tokens') return { body: { tokens: [] } };
    return undefined;
  });
  renderWith(<Settings />);
  await settle('the settings form', () => screen.queryByRole('button', { name: 'Test connection' }));
  fireEvent.click(screen.getByRole('button', { name: 'Test connection' }));
  const section = await settle('the report', () => screen.queryByRole('region', { name: 'Connection test' }));
  expect(calls.some((c) => c.url === '/api/v1/settings/test' && c.method === 'POST')).toBe(true);
  expect(section.querySelector('h4')?.textContent).toBe('Some checks failed');
  const lines = [...section.querySelectorAll('li')];
  expect(lines.map((li) => li.className)).toEqual(['ok', 'warn', 'bad']);
  expect(lines.map((li) => li.querySelector('.level')?.textContent)).toEqual(['OK', 'WARN', 'FAIL']);
  expect(lines[0].textContent).toContain('cluster: tls — certificate pinned');
  expect(lines[0].querySelector('.fix')).toBeNull();
  expect(lines[1].textContent).toContain('passed with a warning');
  expect(lines[2].querySelector('.fix')?.textContent).toBe('What to do: pvesm set local-lvm --content rootdir,images');
  expect(lines[2].textContent).toContain('failed');
});
