import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import { setCsrfToken } from '../api/client';
import type { AdoptResult, ResourceDetail } from '../api/types';
import { mockFetch, renderWith } from '../test/helpers';
import { removedTags } from './Adopt';
import Drawer from './Drawer';
import { partial } from '../test/partial';

const conflict: ResourceDetail = partial({
  kind: 'VirtualMachine',
  name: 'app-02',
  node: 'pve1',
  vmid: 130,
  status: 'Conflict',
  health: 'Unknown',
  action: 'none',
  reason: 'VMID 130 is held by a guest proxmops did not make',
  owned: false,
  desired: { apiVersion: 'proxmops.dev/v1', kind: 'VirtualMachine', metadata: { name: 'app-02' }, spec: { cores: 2 } },
  observed: { config: { cores: 1, tags: 'old;web' }, status: 'running' },
  history: [],
});

const plan = (dryRun: boolean): AdoptResult => ({
  kind: 'VirtualMachine',
  name: 'app-02',
  node: 'pve1',
  vmid: 130,
  revision: '3f2c1e0a9b8c7d6e',
  dryRun,
  adopted: !dryRun,
  plan: partial({
    kind: 'VirtualMachine',
    name: 'app-02',
    action: 'update',
    reason:
      'adopting a guest proxmops did not make: adds the ownership tag managed-by-proxmops and adopted-by-proxmops and records its disk sizes (scsi0=32G) in its description\'s proxmops-adopted: line: they stay accepted, growth beyond them is drift; cores, tags differ from the manifest; disk scsi0 is 32G on the cluster but 20G in the manifest: never shrunk (32G at adoption, accepted)',
    changes: [
      { field: 'cores', from: '1', to: '2' },
      { field: 'tags', from: 'old;web', to: 'adopted-by-proxmops;managed-by-proxmops;web' },
    ],
  }),
  message: dryRun ? 'adopting tags VMID 130' : 'adopted: VMID 130 on pve1 now carries managed-by-proxmops; the other changes listed wait for a sync',
});

function renderDrawer(role: 'admin' | 'viewer' = 'admin', onClose = () => {}) {
  renderWith(<Drawer resourceKey="VirtualMachine/app-02" onClose={onClose} />, { role });
}

test('an admin sees the plan of the adoption, the tag removal named, before adopting', async () => {
  setCsrfToken('csrf-1');
  const calls = mockFetch(({ url, method, body }) => {
    if (url.endsWith('/adopt') && method === 'POST') return { body: plan(JSON.parse(String(body)).dryRun === true) };
    if (url.endsWith('/resources/VirtualMachine/app-02')) return { body: conflict };
    return undefined;
  });
  renderDrawer();
  fireEvent.click(await screen.findByRole('button', { name: 'Adopt…' }));
  const dialog = await screen.findByRole('alertdialog', { name: 'Adopt VMID 130 on pve1 as app-02?' });
  expect(calls.filter((c) => c.url.endsWith('/adopt')).map((c) => c.body)).toEqual([{ dryRun: true }]);
  expect(within(dialog).getByText('old')).toBeTruthy();
  expect(dialog.textContent).toContain('removes the tag old from the guest');
  expect(dialog.textContent).toContain('a disk larger than declared is reported, never shrunk');
  expect(dialog.textContent).toContain('disk scsi0 is 32G on the cluster but 20G in the manifest: never shrunk');
  const rows = within(dialog).getAllByRole('row').slice(1).map((tr) => [...tr.children].map((c) => c.textContent));
  expect(rows).toEqual([
    ['cores', '1', '2', 'at the next sync'],
    ['tags', 'old;web', 'adopted-by-proxmops;managed-by-proxmops;web', 'ownership tag now, the rest at the next sync'],
  ]);
  fireEvent.click(within(dialog).getByRole('button', { name: 'Adopt' }));
  await screen.findByText(/^Adopted\. adopted: VMID 130 on pve1/);
  expect(screen.queryByRole('alertdialog')).toBeNull();
  const posts = calls.filter((c) => c.url === '/api/v1/resources/VirtualMachine/app-02/adopt');
  expect(posts.map((c) => [c.body, c.headers['X-CSRF-Token']])).toEqual([
    [{ dryRun: true }, 'csrf-1'],
    [{}, 'csrf-1'],
  ]);
});

