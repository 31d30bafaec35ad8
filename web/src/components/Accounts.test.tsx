import { fireEvent, screen, waitFor } from '@testing-library/react';
import { beforeEach, describe, expect, test } from 'vitest';
import { setCsrfToken } from '../api/client';
import { expectStays, expectTransient, fakeTimeouts, mockFetch, renderWith, settle } from '../test/helpers';
import { ChangePassword, Users } from './Accounts';

const fill = (label: string, value: string) => fireEvent.change(screen.getByLabelText(label), { target: { value } });

test('changing the password sends the current one and adopts the new session’s CSRF token', async () => {
  setCsrfToken('csrf-old');
  const calls = mockFetch(({ url, method }) =>
    method === 'POST' && url === '/api/v1/me/password' ? { body: { username: 'alice', role: 'viewer', csrfToken: 'csrf-new' } } : undefined,
  );
  renderWith(<ChangePassword />, { role: 'viewer' });
  fill('Current password', 'old password 1');
  fill('New password', 'a brand new one');
  fill('New password again', 'a brand new one');
  fireEvent.click(screen.getByRole('button', { name: 'Change password' }));
  await screen.findByText(/Password changed/);
  expect(calls[0].body).toEqual({ currentPassword: 'old password 1', newPassword: 'a brand new one' });
  expect(calls[0].headers['X-CSRF-Token']).toBe('csrf-old');
  expect((screen.getByLabelText('Current password') as HTMLInputElement).value).toBe('');
  // The next write carries the new token.
  const later = mockFetch(() => ({ status: 403, body: { error: 'the current password is wrong' } }));
  fill('Current password', 'guess wrong 1');
  fill('New password', 'another new one');
  fill('New password again', 'another new one');
  fireEvent.click(screen.getByRole('button', { name: 'Change password' }));
  expect((await screen.findByRole('alert')).textContent).toBe('the current password is wrong');
  expect(later[0].headers['X-CSRF-Token']).toBe('csrf-new');
});

test('a repeated new password that differs is caught before anything is sent', async () => {
  const calls = mockFetch(() => undefined);
  renderWith(<ChangePassword />, { role: 'viewer' });
  fill('Current password', 'old password 1');
  fill('New password', 'a brand new one');
  fill('New password again', 'a brand new on');
  const button = screen.getByRole('button', { name: 'Change password' }) as HTMLButtonElement;
  expect(button.disabled).toBe(true);
  expect(screen.getByLabelText('New password again').getAttribute('aria-invalid')).toBe('true');
  expect(calls).toEqual([]);
});

test('an admin changes another user’s role and resets their password, not their own', async () => {
  setCsrfToken('csrf-1');
  let users = [
    { username: 'alice', role: 'admin', createdAt: '2026-11-30T09:00:00Z' },
    { username: 'vera', role: 'viewer', createdAt: '2026-11-30T09:00:00Z' },
  ];
  const calls = mockFetch(({ url, method, body }) => {
    if (url === '/api/v1/users' && method === 'GET') return { body: { users } };
    if (url === '/api/v1/users/vera' && method === 'PATCH') {
      const b = JSON.parse(String(body));
      if (b.role) users = users.map((u) => (u.username === 'vera' ? { ...u, role: b.role } : u));
      return { body: users[1] };
    }
    return undefined;
  });
  renderWith(<Users />, { role: 'admin' });
  const role = (await screen.findByLabelText('Role of vera')) as HTMLSelectElement;
  // Your own role and password are not offered here (the last admin could lock itself out).
  expect(screen.queryByLabelText('Role of alice')).toBeNull();
  expect(screen.getAllByRole('button', { name: 'Reset password…' })).toHaveLength(1);

  fireEvent.change(role, { target: { value: 'admin' } });
  await screen.findByText('vera is now admin.');
  await waitFor(() => expect((screen.getByLabelText('Role of vera') as HTMLSelectElement).value).toBe('admin'));

  fireEvent.click(screen.getByRole('button', { name: 'Reset password…' }));
  fill('New password for vera', 'reset by alice');
  fireEvent.click(screen.getByRole('button', { name: 'Set' }));
  await screen.findByText(/password of vera was reset/);
  const patches = calls.filter((c) => c.method === 'PATCH');
  expect(patches.map((c) => c.body)).toEqual([{ role: 'admin' }, { password: 'reset by alice' }]);
  expect(patches.every((c) => c.headers['X-CSRF-Token'] === 'csrf-1')).toBe(true);
  expect(screen.queryByLabelText('New password for vera')).toBeNull();
});

test('a refused role change shows the server’s words', async () => {
  mockFetch(({ url, method }) => {
    if (method === 'GET') return { body: { users: [{ username: 'alice', role: 'admin', createdAt: '2026-11-30T09:00:00Z' }, { username: 'bob', role: 'admin', createdAt: '2026-11-30T09:00:00Z' }] } };
    if (url.endsWith('/bob')) return { status: 409, body: { error: 'bob is the last admin: make another admin first' } };
    return undefined;
  });
  renderWith(<Users />, { role: 'admin' });
  fireEvent.change(await screen.findByLabelText('Role of bob'), { target: { value: 'viewer' } });
  expect((await screen.findByRole('alert')).textContent).toBe('bob is the last admin: make another admin first');
});

describe('success notices go by themselves, errors stay', () => {
  beforeEach(() => {
    fakeTimeouts();
  });
  test('"Password changed." goes after TRANSIENT_MS; a refused change’s error stays', async () => {
    let refuse = true;
    mockFetch(() => (refuse ? { status: 403, body: { error: 'the current password is wrong' } } : { body: { username: 'alice', role: 'viewer', csrfToken: 'csrf-new' } }));
    renderWith(<ChangePassword />, { role: 'viewer' });
    const submit = () => {
      fill('Current password', 'old password 1');
      fill('New password', 'a brand new one');
      fill('New password again', 'a brand new one');
      fireEvent.click(screen.getByRole('button', { name: 'Change password' }));
    };
    submit();
    const error = () => screen.queryByRole('alert');
    await settle('the error', error);
    expectStays('the refused change’s error', error);
    refuse = false;
    await settle('the button again', () => !(screen.getByRole('button', { name: 'Change password' }) as HTMLButtonElement).disabled);
    submit();
    const done = () => screen.queryByText(/^Password changed/);
    await settle('the notice', done);
    expect(error()).toBeNull();
    expectTransient('"Password changed."', done);
  });

  test('the users’ notice goes after TRANSIENT_MS', async () => {
    mockFetch(({ method }) =>
      method === 'GET'
        ? { body: { users: [{ username: 'alice', role: 'admin', createdAt: '2026-11-30T09:00:00Z' }, { username: 'vera', role: 'viewer', createdAt: '2026-11-30T09:00:00Z' }] } }
        : { body: {} },
    );
    renderWith(<Users />, { role: 'admin' });
    fireEvent.change(await settle('vera’s role', () => screen.queryByLabelText('Role of vera')), { target: { value: 'admin' } });
    const notice = () => screen.queryByText('vera is now admin.');
    await settle('the notice', notice);
    expectTransient('"vera is now admin."', notice);
  });
});

test('a user signed in by single sign-on is sent to the identity provider for the password', async () => {
  const calls = mockFetch(() => undefined);
  renderWith(<ChangePassword />, { role: 'admin', via: 'oidc' });
  expect(screen.getByText(/signed in with single sign-on/)).toBeTruthy();
  expect(screen.queryByLabelText('Current password')).toBeNull();
  expect(calls).toEqual([]);
});
