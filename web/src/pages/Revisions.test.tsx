import { act, fireEvent, screen, within } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import type { RevisionList, RevisionResult } from '../api/types';
import { mockFetch, renderWith } from '../test/helpers';
import Revisions, { matchesCommit, resultText } from './Revisions';
import { partial } from '../test/partial';

const HEAD = 'b'.repeat(40);
const OLD = 'a1b2c3d4e5f6'.padEnd(40, '0');

function listing(pinned: boolean): RevisionList {
  return {
    branch: 'main',
    pinned: pinned ? { revision: OLD, message: 'two cores', by: 'alice', at: '2026-12-01T00:00:00Z' } : null,
    revisions: [
      { hash: HEAD, time: '2026-12-01T10:00:00Z', author: 'Alice', message: 'three cores', current: !pinned, pinned: false,
        result: { firstPass: '2026-12-01T10:00:01Z', lastPass: '2026-12-01T10:05:00Z', counts: { Synced: 3, Failed: 1 }, events: { applied: 2, failed: 1 } } },
      { hash: OLD, time: '2026-11-30T10:00:00Z', author: 'Bob', message: 'two cores', current: pinned, pinned, result: null },
    ],
  };
}

test('the result of a revision is said in words', () => {
  expect(resultText(null)).toBe('never applied');
  expect(resultText(partial<RevisionResult>({ firstPass: '', lastPass: '', events: { applied: 2, failed: 1 } }))).toBe('2 applied, 1 failed');
  expect(resultText(partial<RevisionResult>({ firstPass: '', lastPass: '', events: {} }))).toBe('no changes recorded');
});

test('an admin syncs to an older revision after confirming, then sees the pin and unpins', async () => {
  let pinned = false;
  const calls = mockFetch(({ url, method }) => {
    if (url === '/api/v1/revisions') return { body: listing(pinned) };
    if (url === '/api/v1/revisions/pin' && method === 'POST') {
      pinned = true;
      return { status: 202, body: { status: 'pinned to a1b2c3d4e5f6: syncing to it' } };
    }
    if (url === '/api/v1/revisions/pin' && method === 'DELETE') {
      pinned = false;
      return { status: 202, body: { status: 'unpinned' } };
    }
    return undefined;
  });
  renderWith(<Revisions />, { role: 'admin' });
  const row = (await screen.findByText('two cores')).closest('li')!;
  expect(within(row).getByText(/never applied/)).toBeTruthy();
  expect(screen.getByText(/2 applied, 1 failed/)).toBeTruthy();
  expect(screen.getByText('applied now')).toBeTruthy();
  fireEvent.click(within(row).getByRole('button', { name: 'Sync to this revision a1b2c3d4' }));
  // Nothing is sent before the confirmation.
  expect(calls.filter((c) => c.method === 'POST')).toHaveLength(0);
  fireEvent.click(within(row).getByRole('button', { name: 'Yes, sync to a1b2c3d4' }));
  await screen.findByText(/pinned to a1b2c3d4e5f6/);
  expect(calls.find((c) => c.method === 'POST')?.body).toEqual({ revision: OLD });
  await screen.findByText('Pinned to');
  expect(screen.getByText('pinned')).toBeTruthy();
  fireEvent.click(screen.getByRole('button', { name: 'Unpin' }));
  await screen.findByText(/following the branch head again/);
  expect(calls.some((c) => c.method === 'DELETE' && c.url === '/api/v1/revisions/pin')).toBe(true);
});

test('a viewer sees the revisions and the pin but no sync or unpin button', async () => {
  mockFetch(({ url }) => (url === '/api/v1/revisions' ? { body: listing(true) } : undefined));
  renderWith(<Revisions />, { role: 'viewer' });
  await screen.findByText('three cores');
  expect(screen.getByText('Pinned to')).toBeTruthy();
  expect(screen.queryByRole('button', { name: /Sync to/ })).toBeNull();
  expect(screen.queryByRole('button', { name: 'Unpin' })).toBeNull();
});

