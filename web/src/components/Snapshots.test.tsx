import { fireEvent, screen, waitFor, within } from '@testing-library/react';
import { beforeEach, describe, expect, test, vi } from 'vitest';
import { setCsrfToken } from '../api/client';
import type { SnapshotList } from '../api/types';
import { expectErrorStays, expectTransient, fakeTimeouts, mockFetch, renderWith, settle } from '../test/helpers';
import Snapshots from './Snapshots';

const list = (over: Partial<SnapshotList> = {}): SnapshotList => ({
  kind: 'VirtualMachine',
  name: 'app-01',
  node: 'pve1',
  vmid: 120,
  running: true,
  current: 'proxmops-20261201T231500Z',
  syncPolicy: 'auto',
  snapshots: [
    { name: 'proxmops-20261201T231500Z', time: 1796166900, vmstate: false, proxmops: true, description: 'taken by proxmops before the update of VirtualMachine/app-01 (cores)' },
    { name: 'before-upgrade', time: 1796000000, vmstate: false, proxmops: false, description: 'by hand' },
  ],
  ...over,
});

test('lists the guest’s snapshots on demand; a viewer gets no rollback', async () => {
  const calls = mockFetch(({ url }) => (url.endsWith('/snapshots') ? { body: list() } : undefined));
  renderWith(<Snapshots kind="VirtualMachine" name="app-01" isAdmin={false} />, { role: 'viewer' });
  expect(calls).toHaveLength(0);
  fireEvent.click(screen.getByRole('button', { name: 'Show snapshots' }));
  const row = (await screen.findByText('taken by proxmops before the update of VirtualMachine/app-01 (cores)')).closest('tr')!;
  expect(within(row).getByText('proxmops')).toBeTruthy();
  expect(within(row).getByText("current state's base")).toBeTruthy();
  expect(screen.getByText('before-upgrade')).toBeTruthy();
  expect(calls[0].url).toBe('/api/v1/resources/VirtualMachine/app-01/snapshots');
  expect(screen.queryByRole('button', { name: /Roll back/ })).toBeNull();
});

test('kinds without snapshots show nothing', () => {
  const { container } = renderWith(<Snapshots kind="Iso" name="debian" isAdmin={true} />);
  expect(container.textContent).toBe('');
});

test('an admin rolls back after a confirmation that warns about auto sync, with the CSRF token', async () => {
  setCsrfToken('csrf-1');
  const changed = vi.fn();
  const calls = mockFetch(({ url, method }) => {
    if (method === 'POST' && url.endsWith('/rollback'))
      return {
        body: { kind: 'VirtualMachine', name: 'app-01', snapshot: 'before-upgrade', started: true, syncPolicy: 'auto', next: 'the next pass re-applies the manifest.' },
      };
    if (url.endsWith('/snapshots')) return { body: list() };
    return undefined;
  });
  renderWith(<Snapshots kind="VirtualMachine" name="app-01" isAdmin={true} onChanged={changed} />);
  fireEvent.click(screen.getByRole('button', { name: 'Show snapshots' }));
  fireEvent.click(await screen.findByRole('button', { name: 'Roll back to before-upgrade…' }));
  let dialog = screen.getByRole('alertdialog', { name: 'Roll app-01 back to before-upgrade?' });
  expect(within(dialog).getByText(/Proxmox stops the running guest/)).toBeTruthy();
  expect(within(dialog).getByText(/syncs automatically: the next pass re-applies the manifest/)).toBeTruthy();
  fireEvent.click(within(dialog).getByRole('button', { name: 'Cancel' }));
  expect(screen.queryByRole('alertdialog')).toBeNull();
  expect(calls.some((c) => c.method === 'POST')).toBe(false);

  fireEvent.click(screen.getByRole('button', { name: 'Roll back to before-upgrade…' }));
  dialog = screen.getByRole('alertdialog');
  fireEvent.click(within(dialog).getByRole('button', { name: 'Roll back' }));
  await screen.findByText('Rolled back to before-upgrade and started again. the next pass re-applies the manifest.');
  const post = calls.find((c) => c.method === 'POST');
  expect(post?.url).toBe('/api/v1/resources/VirtualMachine/app-01/rollback');
  expect(post?.body).toEqual({ snapshot: 'before-upgrade' });
  expect(post?.headers['X-CSRF-Token']).toBe('csrf-1');
  expect(changed).toHaveBeenCalled();
  await waitFor(() => expect(calls.filter((c) => c.url.endsWith('/snapshots'))).toHaveLength(2));
});

