import { act, fireEvent, render, screen, waitFor } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import { setCsrfToken } from '../api/client';
import type { Resource, ResourceDetail } from '../api/types';
import { expectErrorStays, expectTransient, fakeTimeouts, mockFetch, Providers, renderWith, resourcesValue, settle } from '../test/helpers';
import type { ResourceEvent } from '../state/resources';
import Drawer from './Drawer';
import { partial } from '../test/partial';

const detail = (over: Partial<ResourceDetail> = {}): ResourceDetail => (partial({
  kind: 'VirtualMachine',
  name: 'app-01',
  node: 'pve1',
  vmid: 120,
  status: 'OutOfSync',
  health: 'Healthy',
  action: 'update',
  reason: 'cores differ from the manifest',
  needsReboot: true,
  changes: [{ field: 'cores', from: '2', to: '4' }],
  owned: true,
  desired: { apiVersion: 'proxmops.dev/v1', kind: 'VirtualMachine', metadata: { name: 'app-01' }, spec: { cores: 4, memory: 4096 } },
  observed: { config: { cores: 2, memory: 4096 }, status: 'running' },
  history: [
    partial({ id: 1, event: 'created', commit: 'aaaaaaaaaaaaaaaa', time: '2026-11-30T09:00:00Z' }),
    { id: 2, event: 'drifted', commit: 'aaaaaaaaaaaaaaaa', time: '2026-11-30T10:00:00Z', message: 'cores: 4 -> 2' },
  ],
  ...over,
}));

test('shows the planned action, the changed fields on both sides and the history', async () => {
  mockFetch(({ url }) => (url.endsWith('/resources/VirtualMachine/app-01') ? { body: detail() } : undefined));
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText('cores differ from the manifest');
  expect(screen.getByText('needs a reboot')).toBeTruthy();
  // One row per field, manifest beside cluster; the changed one is marked.
  const changed = [...document.querySelectorAll('.aligned tr.changed')];
  expect(changed.map((tr) => [...tr.children].map((c) => c.textContent))).toEqual([['≠cores (differs)', '4', '2']]);
  const memory = [...document.querySelectorAll('.aligned tr')].find((tr) => tr.querySelector('th')?.textContent === 'memory');
  expect([...memory!.children].map((c) => c.textContent)).toEqual(['memory', '4096', '4096']);
  const items = screen.getAllByRole('listitem').map((li) => li.textContent);
  expect(items[0]).toMatch(/^.drifted/);
  expect(items[1]).toMatch(/created/);
});

test('each history entry shows its commit, short with the full hash in the tooltip, linking to the revision', async () => {
  const full = '3f2c1e0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e';
  mockFetch(({ url }) =>
    url.endsWith('/resources/VirtualMachine/app-01')
      ? { body: detail({ history: [{ id: 7, event: 'applied', commit: full, time: '2026-11-30T11:00:00Z', message: 'update done in 1s' }] }) }
      : undefined,
  );
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  const link = await screen.findByRole('link', { name: 'commit 3f2c1e0a' });
  expect(link.textContent).toBe('3f2c1e0a');
  expect(link.getAttribute('title')).toBe(full);
  expect(link.getAttribute('href')).toBe(`/revisions?commit=${full}`);
});

test('delete needs the exact name typed, and sends the CSRF token', async () => {
  setCsrfToken('csrf-1');
  const calls = mockFetch(({ url, method }) => {
    if (method === 'DELETE') return { status: 202, body: {} };
    if (url.endsWith('/app-01')) return { body: detail() };
    return undefined;
  });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  fireEvent.click(await screen.findByRole('button', { name: 'Delete…' }));
  const confirm = screen.getByRole('button', { name: 'Delete' }) as HTMLButtonElement;
  const input = screen.getByLabelText("Type the resource's name to confirm");
  fireEvent.change(input, { target: { value: 'app-0' } });
  expect(confirm.disabled).toBe(true);
  fireEvent.change(input, { target: { value: 'app-01' } });
  expect(confirm.disabled).toBe(false);
  fireEvent.click(confirm);
  await screen.findByText('Deletion requested.');
  const del = calls.find((c) => c.method === 'DELETE');
  expect(del?.url).toBe('/api/v1/resources/VirtualMachine/app-01');
  expect(del?.headers['X-CSRF-Token']).toBe('csrf-1');
});

