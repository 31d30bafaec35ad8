import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import type { NotificationStatus } from '../api/types';
import { fakeTimeouts, mockFetch, settle } from '../test/helpers';
import { Notifications, POLL_MS, receiverState } from './Notifications';

const ago = (s: number) => new Date(Date.now() - s * 1000).toISOString();
const base: NotificationStatus = { name: 'ops', url: 'https://hooks.example.com/…', service: 'webhook', on: ['failed', 'degraded'], delivered: 0, failed: 0, pending: 0 };

test.each<[string, NotificationStatus, string]>([
  ['nothing sent yet', base, 'idle'],
  ['delivered, never failed', { ...base, lastDelivery: ago(10), delivered: 1 }, 'ok'],
  ['an error newer than the last delivery', { ...base, lastDelivery: ago(600), lastError: '503', lastErrorAt: ago(10) }, 'failing'],
  ['an error and no delivery at all', { ...base, lastError: 'dial tcp: refused', lastErrorAt: ago(10) }, 'failing'],
  ['a delivery after the error', { ...base, lastDelivery: ago(5), lastError: '503', lastErrorAt: ago(60) }, 'recovered'],
])('%s', (_name, st, want) => {
  expect(receiverState(st)).toBe(want);
});

test('the panel shows the last error, then the delivery that followed it', async () => {
  const answers: NotificationStatus[] = [
    { ...base, lastError: 'POST https://hooks.example.com: 503 Service Unavailable: busy', lastErrorAt: ago(3), pending: 1 },
    { ...base, lastError: 'POST https://hooks.example.com: 503 Service Unavailable: busy', lastErrorAt: ago(3), lastDelivery: ago(1), delivered: 1 },
  ];
  let n = 0;
  const calls = mockFetch(({ url }) => (url === '/api/v1/notifications' ? { body: { notifications: [answers[Math.min(n++, 1)]] } } : undefined));
  render(<Notifications />);
  const row = await screen.findByTestId('receiver-ops');
  expect(row.textContent).toContain('failing');
  expect(row.textContent).toContain('never');
  expect(row.textContent).toContain('1 pending');
  expect(screen.getByTestId('last-error-ops').textContent).toMatch(/503 Service Unavailable: busy/);

  fireEvent.click(screen.getByRole('button', { name: 'Refresh' }));
  await waitFor(() => expect(screen.getByTestId('receiver-ops').textContent).toContain('delivering again'));
  const after = screen.getByTestId('receiver-ops').textContent ?? '';
  expect(after).toContain('1 delivered');
  expect(after).toMatch(/just now|1s ago/);
  expect(screen.getByTestId('last-error-ops').textContent).toMatch(/503/);
  expect(calls.map((c) => c.url)).toEqual(['/api/v1/notifications', '/api/v1/notifications']);
});

test('no receivers says where to configure them', async () => {
  mockFetch(({ url }) => (url === '/api/v1/notifications' ? { body: { notifications: [] } } : undefined));
  render(<Notifications />);
  expect((await screen.findByRole('region', { name: 'Notifications' })).textContent).toMatch(/notifications:.*config file/);
});

test('a daemon without the route shows no panel', async () => {
  const calls = mockFetch(() => ({ status: 404, body: { error: 'no route' } }));
  const { container } = render(<Notifications />);
  await vi.waitFor(() => expect(calls.length).toBe(1));
  expect(container.textContent).toBe('');
});

test('the panel asks again on its own, after a failure too', async () => {
  fakeTimeouts();
  let answers = [{ status: 503, body: { error: 'restarting' } }, { body: { notifications: [{ ...base, lastDelivery: ago(1), delivered: 1 }] } }];
  const calls = mockFetch(({ url }) => {
    if (url !== '/api/v1/notifications') return undefined;
    const [next, ...rest] = answers;
    answers = rest.length ? rest : [next];
    return next;
  });
  const { container } = render(<Notifications />);
  // The next read is due once the first answer, a failure, is read.
  await settle('the next read timed', () => vi.getTimerCount() > 0);
  expect(container.textContent).toBe('');
  act(() => {
    vi.advanceTimersByTime(POLL_MS);
  });
  const row = await settle('the receiver listed', () => screen.queryByTestId('receiver-ops'));
  expect(row.textContent).toContain('1 delivered');
  expect(calls).toHaveLength(2);
});