test('a failed pin is shown', async () => {
  mockFetch(({ url, method }) => {
    if (url === '/api/v1/revisions') return { body: listing(false) };
    if (method === 'POST') return { status: 400, body: { error: 'the manifests at a1b2c3d4e5f6 are invalid' } };
    return undefined;
  });
  renderWith(<Revisions />, { role: 'admin' });
  const row = (await screen.findByText('two cores')).closest('li')!;
  fireEvent.click(within(row).getByRole('button', { name: /Sync to this revision/ }));
  fireEvent.click(within(row).getByRole('button', { name: /Yes, sync to/ }));
  expect((await screen.findByRole('alert')).textContent).toContain('are invalid');
});

test('a link to a commit marks its row; one not in the list says so', async () => {
  mockFetch(({ url }) => (url === '/api/v1/revisions' ? { body: listing(false) } : undefined));
  window.history.replaceState(null, '', `/revisions?commit=${OLD}`);
  const { unmount } = renderWith(<Revisions />, { role: 'viewer' });
  const row = (await screen.findByText('two cores')).closest('li')!;
  expect(row.getAttribute('aria-current')).toBe('true');
  expect(row.className).toContain('linked');
  expect(screen.getByText('three cores').closest('li')!.getAttribute('aria-current')).toBeNull();
  unmount();

  window.history.replaceState(null, '', '/revisions?commit=0123456789abcdef');
  renderWith(<Revisions />, { role: 'viewer' });
  expect((await screen.findByRole('status')).textContent).toMatch(/^Commit 01234567 is not among the 2 latest commits/);
  expect(document.querySelector('[aria-current="true"]')).toBeNull();
  window.history.replaceState(null, '', '/');
});

test('an abbreviated commit matches; a too short one does not', () => {
  expect(matchesCommit(OLD, 'a1b2c3d')).toBe(true);
  expect(matchesCommit(OLD, 'A1B2C3D4')).toBe(true);
  expect(matchesCommit(OLD, 'a1b2')).toBe(false);
  expect(matchesCommit(HEAD, 'a1b2c3d')).toBe(false);
});

test('what happened at a commit is listed on demand, each entry linking to its resource; a linked commit shows it at once', async () => {
  const calls = mockFetch(({ url }) => {
    if (url === '/api/v1/revisions') return { body: listing(false) };
    if (url === `/api/v1/revisions/${HEAD}/history`)
      return {
        body: {
          commit: HEAD,
          entries: [
            { id: 9, kind: 'Container', name: 'dns-01', event: 'failed', commit: HEAD, time: '2026-12-01T10:01:00Z', message: 'update failed: locked' },
            {
              id: 8,
              kind: 'VirtualMachine',
              name: 'app-01',
              event: 'applied',
              commit: HEAD,
              time: '2026-12-01T10:00:30Z',
              message: 'update done in 2s: cores 2 -> 3',
              actor: { kind: 'token', name: 'ci-deploy' },
            },
            // Of a clusters list: the link opens lab-2's web, not another cluster's.
            { id: 7, cluster: 'lab-2', kind: 'VirtualMachine', name: 'web', event: 'applied', commit: HEAD, time: '2026-12-01T10:00:20Z' },
          ],
        },
      };
    return undefined;
  });
  const { unmount } = renderWith(<Revisions />, { role: 'viewer' });
  const row = (await screen.findByText('three cores')).closest('li')!;
  // The never-applied commit has nothing to show.
  expect(within(screen.getByText('two cores').closest('li')!).queryByRole('button', { name: /what happened/ })).toBeNull();
  const toggle = within(row).getByRole('button', { name: 'Show what happened at bbbbbbbb' });
  expect(toggle.getAttribute('aria-expanded')).toBe('false');
  expect(calls.some((c) => c.url.endsWith('/history'))).toBe(false);
  fireEvent.click(toggle);
  const events = await within(row).findByRole('list', { name: 'Events at bbbbbbbb' });
  const links = within(events).getAllByRole('link');
  expect(links.map((l) => [l.textContent, l.getAttribute('href')])).toEqual([
    ['Container/dns-01', '/?r=Container%2Fdns-01'],
    ['VirtualMachine/app-01', '/?r=VirtualMachine%2Fapp-01'],
    ['lab-2: VirtualMachine/web', '/?r=lab-2%3AVirtualMachine%2Fweb'],
  ]);
  expect(events.textContent).toContain('update failed: locked');
  expect(events.textContent).toContain('by API token ci-deploy');
  expect(toggle.getAttribute('aria-expanded')).toBe('true');
  unmount();

  window.history.replaceState(null, '', `/revisions?commit=${HEAD}`);
  renderWith(<Revisions />, { role: 'viewer' });
  expect(await screen.findByRole('list', { name: 'Events at bbbbbbbb' })).toBeTruthy();
  window.history.replaceState(null, '', '/');
});