test('a refused delete shows the daemon’s words', async () => {
  mockFetch(({ url, method }) => {
    if (method === 'DELETE') return { status: 409, body: { error: 'app-01 is locked by a running task' } };
    if (url.endsWith('/app-01')) return { body: detail() };
    return undefined;
  });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  fireEvent.click(await screen.findByRole('button', { name: 'Delete…' }));
  fireEvent.change(screen.getByLabelText("Type the resource's name to confirm"), { target: { value: 'app-01' } });
  fireEvent.click(screen.getByRole('button', { name: 'Delete' }));
  await screen.findByText('app-01 is locked by a running task');
});

test.each([
  ['a guest it does not own', { owned: false }],
  ['a conflict: the VMID is held by a guest it does not own', { owned: false, status: 'Conflict' as const, observed: null }],
])('no delete for %s', async (_name, over) => {
  mockFetch(() => ({ body: detail(over) }));
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText(/does not own this resource/);
  expect(screen.queryByRole('button', { name: /Delete/ })).toBeNull();
  expect(screen.getByRole('button', { name: 'Sync now' })).toBeTruthy();
});

test('viewers see no action buttons', async () => {
  mockFetch(() => ({ body: detail() }));
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />, { role: 'viewer' });
  await screen.findByText('cores differ from the manifest');
  expect(screen.queryByRole('button', { name: /Sync now|Delete/ })).toBeNull();
});

test('Tab stays inside the drawer', async () => {
  mockFetch(() => ({ body: detail() }));
  render(
    <Providers>
      <button type="button">outside</button>
      <Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />
    </Providers>,
  );
  await screen.findByRole('button', { name: 'Delete…' });
  const inside = [...screen.getByRole('dialog').querySelectorAll<HTMLElement>('button:not([disabled]), input:not([disabled]), a[href], [tabindex="0"]')];
  const last = inside[inside.length - 1];
  last.focus();
  fireEvent.keyDown(window, { key: 'Tab' });
  expect(document.activeElement).toBe(screen.getByRole('button', { name: 'Close (Esc)' }));
  fireEvent.keyDown(window, { key: 'Tab', shiftKey: true });
  expect(document.activeElement).toBe(last);
});

test('Escape closes the drawer', async () => {
  mockFetch(() => ({ body: detail() }));
  const onClose = vi.fn();
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={onClose} />);
  await screen.findByText('cores differ from the manifest');
  fireEvent.keyDown(window, { key: 'Escape' });
  expect(onClose).toHaveBeenCalled();
});

test('a resource that is gone says so', async () => {
  mockFetch(() => ({ status: 404, body: { error: 'no such resource' } }));
  renderWith(<Drawer resourceKey="VirtualMachine/gone" onClose={() => {}} />);
  await waitFor(() => expect(screen.getByText(/no longer known/)).toBeTruthy());
});

test('a burst of the resource’s stream events is one read 400 ms later; a deletion says it is gone until an answer brings it back', async () => {
  fakeTimeouts();
  let reads = 0;
  mockFetch(({ url }) => {
    if (!url.endsWith('/app-01')) return undefined;
    reads++;
    return { body: detail({ reason: `read ${reads}` }) };
  });
  const listeners: ((ev: ResourceEvent) => void)[] = [];
  const emit = (ev: ResourceEvent) => act(() => listeners.forEach((l) => l(ev)));
  const value = resourcesValue([], { onEvent: (fn) => (listeners.push(fn), () => {}) });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />, { value });
  await settle('the first read', () => screen.queryByText('read 1'));
  const changed = partial<Resource>({ kind: 'VirtualMachine', name: 'app-01' });
  emit({ type: 'resource', resource: changed });
  emit({ type: 'resource', resource: partial<Resource>({ kind: 'VirtualMachine', name: 'other' }) });
  emit({ type: 'resource', resource: changed });
  act(() => {
    vi.advanceTimersByTime(399);
  });
  expect(reads).toBe(1);
  act(() => {
    vi.advanceTimersByTime(1);
  });
  await settle('the second read', () => screen.queryByText('read 2'));
  emit({ type: 'deleted', kind: 'VirtualMachine', name: 'app-01' });
  expect(screen.getByText(/no longer known/)).toBeTruthy();
  emit({ type: 'resource', resource: changed });
  act(() => {
    vi.advanceTimersByTime(400);
  });
  await settle('the third read', () => screen.queryByText('read 3'));
  expect(screen.queryByText(/no longer known/)).toBeNull();
  expect(reads).toBe(3);
});

