import { fireEvent, render, screen, within } from '@testing-library/react';
import { beforeEach, expect, test, vi } from 'vitest';
import { mockFetch } from '../test/helpers';
import Logs from './Logs';

const FULL = '3f2c1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e';

beforeEach(() => {
  window.history.replaceState(null, '', '/logs');
  vi.stubGlobal('EventSource', undefined);
});
test('a line links its resource to its drawer and its commit to the Revisions page, short with the full hash in the tooltip', async () => {
  mockFetch(({ url }) =>
    url.startsWith('/api/v1/logs')
      ? {
          body: {
            lines: [
              { id: 1, time: '2026-11-30T10:00:00Z', level: 'INFO', msg: 'action done', attrs: { resource: 'VirtualMachine/app-01', action: 'update', commit: FULL } },
              { id: 2, time: '2026-11-30T10:00:01Z', level: 'INFO', msg: 'settings applied', attrs: { cluster: true } },
            ],
          },
        }
      : undefined,
  );
  render(<Logs />);
  const done = (await screen.findByText('action done')).closest('.log-line') as HTMLElement;
  const res = within(done).getByRole('link', { name: 'VirtualMachine/app-01' });
  expect(res.getAttribute('href')).toBe('/?r=VirtualMachine%2Fapp-01');
  const commit = within(done).getByRole('link', { name: 'commit 3f2c1e0a' });
  expect(commit.textContent).toBe('3f2c1e0a');
  expect(commit.getAttribute('title')).toBe(FULL);
  expect(commit.getAttribute('href')).toBe(`/revisions?commit=${FULL}`);
  // What is linked is not repeated as text.
  expect(done.querySelector('.log-attrs')?.textContent).toBe('action=update');

  const other = screen.getByText('settings applied').closest('.log-line') as HTMLElement;
  expect(within(other).queryAllByRole('link')).toEqual([]);

  fireEvent.click(res);
  expect(window.location.pathname + window.location.search).toBe('/?r=VirtualMachine%2Fapp-01');
});
