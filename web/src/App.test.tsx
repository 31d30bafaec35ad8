import { fireEvent, render, screen, waitFor } from '@testing-library/react';
import { beforeEach, expect, test, vi } from 'vitest';
import App from './App';
import { mockFetch } from './test/helpers';

beforeEach(() => {
  localStorage.clear();
  window.history.replaceState(null, '', '/');
});
test('first run shows the setup page, which creates the admin and signs in', async () => {
  let setupDone = false;
  const calls = mockFetch(({ url, method }) => {
    if (url === '/api/v1/setup' && method === 'GET') return { body: { needed: !setupDone } };
    if (url === '/api/v1/setup') {
      setupDone = true;
      return { status: 201, body: {} };
    }
    if (url === '/api/v1/login') return { body: {} };
    if (url === '/api/v1/me') return { body: { username: 'root', role: 'admin', csrfToken: 't' } };
    if (url === '/api/v1/resources') return { body: { revision: 'abc', resources: [] } };
    return undefined;
  });
  render(<App />);
  await screen.findByRole('heading', { name: /create the first administrator/i });
  fireEvent.change(screen.getByLabelText('Setup token'), { target: { value: ' tok ' } });
  fireEvent.change(screen.getByLabelText("Administrator's username"), { target: { value: 'root' } });
  fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'long enough' } });
  fireEvent.change(screen.getByLabelText('Password again'), { target: { value: 'long enough' } });
  fireEvent.click(screen.getByRole('button', { name: 'Create administrator' }));
  await screen.findByRole('navigation', { name: 'Pages' });
  expect(calls.find((c) => c.url === '/api/v1/setup' && c.method === 'POST')?.body).toEqual({ token: 'tok', username: 'root', password: 'long enough' });
});

test('setup refuses two different passwords without asking the daemon', async () => {
  const calls = mockFetch(({ url }) => (url === '/api/v1/setup' ? { body: { needed: true } } : undefined));
  render(<App />);
  await screen.findByLabelText('Setup token');
  fireEvent.change(screen.getByLabelText('Setup token'), { target: { value: 'tok' } });
  fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'long enough' } });
  fireEvent.change(screen.getByLabelText('Password again'), { target: { value: 'other one' } });
  fireEvent.click(screen.getByRole('button', { name: 'Create administrator' }));
  await screen.findByText('The two passwords differ.');
  expect(calls.filter((c) => c.method === 'POST')).toEqual([]);
});

test('a browser that never signed in goes straight to the sign-in page', async () => {
  const calls = mockFetch(({ url }) => (url === '/api/v1/setup' ? { body: { needed: false } } : undefined));
  render(<App />);
  await screen.findByRole('heading', { name: 'Sign in' });
  await waitFor(() => expect(calls.map((c) => c.url)).toEqual(['/api/v1/setup', '/api/v1/auth']));
});

test('an expired session falls back to sign-in; a wrong password shows the error', async () => {
  localStorage.setItem('proxmops.signedIn', '1');
  mockFetch(({ url }) => {
    if (url === '/api/v1/setup') return { body: { needed: false } };
    if (url === '/api/v1/me') return { status: 401, body: { error: 'not logged in' } };
    if (url === '/api/v1/login') return { status: 401, body: { error: 'wrong username or password' } };
    return undefined;
  });
  render(<App />);
  await screen.findByRole('heading', { name: 'Sign in' });
  fireEvent.change(screen.getByLabelText('Username'), { target: { value: 'a' } });
  fireEvent.change(screen.getByLabelText('Password'), { target: { value: 'b' } });
  fireEvent.click(screen.getByRole('button', { name: 'Sign in' }));
  await screen.findByText('wrong username or password');
});

test('viewers get no Settings link; sign out returns to sign-in', async () => {
  localStorage.setItem('proxmops.signedIn', '1');
  const calls = mockFetch(({ url }) => {
    if (url === '/api/v1/setup') return { body: { needed: false } };
    if (url === '/api/v1/me') return { body: { username: 'vera', role: 'viewer', csrfToken: 'c' } };
    if (url === '/api/v1/resources') return { body: { revision: 'abc', resources: [] } };
    if (url === '/api/v1/logout') return { body: {} };
    return undefined;
  });
  render(<App />);
  await screen.findByRole('navigation', { name: 'Pages' });
  expect(screen.queryByRole('link', { name: 'Settings' })).toBeNull();
  expect(screen.queryByRole('button', { name: 'Sync all' })).toBeNull();
  fireEvent.click(screen.getByRole('button', { name: 'Sign out' }));
  await screen.findByRole('heading', { name: 'Sign in' });
  await waitFor(() => expect(calls.find((c) => c.url === '/api/v1/logout')?.headers['X-CSRF-Token']).toBe('c'));
});

test('a daemon that cannot be reached is said plainly, with a retry', async () => {
  vi.stubGlobal('fetch', vi.fn(async () => Promise.reject(new TypeError('Failed to fetch'))));
  render(<App />);
  await screen.findByText(/cannot be reached/);
  expect(screen.getByRole('button', { name: 'Try again' })).toBeTruthy();
});

test('the page menu is a button that says whether it is open and closes on navigation; the user menu is named by its text', async () => {
  localStorage.setItem('proxmops.signedIn', '1');
  mockFetch(({ url }) => {
    if (url === '/api/v1/setup') return { body: { needed: false } };
    if (url === '/api/v1/me') return { body: { username: 'vera', role: 'viewer', csrfToken: 'c' } };
    if (url === '/api/v1/resources') return { body: { revision: 'abc', resources: [] } };
    return undefined;
  });
  render(<App />);
  const nav = await screen.findByRole('navigation', { name: 'Pages' });
  const menu = screen.getByRole('button', { name: 'Menu' });
  expect(menu.getAttribute('aria-expanded')).toBe('false');
  expect(menu.getAttribute('aria-controls')).toBe(nav.id);
  fireEvent.click(menu);
  expect(menu.getAttribute('aria-expanded')).toBe('true');
  expect(nav.className).toContain('open');
  fireEvent.click(screen.getByRole('link', { name: 'Logs' }));
  await waitFor(() => expect(menu.getAttribute('aria-expanded')).toBe('false'));
  expect(nav.className).not.toContain('open');
  expect(document.querySelector('.user-menu summary')?.textContent).toBe('Vvera');
  expect(document.querySelector('.user-menu summary')?.hasAttribute('aria-label')).toBe(false);
});