test('a resource not on the cluster yet: no delete, no ownership claim, no field marks', async () => {
  mockFetch(() => ({ body: detail({ owned: false, observed: null, action: 'create', reason: 'the VM does not exist', changes: [{ field: 'cores', from: '', to: '4' }] }) }));
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText('the VM does not exist');
  expect(screen.getByText('not on the cluster')).toBeTruthy();
  expect(screen.queryByText(/not owned|does not own/)).toBeNull();
  expect(screen.queryByRole('button', { name: /Delete/ })).toBeNull();
  expect(document.querySelectorAll('.aligned tr.changed')).toHaveLength(0);
  // Unmarked because there is nothing to compare with, not because nothing differs.
  expect(screen.getByText('Nothing on the cluster to compare with: no field is marked.')).toBeTruthy();
  expect(screen.queryByText('No field differs.')).toBeNull();
  const cores = [...document.querySelectorAll('.aligned tr')].find((tr) => tr.querySelector('th')?.textContent === 'cores');
  expect([...cores!.children].map((c) => c.textContent)).toEqual(['cores', '4', '— not set']);
});

test('while the resource’s action runs: Sync now is disabled, the progress shows its percent, the task log follows', async () => {
  let lines = ['downloading http://127.0.0.1/x.qcow2'];
  mockFetch(({ url }) => {
    if (url.endsWith('/tasklog')) return { body: { task: 'UPID:pve1:1:2:3:download:x.qcow2:root@pam:', running: true, lines } };
    if (url.endsWith('/app-01'))
      return { body: detail({ status: 'Progressing', progress: { task: 'UPID:pve1:1:2:3:download:x.qcow2:root@pam:', message: 'downloading the image', percent: 40 } }) };
    return undefined;
  });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  const sync = (await screen.findByRole('button', { name: 'Syncing…' })) as HTMLButtonElement;
  expect(sync.disabled).toBe(true);
  expect((screen.getByRole('button', { name: 'Sync…' }) as HTMLButtonElement).disabled).toBe(true);
  expect(screen.getByRole('progressbar', { name: 'downloading the image' }).getAttribute('aria-valuenow')).toBe('40');
  const log = await screen.findByLabelText('Task log lines');
  expect(log.textContent).toBe('downloading http://127.0.0.1/x.qcow2');
  lines = [...lines, '     0K ........ ........ ........ ........ 50% 12.3M 3s'];
  await waitFor(() => expect(screen.getByLabelText('Task log lines').textContent).toContain('50%'), { timeout: 4000 });
});

test('a notice goes away by itself', async () => {
  vi.useFakeTimers({ shouldAdvanceTime: true });
  mockFetch(({ url, method }) => {
    if (method === 'POST') return { status: 202, body: { status: 'sync of VirtualMachine/app-01 started' } };
    if (url.endsWith('/tasklog')) return { body: { task: '', running: false, lines: [] } };
    return { body: detail() };
  });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  fireEvent.click(await screen.findByRole('button', { name: 'Sync now' }));
  await screen.findByText('sync of VirtualMachine/app-01 started');
  await act(async () => {
    vi.advanceTimersByTime(7000);
  });
  expect(screen.queryByText('sync of VirtualMachine/app-01 started')).toBeNull();
});

test('a refused sync’s error stays until dismissed; the next sync’s notice replaces it and goes by itself', async () => {
  fakeTimeouts();
  let refuse = true;
  mockFetch(({ url, method }) => {
    if (method === 'POST')
      return refuse ? { status: 409, body: { error: 'an action on VirtualMachine/app-01 is already running' } } : { status: 202, body: { status: 'sync of VirtualMachine/app-01 started' } };
    if (url.endsWith('/tasklog')) return { body: { task: '', running: false, lines: [] } };
    return { body: detail() };
  });
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  const syncNow = () => screen.queryByRole('button', { name: 'Sync now' }) as HTMLButtonElement | null;
  fireEvent.click(await settle('Sync now', syncNow));
  await expectErrorStays('the refused sync’s error', 'an action on VirtualMachine/app-01 is already running');
  const error = () => screen.queryByRole('alert');

  fireEvent.click(await settle('Sync now, enabled', () => (syncNow()?.disabled === false ? syncNow() : null)));
  await settle('the error again', error);
  refuse = false;
  fireEvent.click(await settle('Sync now, enabled', () => (syncNow()?.disabled === false ? syncNow() : null)));
  const notice = () => screen.queryByText('sync of VirtualMachine/app-01 started');
  await settle('the notice', notice);
  expect(error()).toBeNull();
  expectTransient('the sync notice', notice);
});

