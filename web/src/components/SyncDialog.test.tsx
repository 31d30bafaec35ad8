import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import { setCsrfToken } from '../api/client';
import { mockFetch } from '../test/helpers';
import SyncDialog, { planCounts } from './SyncDialog';
import { partial } from '../test/partial';

const plan = (prune: boolean) => ({
  status: 'dry run',
  plan: {
    revision: 'abc',
    summary: { create: 1, update: 2, reboot: 0, delete: prune ? 1 : 0, conflict: 0, unknown: 0, statuses: { Synced: 9, OutOfSync: prune ? 4 : 3 } },
    actions: [
      { kind: 'VirtualMachine', name: 'app-03', action: 'create', reason: 'the VM does not exist' },
      ...(prune ? [{ kind: 'VirtualMachine', name: 'old', action: 'delete', reason: 'no longer declared' }] : []),
      { kind: 'VirtualMachine', name: 'app-01', action: 'none' },
    ],
  },
});

test('the counts of a plan in words', () => {
  expect(planCounts(partial({ create: 1, update: 2, delete: 0, failed: 1, statuses: { Synced: 9 } }))).toBe('1 to create, 2 to update, 1 failed, 9 in sync');
  expect(planCounts(partial({}))).toBe('nothing');
  // What the sync leaves out of sync is said, not folded into "in sync".
  expect(planCounts(partial({ create: 1, needsReboot: 1, statuses: { Synced: 5, OutOfSync: 3, Progressing: 1 } }))).toBe(
    '1 to create, 2 out of sync without action (1 pending a reboot), 1 in progress, 5 in sync',
  );
});

test('Sync all shows the plan’s counts first, follows the options, and syncs with them', async () => {
  setCsrfToken('csrf-1');
  const calls = mockFetch(({ body }) => {
    const b = JSON.parse(String(body));
    return b.dryRun ? { body: plan(b.prune) } : { status: 202, body: { status: 'a full pass started' } };
  });
  const onDone = vi.fn();
  const onClose = vi.fn();
  render(<SyncDialog target={null} onClose={onClose} onDone={onDone} />);
  expect(screen.getByRole('dialog', { name: 'Sync all resources' })).toBeTruthy();
  const button = screen.getByRole('button', { name: 'Sync all' }) as HTMLButtonElement;
  expect(button.disabled).toBe(true); // not before the counts are known
  expect((await screen.findByTestId('sync-counts')).textContent).toBe('1 to create, 2 to update, 9 in sync');
  expect(screen.queryByText('VirtualMachine/app-01')).toBeNull(); // unchanged ones are not listed
  fireEvent.click(screen.getByRole('checkbox', { name: /Prune/ }));
  await waitFor(() => expect(screen.getByTestId('sync-counts').textContent).toBe('1 to create, 2 to update, 1 to delete, 9 in sync'));
  expect(screen.getByText('VirtualMachine/old')).toBeTruthy();
  fireEvent.click(screen.getByRole('checkbox', { name: /Reboot to apply/ }));
  await screen.findByTestId('sync-counts');
  fireEvent.click(screen.getByRole('button', { name: 'Sync all' }));
  await waitFor(() => expect(onDone).toHaveBeenCalledWith('a full pass started'));
  expect(onClose).toHaveBeenCalled();
  const real = calls.filter((c) => !(c.body as { dryRun: boolean }).dryRun);
  expect(real).toEqual([expect.objectContaining({ url: '/api/v1/sync', method: 'POST', body: { prune: true, reboot: true, dryRun: false } })]);
  expect(real[0].headers['X-CSRF-Token']).toBe('csrf-1');
});

test('a dry run of one resource changes nothing and says what it would do', async () => {
  const calls = mockFetch(() => ({ body: plan(false) }));
  const onDone = vi.fn();
  render(<SyncDialog target={{ kind: 'VirtualMachine', name: 'app-03' }} onClose={() => {}} onDone={onDone} />);
  await screen.findByTestId('sync-counts');
  fireEvent.click(screen.getByRole('checkbox', { name: /Dry run/ }));
  fireEvent.click(screen.getByRole('button', { name: 'Done' }));
  expect(onDone).toHaveBeenCalledWith('Dry run of VirtualMachine app-03: 1 to create, 2 to update, 9 in sync. Nothing was changed.');
  expect(calls.every((c) => c.url === '/api/v1/resources/VirtualMachine/app-03/sync' && (c.body as { dryRun: boolean }).dryRun)).toBe(true);
});

test('Escape closes the dialog and only the dialog', async () => {
  mockFetch(() => ({ body: plan(false) }));
  const onClose = vi.fn();
  const below = vi.fn();
  window.addEventListener('keydown', below);
  render(<SyncDialog target={null} onClose={onClose} onDone={() => {}} />);
  await screen.findByTestId('sync-counts');
  act(() => {
    window.dispatchEvent(new KeyboardEvent('keydown', { key: 'Escape' }));
  });
  expect(onClose).toHaveBeenCalled();
  expect(below).not.toHaveBeenCalled();
  window.removeEventListener('keydown', below);
});

test('an action that cannot be carried out is listed as Failed, not as a plain create', async () => {
  mockFetch(() => ({
    body: {
      plan: {
        revision: 'abc',
        summary: { create: 0, failed: 1, statuses: { Failed: 1 } },
        actions: [{ kind: 'Iso', name: 'debian', action: 'create', status: 'Failed', reason: "storage 'nosuch' does not exist or is disabled" }],
      },
    },
  }));
  render(<SyncDialog target={null} onClose={() => {}} onDone={() => {}} />);
  expect((await screen.findByTestId('sync-counts')).textContent).toBe('1 failed');
  const item = screen.getByText('Iso/debian').closest('li')!;
  expect(item.textContent).toBe("create ✕Failed Iso/debian — storage 'nosuch' does not exist or is disabled");
});