test('a refused adoption shows the daemon’s reason and adopts nothing', async () => {
  const calls = mockFetch(({ url, method }) => {
    if (url.endsWith('/adopt') && method === 'POST')
      return { status: 409, body: { error: 'cannot adopt VMID 130 (a VM "app-02" on pve1): it is locked (backup); left untouched' } };
    if (url.endsWith('/resources/VirtualMachine/app-02')) return { body: conflict };
    return undefined;
  });
  renderDrawer();
  fireEvent.click(await screen.findByRole('button', { name: 'Adopt…' }));
  expect((await screen.findByRole('alert')).textContent).toContain('it is locked (backup)');
  expect(screen.queryByRole('alertdialog')).toBeNull();
  expect(calls.filter((c) => c.url.endsWith('/adopt')).length).toBe(1);
});

test('cancel adopts nothing', async () => {
  const calls = mockFetch(({ url, method }) => {
    if (url.endsWith('/adopt') && method === 'POST') return { body: plan(true) };
    if (url.endsWith('/resources/VirtualMachine/app-02')) return { body: conflict };
    return undefined;
  });
  renderDrawer();
  fireEvent.click(await screen.findByRole('button', { name: 'Adopt…' }));
  fireEvent.click(within(await screen.findByRole('alertdialog')).getByRole('button', { name: 'Cancel' }));
  await waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
  expect(calls.filter((c) => c.url.endsWith('/adopt')).length).toBe(1);
});

test('Escape cancels the confirmation only: the drawer stays open and the focus is back on Adopt…', async () => {
  mockFetch(({ url, method }) => {
    if (url.endsWith('/adopt') && method === 'POST') return { body: plan(true) };
    if (url.endsWith('/resources/VirtualMachine/app-02')) return { body: conflict };
    return undefined;
  });
  const onClose = vi.fn();
  renderDrawer('admin', onClose);
  const opener = await screen.findByRole('button', { name: 'Adopt…' });
  opener.focus();
  fireEvent.click(opener);
  const dialog = await screen.findByRole('alertdialog');
  expect(document.activeElement).toBe(within(dialog).getByRole('button', { name: 'Cancel' }));
  fireEvent.keyDown(window, { key: 'Escape' });
  await waitFor(() => expect(screen.queryByRole('alertdialog')).toBeNull());
  expect(onClose).not.toHaveBeenCalled();
  expect(document.activeElement).toBe(opener);
});

test('only admins, and only on a Conflict proxmops does not own, see Adopt', async () => {
  mockFetch(({ url }) => (url.endsWith('/resources/VirtualMachine/app-02') ? { body: conflict } : undefined));
  renderDrawer('viewer');
  await screen.findByText('VMID 130 is held by a guest proxmops did not make');
  expect(screen.queryByRole('button', { name: 'Adopt…' })).toBeNull();
});

test('an owned, synced guest has no Adopt', async () => {
  mockFetch(({ url }) => (url.endsWith('/resources/VirtualMachine/app-02') ? { body: { ...conflict, status: 'Synced', owned: true, reason: 'in sync' } } : undefined));
  renderDrawer();
  await screen.findByText('in sync');
  expect(screen.queryByRole('button', { name: 'Adopt…' })).toBeNull();
});

test('the history names who adopted, at which commit', async () => {
  mockFetch(({ url }) =>
    url.endsWith('/resources/VirtualMachine/app-02')
      ? {
          body: {
            ...conflict,
            status: 'Synced',
            owned: true,
            history: [{ id: 3, event: 'adopted', commit: '3f2c1e0a9b8c7d6e', actor: { kind: 'user', name: 'alice' }, time: '2026-12-01T10:00:00Z', message: 'adopted VMID 130 on pve1' }],
          },
        }
      : undefined,
  );
  renderDrawer();
  const item = await screen.findByText('adopted');
  const li = item.closest('li')!;
  expect(li.textContent).toContain('by alice');
  expect(li.textContent).toContain('3f2c1e0');
  expect(li.className).toBe('tl-adopted');
});

test('removedTags lists the guest tags the manifest does not keep', () => {
  expect(removedTags([{ field: 'tags', from: 'old;web', to: 'managed-by-proxmops;web' }])).toEqual(['old']);
  expect(removedTags([{ field: 'tags', from: '', to: 'managed-by-proxmops' }])).toEqual([]);
  expect(removedTags([{ field: 'cores', from: '1', to: '2' }])).toEqual([]);
});