test('the commit applied now offers no sync to itself, and says why', async () => {
  mockFetch(({ url }) => (url === '/api/v1/revisions' ? { body: listing(false) } : undefined));
  renderWith(<Revisions />, { role: 'admin' });
  const head = (await screen.findByText('three cores')).closest('li')!;
  expect(within(head).queryByRole('button', { name: /Sync to/ })).toBeNull();
  expect(within(head).getByText('Applied now: syncing to it would change nothing.')).toBeTruthy();
  const old = screen.getByText('two cores').closest('li')!;
  expect(within(old).getByRole('button', { name: 'Sync to this revision a1b2c3d4' })).toBeTruthy();
});

test('a head that fails to load lists its errors, one item each, and cannot be synced to', async () => {
  const l = listing(false);
  const errors = ['vms/a.yaml:4:8: spec.coers: unknown field `coers`', 'vms/b.yaml:9:11: spec.memory: 12 is below the minimum 16'];
  const revisions = l.revisions ?? [];
  const broken = { ...revisions[0], hash: 'c'.repeat(40), message: 'broken', current: false, result: null, loadErrors: errors };
  mockFetch(({ url }) => (url === '/api/v1/revisions' ? { body: { ...l, revisions: [broken, ...revisions] } } : undefined));
  renderWith(<Revisions />, { role: 'admin' });
  const row = (await screen.findByText('broken')).closest('li')!;
  const alert = within(row).getByRole('alert', { name: 'cccccccc failed to load' });
  expect([...alert.querySelectorAll('li')].map((li) => li.textContent)).toEqual(errors);
  expect(within(row).queryByRole('button', { name: /Sync to/ })).toBeNull();
});

test('the pin’s notice goes away by itself; the pin banner stays', async () => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  let pinned = false;
  mockFetch(({ url, method }) => {
    if (url === '/api/v1/revisions') return { body: listing(pinned) };
    if (method === 'POST') {
      pinned = true;
      return { status: 202, body: { status: 'pinned to a1b2c3d4e5f6: syncing to it' } };
    }
    return undefined;
  });
  renderWith(<Revisions />, { role: 'admin' });
  const row = (await screen.findByText('two cores')).closest('li')!;
  fireEvent.click(within(row).getByRole('button', { name: /Sync to this revision/ }));
  fireEvent.click(within(row).getByRole('button', { name: /Yes, sync to/ }));
  await screen.findByText('pinned to a1b2c3d4e5f6: syncing to it');
  await screen.findByText('Pinned to');
  await act(async () => {
    vi.advanceTimersByTime(7000);
  });
  expect(screen.queryByText('pinned to a1b2c3d4e5f6: syncing to it')).toBeNull();
  expect(screen.getByText('Pinned to')).toBeTruthy();
});