test('a refused rollback shows the daemon’s words and a manual guest gets no auto-sync warning', async () => {
  mockFetch(({ url, method }) => {
    if (method === 'POST') return { status: 409, body: { error: 'an action on VirtualMachine/app-01 is already running: conflict' } };
    if (url.endsWith('/snapshots')) return { body: list({ syncPolicy: 'manual', running: false }) };
    return undefined;
  });
  renderWith(<Snapshots kind="VirtualMachine" name="app-01" isAdmin={true} />);
  fireEvent.click(screen.getByRole('button', { name: 'Show snapshots' }));
  fireEvent.click(await screen.findByRole('button', { name: 'Roll back to proxmops-20261201T231500Z…' }));
  const dialog = screen.getByRole('alertdialog');
  expect(within(dialog).queryByText(/syncs automatically/)).toBeNull();
  expect(within(dialog).queryByText(/Proxmox stops the running guest/)).toBeNull();
  expect(within(dialog).getByText(/stays as rolled back and shows OutOfSync/)).toBeTruthy();
  fireEvent.click(within(dialog).getByRole('button', { name: 'Roll back' }));
  await screen.findByText('an action on VirtualMachine/app-01 is already running: conflict');
});

describe('the rollback’s words', () => {
  beforeEach(() => {
    fakeTimeouts();
  });  const rollBack = async (snapshot: string) => {
    fireEvent.click(screen.getByRole('button', { name: 'Show snapshots' }));
    fireEvent.click(await settle('the rollback button', () => screen.queryByRole('button', { name: `Roll back to ${snapshot}…` })));
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Roll back' }));
  };

  test('the success notice goes by itself', async () => {
    mockFetch(({ url, method }) => {
      if (method === 'POST') return { body: { kind: 'VirtualMachine', name: 'app-01', snapshot: 'before-upgrade', started: false, syncPolicy: 'manual', next: 'it stays as rolled back.' } };
      if (url.endsWith('/snapshots')) return { body: list({ syncPolicy: 'manual' }) };
      return undefined;
    });
    renderWith(<Snapshots kind="VirtualMachine" name="app-01" isAdmin={true} />);
    await rollBack('before-upgrade');
    const notice = () => screen.queryByText('Rolled back to before-upgrade. it stays as rolled back.');
    expect((await settle('the notice', notice)).getAttribute('role')).toBe('status');
    expectTransient('the rollback notice', notice);
  });

  test('a refused rollback’s error stays until dismissed, and a new attempt replaces it', async () => {
    let refuse = true;
    mockFetch(({ url, method }) => {
      if (method === 'POST')
        return refuse
          ? { status: 409, body: { error: 'an action on VirtualMachine/app-01 is already running: conflict' } }
          : { body: { kind: 'VirtualMachine', name: 'app-01', snapshot: 'before-upgrade', started: false, syncPolicy: 'manual', next: 'it stays as rolled back.' } };
      if (url.endsWith('/snapshots')) return { body: list({ syncPolicy: 'manual' }) };
      return undefined;
    });
    renderWith(<Snapshots kind="VirtualMachine" name="app-01" isAdmin={true} />);
    await rollBack('before-upgrade');
    await expectErrorStays('the refused rollback’s error', 'an action on VirtualMachine/app-01 is already running: conflict');
    const error = () => screen.queryByRole('alert');

    // The confirmation is still open: try again, refused again, then accepted.
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Roll back' }));
    await settle('the error again', error);
    refuse = false;
    await settle('the confirmation again', () => !(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Roll back' }) as HTMLButtonElement).disabled);
    fireEvent.click(within(screen.getByRole('alertdialog')).getByRole('button', { name: 'Roll back' }));
    await settle('the notice', () => screen.queryByText(/^Rolled back to before-upgrade/));
    expect(error()).toBeNull();
  });
});