test('says when the daemon last read the guest configuration, and nothing when it never did', async () => {
  mockFetch(({ url }) =>
    url.endsWith('/resources/VirtualMachine/app-01') ? { body: detail({ configReadAt: new Date(Date.now() - 3 * 60_000).toISOString() }) } : undefined,
  );
  const { unmount } = renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  expect(await screen.findByText(/Configuration read from Proxmox .*\(3m ago\)/)).toBeTruthy();
  unmount();
  mockFetch(({ url }) => (url.endsWith('/resources/VirtualMachine/app-01') ? { body: detail() } : undefined));
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText('cores differ from the manifest');
  expect(screen.queryByText(/Configuration read from Proxmox/)).toBeNull();
});

test('a guest moved off the node its manifest names says so, in sync, with its moved entry', async () => {
  const note = 'running on pve2; the manifest says pve1: moved by HA or a migration, left where it is';
  mockFetch(({ url }) =>
    url.endsWith('/resources/VirtualMachine/app-01')
      ? {
          body: detail({
            node: 'pve2',
            manifestNode: 'pve1',
            status: 'Synced',
            action: 'none',
            reason: `in sync; ${note}`,
            needsReboot: false,
            changes: [],
            history: [
              partial({ id: 1, event: 'created', commit: 'aaaaaaaaaaaaaaaa', time: '2026-11-30T09:00:00Z' }),
              { id: 2, event: 'moved', commit: 'aaaaaaaaaaaaaaaa', time: '2026-11-30T10:00:00Z', message: note },
            ],
          }),
        }
      : undefined,
  );
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText(`in sync; ${note}`);
  expect(screen.getByText('node pve2')).toBeTruthy();
  expect(screen.getByText('the manifest says pve1')).toBeTruthy();
  const items = screen.getAllByRole('listitem').map((li) => li.textContent ?? '');
  expect(items[0]).toMatch(/^⇄moved/);
  expect(items[0]).toContain(note);
});

test('each history entry names what started it: the pass, a user by single sign-on, an API token, a webhook delivery', async () => {
  mockFetch(({ url }) =>
    url.endsWith('/resources/VirtualMachine/app-01')
      ? {
          body: detail({
            history: [
              partial({ id: 1, event: 'created', time: '2026-11-30T09:00:00Z', actor: { kind: 'pass' } }),
              partial({ id: 2, event: 'applied', time: '2026-11-30T10:00:00Z', actor: { kind: 'webhook', name: 'github', delivery: '9a1b7c3e' } }),
              partial({ id: 3, event: 'applied', time: '2026-11-30T11:00:00Z', actor: { kind: 'token', name: 'ci-deploy' } }),
              partial({ id: 4, event: 'rolledBack', time: '2026-11-30T12:00:00Z', actor: { kind: 'user', name: 'alice', via: 'oidc' } }),
              partial({ id: 5, event: 'drifted', time: '2026-11-30T08:00:00Z' }),
              partial({ id: 6, event: 'adopted', time: '2026-11-30T13:00:00Z', actor: { kind: 'cli', name: 'bob', token: 'laptop' } }),
            ],
          }),
        }
      : undefined,
  );
  renderWith(<Drawer resourceKey="VirtualMachine/app-01" onClose={() => {}} />);
  await screen.findByText(/by alice/);
  const by = [...document.querySelectorAll('.timeline .tl-user')].map((s) => s.textContent?.trim());
  expect(by).toEqual(['by the CLI (bob) through token laptop', 'by alice (single sign-on)', 'by API token ci-deploy', 'by github webhook (delivery 9a1b7c3e)', 'by the reconcile pass']);
});
