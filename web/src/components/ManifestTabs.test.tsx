import { fireEvent, render, screen } from '@testing-library/react';
import { expect, test } from 'vitest';
import { mockFetch } from '../test/helpers';
import ManifestTabs from './ManifestTabs';

const LONG = `${'x'.repeat(200)}`;
const desired = { kind: 'VirtualMachine', metadata: { name: 'app-01' }, spec: { cores: 4, description: LONG } };
const observed = { config: { cores: 2, description: LONG, sshkeys: 'ssh-ed25519%20AAAAC3NzaC1lZDI1NTE5AAAAII9UjT7L8VL54itcaiO2UWYIARFcav%20a%40b' }, status: 'running' };

function renderTabs() {
  return render(
    <ManifestTabs kind="VirtualMachine" name="app-01" desired={desired} observed={observed} changes={[{ field: 'cores', path: 'spec.cores', from: '2', to: '4' }]} version="t1" />,
  );
}

test('long values are cut with the whole value as a tooltip; ssh keys are shortened', () => {
  mockFetch(() => undefined);
  renderTabs();
  const cut = screen.getAllByTitle(LONG);
  expect(cut).toHaveLength(2);
  expect(cut[0].textContent).toBe(`${'x'.repeat(160)}…`);
  // Only the cluster sets sshkeys: it is listed apart, shown on asking.
  expect(screen.queryByText(/ssh-ed25519/)).toBeNull();
  fireEvent.click(screen.getByRole('button', { name: 'Show 2 cluster settings the manifest does not set' }));
  const key = screen.getByTitle('ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAII9UjT7L8VL54itcaiO2UWYIARFcav a@b');
  expect(key.textContent).toBe('ssh-ed25519 AAAAC3NzaC1l…YIARFcav a@b');
  fireEvent.click(screen.getByRole('checkbox', { name: 'only differences' }));
  expect([...document.querySelectorAll('.aligned tbody th[scope="row"]')].map((th) => th.textContent)).toEqual(['≠cores (differs)']);
});

test('the desired manifest is the text from Git; the live one is Proxmox’s answer as YAML', async () => {
  const calls = mockFetch(({ url }) => {
    if (url.endsWith('/manifest'))
      return { body: { kind: 'VirtualMachine', name: 'app-01', file: 'vms/app-01.yaml', line: 2, revision: '3f2c1e0a9b8c7d6e', text: '# a comment\nkind: VirtualMachine\n' } };
    if (url.endsWith('/live'))
      return { body: { kind: 'VirtualMachine', name: 'app-01', source: 'proxmox', path: '/nodes/pve1/qemu/120/config', time: '2026-12-01T10:00:00Z', data: { cores: 2, onboot: '1' } } };
    return undefined;
  });
  renderTabs();
  expect(calls).toHaveLength(0); // nothing is read before a tab asks for it
  const diff = screen.getByRole('tab', { name: 'Diff' });
  expect(diff.getAttribute('aria-selected')).toBe('true');
  // Arrow keys move between the tabs, as in any tab list.
  fireEvent.keyDown(diff, { key: 'ArrowRight' });
  expect(screen.getByRole('tab', { name: 'Desired manifest' }).getAttribute('aria-selected')).toBe('true');
  const pre = await screen.findByLabelText('Desired manifest, vms/app-01.yaml');
  expect(pre.textContent).toBe('# a comment\nkind: VirtualMachine\n');
  expect(screen.getByText('3f2c1e0a')).toBeTruthy();
  fireEvent.click(screen.getByRole('tab', { name: 'Live manifest' }));
  expect((await screen.findByLabelText('Live config, as Proxmox answers it')).textContent).toBe('cores: 2\nonboot: "1"\n');
  expect(screen.getByText('GET /nodes/pve1/qemu/120/config')).toBeTruthy();
  expect(calls.map((c) => c.url)).toEqual(['/api/v1/resources/VirtualMachine/app-01/manifest', '/api/v1/resources/VirtualMachine/app-01/live']);
});

test('a refused live read shows the daemon’s words', async () => {
  mockFetch(() => ({ status: 500, body: { error: 'reading /nodes/pve1/qemu/120/config from Proxmox: 403 Permission check failed' } }));
  renderTabs();
  fireEvent.click(screen.getByRole('tab', { name: 'Live manifest' }));
  await screen.findByText(/Permission check failed/);
});
