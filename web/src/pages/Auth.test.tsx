import { render, screen, waitFor } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import { mockFetch } from '../test/helpers';
import { Login } from './Auth';

test('the sign-in page offers single sign-on by the provider’s name when the daemon has it', async () => {
  mockFetch(({ url }) => (url === '/api/v1/auth' ? { body: { password: true, oidc: { name: 'Authentik', loginURL: '/api/v1/auth/oidc/login' } } } : undefined));
  const left = vi.fn();
  render(<Login onDone={() => {}} onSSO={left} />);
  const sso = await screen.findByRole('link', { name: 'Sign in with Authentik' });
  expect(sso.getAttribute('href')).toBe('/api/v1/auth/oidc/login');
  sso.addEventListener('click', (e) => e.preventDefault()); // happy-dom would navigate
  sso.click();
  expect(left).toHaveBeenCalledOnce();
  expect(screen.getByLabelText('Password')).toBeTruthy();
});

test('without single sign-on the sign-in page has the password form only', async () => {
  const calls = mockFetch(({ url }) => (url === '/api/v1/auth' ? { body: { password: true } } : undefined));
  render(<Login onDone={() => {}} />);
  await waitFor(() => expect(calls.map((c) => c.url)).toEqual(['/api/v1/auth']));
  await screen.findByRole('button', { name: 'Sign in' });
  expect(screen.queryByRole('link', { name: /Sign in with/ })).toBeNull();
  expect(screen.getByRole('button', { name: 'Sign in' })).toBeTruthy();
});
