import { fireEvent, render, screen } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import Settings from '../pages/Settings';
import { expectTransient, fakeTimeouts, mockFetch, renderWith, settle } from '../test/helpers';
import ExportPanel, { exportURL } from './ExportPanel';

test('the query mirrors the export flags: all guests unless VMIDs are given', () => {
  expect(exportURL({ vmids: '', node: '', kinds: ['VirtualMachine'] })).toBe('/api/v1/export?all=true&kind=VirtualMachine');
  expect(exportURL({ vmids: ' 100,105-110 ', node: 'pve1', kinds: ['Template', 'Network'] })).toBe(
    '/api/v1/export?vmid=100%2C105-110&node=pve1&kind=Template&kind=Network',
  );
});

test('downloads the archive the daemon answers, under its name', async () => {
  const fetchFn = vi.fn(
    async (_url: string) =>
      new Response(new Uint8Array([0x1f, 0x8b]), {
        status: 200,
        headers: { 'Content-Type': 'application/gzip', 'Content-Disposition': 'attachment; filename="proxmops-export-X.tar.gz"', 'X-Proxmops-Manifests': '3' },
      }),
  );
  vi.stubGlobal('fetch', fetchFn);
  const created = vi.fn(() => 'blob:x');
  vi.stubGlobal('URL', Object.assign(URL, { createObjectURL: created, revokeObjectURL: vi.fn() }));
  const clicked: string[] = [];
  const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(function (this: HTMLAnchorElement) {
    clicked.push(this.download);
  });
  render(<ExportPanel />);
  fireEvent.change(screen.getByLabelText('VMIDs to export'), { target: { value: '100' } });
  fireEvent.click(screen.getByRole('checkbox', { name: /Container/ }));
  fireEvent.click(screen.getByRole('button', { name: 'Download manifests (.tar.gz)' }));
  expect(await screen.findByText('Downloaded proxmops-export-X.tar.gz (3 manifests).')).toBeTruthy();
  expect(fetchFn.mock.calls[0][0]).toBe('/api/v1/export?vmid=100&kind=Template&kind=VirtualMachine');
  expect(created).toHaveBeenCalled();
  expect(clicked).toEqual(['proxmops-export-X.tar.gz']);
  click.mockRestore();
});

test('host networks and SDN objects are exported on request only', async () => {
  const fetchFn = vi.fn(async (_url: string) => new Response(new Uint8Array([0x1f, 0x8b]), { status: 200 }));
  vi.stubGlobal('fetch', fetchFn);
  vi.stubGlobal('URL', Object.assign(URL, { createObjectURL: vi.fn(() => 'blob:x'), revokeObjectURL: vi.fn() }));
  const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {});
  render(<ExportPanel />);
  for (const k of ['Network', 'SdnZone', 'SdnVnet', 'Pool']) {
    expect((screen.getByRole('checkbox', { name: k }) as HTMLInputElement).checked).toBe(false);
  }
  for (const k of ['VirtualMachine', 'Template', 'Container']) {
    fireEvent.click(screen.getByRole('checkbox', { name: k }));
  }
  fireEvent.click(screen.getByRole('checkbox', { name: 'SdnZone' }));
  fireEvent.click(screen.getByRole('checkbox', { name: 'SdnVnet' }));
  fireEvent.click(screen.getByRole('button', { name: 'Download manifests (.tar.gz)' }));
  expect(await screen.findByText(/^Downloaded proxmops-export.tar.gz/)).toBeTruthy();
  expect(fetchFn.mock.calls[0][0]).toBe('/api/v1/export?all=true&kind=SdnZone&kind=SdnVnet');
  click.mockRestore();
});

test('shows the daemon’s error instead of downloading it', async () => {
  vi.stubGlobal(
    'fetch',
    vi.fn(async () => new Response(JSON.stringify({ error: 'invalid export options: --vmid "abc": "abc" is not a VMID' }), { status: 400 })),
  );
  render(<ExportPanel />);
  fireEvent.change(screen.getByLabelText('VMIDs to export'), { target: { value: 'abc' } });
  fireEvent.click(screen.getByRole('button', { name: 'Download manifests (.tar.gz)' }));
  expect((await screen.findByRole('alert')).textContent).toContain('is not a VMID');
});

test('the settings page offers the export to admins only', () => {
  mockFetch(() => undefined);
  const { unmount } = renderWith(<Settings />, { role: 'admin' });
  expect(screen.getByRole('region', { name: 'Export' })).toBeTruthy();
  unmount();
  renderWith(<Settings />, { role: 'viewer' });
  expect(screen.queryByRole('region', { name: 'Export' })).toBeNull();
});

test('"Downloaded …" goes after TRANSIENT_MS', async () => {
  fakeTimeouts();
  vi.stubGlobal('fetch', vi.fn(async () => new Response(new Uint8Array([0x1f, 0x8b]), { status: 200, headers: { 'X-Proxmops-Manifests': '2' } })));
  vi.stubGlobal('URL', Object.assign(URL, { createObjectURL: vi.fn(() => 'blob:x'), revokeObjectURL: vi.fn() }));
  const click = vi.spyOn(HTMLAnchorElement.prototype, 'click').mockImplementation(() => {});
  render(<ExportPanel />);
  fireEvent.click(screen.getByRole('button', { name: 'Download manifests (.tar.gz)' }));
  const done = () => screen.queryByText('Downloaded proxmops-export.tar.gz (2 manifests).');
  await settle('the notice', done);
  expectTransient('"Downloaded …"', done);
  click.mockRestore();
});
