import { fireEvent, screen, within } from '@testing-library/react';
import { beforeEach, expect, test } from 'vitest';
import type { Resource } from '../api/types';
import { expectStays, expectTransient, fakeTimeouts, mockFetch, renderWith, resourcesValue, settle } from '../test/helpers';
import { initialResourceState, reduceResources } from '../state/resources';
import Overview from './Overview';
import { partial } from '../test/partial';

const resources: Resource[] = [
  partial({ kind: 'VirtualMachine', name: 'app-01', node: 'pve1', status: 'OutOfSync', tags: ['prod'], progress: { message: 'downloading image', percent: 40 } }),
  partial({ kind: 'VirtualMachine', name: 'db-01', node: 'pve2', status: 'Synced', tags: ['db'] }),
  partial({ kind: 'Iso', name: 'debian', node: 'pve1', status: 'Failed' }),
];

beforeEach(() => {
  window.history.replaceState(null, '', '/?view=cards');
});
const cardNames = () => [...document.querySelectorAll('.card .card-name')].map((n) => n.textContent);

test('counts by status, and clicking one filters through the URL', async () => {
  renderWith(<Overview theme="light" />, { resources });
  const counts = screen.getByRole('group', { name: 'Counts by status' });
  expect(within(counts).getByRole('button', { name: /Failed/ }).textContent).toBe('1 Failed');
  fireEvent.click(within(counts).getByRole('button', { name: /Failed/ }));
  expect(new URLSearchParams(window.location.search).get('status')).toBe('Failed');
  expect(cardNames()).toEqual(['debian']);
  expect(screen.getByText('1 of 3 resources')).toBeTruthy();
});

test('search and drift-only write the URL and filter the cards', () => {
  renderWith(<Overview theme="light" />, { resources });
  fireEvent.change(screen.getByRole('searchbox', { name: 'Search resources' }), { target: { value: 'pve1' } });
  expect(new URLSearchParams(window.location.search).get('q')).toBe('pve1');
  expect(cardNames()).toEqual(['debian', 'app-01']);
  fireEvent.click(screen.getByLabelText('Drift only'));
  expect(new URLSearchParams(window.location.search).get('drift')).toBe('1');
  fireEvent.click(screen.getByRole('button', { name: 'Clear filters' }));
  expect(window.location.search).toBe('?view=cards');
  expect(cardNames()).toHaveLength(3);
});

test('a shared link opens with its filters and grouping', () => {
  window.history.replaceState(null, '', '/?view=cards&group=tag&tag=prod');
  renderWith(<Overview theme="light" />, { resources });
  expect(cardNames()).toEqual(['app-01']);
  expect(screen.getByRole('heading', { name: 'prod' })).toBeTruthy();
});

test('a resource with progress shows it', () => {
  renderWith(<Overview theme="light" />, { resources });
  const bar = screen.getByRole('progressbar', { name: 'downloading image' });
  expect(bar.getAttribute('aria-valuenow')).toBe('40');
});

test('viewers get no sync buttons', () => {
  renderWith(<Overview theme="light" />, { role: 'viewer', resources });
  expect(screen.queryByRole('button', { name: /Sync all|Refresh/ })).toBeNull();
});

test('an empty daemon says why the page is empty', () => {
  renderWith(<Overview theme="light" />, { resources: [] });
  expect(screen.getByText('No resources yet')).toBeTruthy();
});

test('a source problem of several lines is listed one per item', () => {
  const base = resourcesValue(resources);
  const state = reduceResources(base.state, [
    { type: 'pass', pass: partial({ revision: '3f2c1e0a9b8c7d6e', sourceError: 'git: authentication required\ncluster: connection refused' }) },
  ]);
  renderWith(<Overview theme="light" />, { value: { ...base, state } });
  const banner = screen.getByText(/Git source:/);
  expect([...banner.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['git: authentication required', 'cluster: connection refused']);
});

test('a cluster that cannot be observed is a banner and a word in the summary bar, apart from the Git source, gone once it answers', () => {
  const base = resourcesValue(resources);
  const lastObserved = new Date(Date.now() - 3 * 60_000).toISOString();
  const clusterError = 'observing the cluster failed: TLS certificate fingerprint mismatch: expected AA:BB, server presented CC:DD';
  const down = reduceResources(base.state, [{ type: 'pass', pass: partial({ revision: '3f2c1e0a9b8c7d6e', sourceError: '', clusterError, lastObserved }) }]);
  const { rerenderWith } = renderWith(<Overview theme="light" />, { value: { ...base, state: down } });
  const banner = screen.getByRole('alert', { name: 'Cluster unreachable' });
  expect(banner.textContent).toContain('fingerprint mismatch');
  expect(banner.textContent).toContain('observed 3m ago');
  expect(screen.queryByText(/Git source:/)).toBeNull();
  const bar = screen.getByRole('region', { name: 'Reconciliation' });
  expect(within(bar).getByTestId('summary-cluster-down').textContent).toBe('cluster unreachable · last observed 3m ago');

  const back = reduceResources(down, [{ type: 'pass', pass: partial({ revision: '3f2c1e0a9b8c7d6e', sourceError: '', clusterError: '', lastObserved: new Date().toISOString() }) }]);
  rerenderWith(<Overview theme="light" />, { value: { ...base, state: back } });
  expect(screen.queryByRole('alert', { name: 'Cluster unreachable' })).toBeNull();
  expect(screen.queryByTestId('summary-cluster-down')).toBeNull();
});

test('a HEAD that fails to load, as a pass event says, is a banner naming the last good revision, gone once HEAD loads', () => {
  const base = resourcesValue(resources);
  const loadError = { revision: '9a1b2c3d4e5f60718293', errors: ['vms/a.yaml:4:8: unknown field coers', 'vms/b.yaml:2:1: unknown kind Vm'] };
  const failing = reduceResources(base.state, [{ type: 'pass', pass: partial({ revision: '3f2c1e0a9b8c7d6e', sourceError: '', loadError }) }]);
  const { rerenderWith } = renderWith(<Overview theme="light" />, { value: { ...base, state: failing } });
  const banner = screen.getByRole('alert', { name: 'HEAD failed to load' });
  expect(banner.textContent).toContain('HEAD (9a1b2c3d) failed to load');
  expect(banner.textContent).toContain("last good revision's (3f2c1e0a)");
  expect([...banner.querySelectorAll('li')].map((li) => li.textContent)).toEqual(loadError.errors);
  expect(screen.queryByText(/Git source:/)).toBeNull();
  // The summary bar says it too: what is reconciled is not HEAD.
  const bar = screen.getByRole('region', { name: 'Reconciliation' });
  expect(bar.textContent).toContain('last good revision: HEAD failed to load');
  expect(bar.textContent).not.toContain('revision being reconciled');

  const fixed = reduceResources(failing, [{ type: 'pass', pass: partial({ revision: '4a4a4a4a4a4a4a4a', sourceError: '', loadError: null }) }]);
  rerenderWith(<Overview theme="light" />, { value: { ...base, state: fixed } });
  expect(screen.queryByRole('alert', { name: 'HEAD failed to load' })).toBeNull();
  expect(screen.getByRole('region', { name: 'Reconciliation' }).textContent).toContain('revision being reconciled');
});

test('a pinned revision is said in the summary bar, not only in the banner', () => {
  const base = resourcesValue(resources);
  const pinned = { revision: '3f2c1e0a9b8c7d6e5f4a', message: 'two cores', by: 'alice', at: '2026-12-01T00:00:00Z' };
  const state = reduceResources(base.state, [{ type: 'pass', pass: partial({ revision: pinned.revision, sourceError: '', loadError: null, pinned }) }]);
  renderWith(<Overview theme="light" />, { value: { ...base, state } });
  const bar = screen.getByRole('region', { name: 'Reconciliation' });
  expect(bar.textContent).toContain('pinned revision, not the branch head');
  expect(bar.textContent).toContain('3f2c1e0a');
  expect(screen.getByText('Pinned to')).toBeTruthy();
});

test('when the very first load fails, the overview says why instead of waiting for resources', () => {
  const loadError = { revision: '9a1b2c3d4e5f60718293', errors: ['vms/a.yaml:4:8: unknown field coers'] };
  const state = reduceResources(initialResourceState, [{ type: 'snapshot', summary: partial({ revision: '', sourceError: '', loadError, resources: [] }) }]);
  renderWith(<Overview theme="light" />, { value: { ...resourcesValue([]), state } });
  const banner = screen.getByRole('alert', { name: 'HEAD failed to load' });
  expect(banner.textContent).toContain('no revision has loaded yet');
  expect(banner.querySelector('li')?.textContent).toBe('vms/a.yaml:4:8: unknown field coers');
  expect(screen.getByText('The manifests failed to load; see the errors above.')).toBeTruthy();
});

const twoClusters: Resource[] = [
  partial({ cluster: 'home', kind: 'VirtualMachine', name: 'app-01', node: 'pve1', status: 'Synced' }),
  partial({ cluster: 'office', kind: 'VirtualMachine', name: 'app-01', node: 'pve1', status: 'Failed' }),
  partial({ cluster: 'office', kind: 'Iso', name: 'debian', node: 'pve1', status: 'Synced' }),
];
const cardClusters = () => [...document.querySelectorAll('.card')].map((c) => `${c.querySelector('.card-name')?.textContent}@${c.querySelector('.card-cluster')?.textContent ?? ''}`);

test('with one cluster there is no cluster filter or grouping, and a link asking for them shows everything', () => {
  window.history.replaceState(null, '', '/?view=cards&cluster=office&group=cluster');
  renderWith(<Overview theme="light" />, { resources });
  expect(screen.queryByRole('group', { name: 'Cluster' })).toBeNull();
  expect(within(screen.getByLabelText('Group by')).queryByRole('option', { name: 'cluster' })).toBeNull();
  expect(cardNames()).toHaveLength(3);
});

test('with several clusters the same name shows once per cluster; filter and group by cluster through the URL', () => {
  renderWith(<Overview theme="light" />, { resources: twoClusters });
  expect(cardClusters()).toEqual(['debian@· office', 'app-01@· home', 'app-01@· office']);
  const menu = screen.getByRole('group', { name: 'Cluster' });
  fireEvent.click(within(menu).getByLabelText('office'));
  expect(new URLSearchParams(window.location.search).get('cluster')).toBe('office');
  expect(cardClusters()).toEqual(['debian@· office', 'app-01@· office']);
  expect(screen.getByText('2 of 3 resources')).toBeTruthy();

  fireEvent.change(screen.getByLabelText('Group by'), { target: { value: 'cluster' } });
  expect(new URLSearchParams(window.location.search).get('group')).toBe('cluster');
  expect(screen.getByRole('heading', { name: 'office' })).toBeTruthy();
  expect(screen.queryByRole('heading', { name: 'home' })).toBeNull();

  fireEvent.click(screen.getByRole('button', { name: 'Clear filters' }));
  expect(new URLSearchParams(window.location.search).get('cluster')).toBeNull();
  expect(screen.getAllByRole('heading', { level: 3 }).map((h) => h.textContent)).toEqual(['home', 'office']);
});

test('"Pulling Git now." goes by itself; a refused refresh’s error stays until the next one replaces it', async () => {
  fakeTimeouts();
  let refuse = true;
  mockFetch(({ url, method }) =>
    method === 'POST' && url === '/api/v1/refresh' ? (refuse ? { status: 503, body: { error: 'the daemon is stopping' } } : { status: 202, body: {} }) : undefined,
  );
  renderWith(<Overview theme="light" />, { resources });
  fireEvent.click(screen.getByRole('button', { name: 'Refresh' }));
  const error = () => screen.queryByRole('alert');
  expect((await settle('the error', error)).textContent).toContain('the daemon is stopping');
  expectStays('the refused refresh’s error', error);
  refuse = false;
  fireEvent.click(screen.getByRole('button', { name: 'Refresh' }));
  const notice = () => screen.queryByText('Pulling Git now.');
  await settle('the notice', notice);
  expect(error()).toBeNull();
  expectTransient('"Pulling Git now."', notice);
});

test('with several clusters the summary bar counts the filtered cluster and says so; unfiltered, all of them and each its own', () => {
  window.history.replaceState(null, '', '/?view=cards');
  renderWith(<Overview theme="light" />, { resources: twoClusters });
  const chip = (s: string) => within(screen.getByRole('group', { name: /^Counts by status/ })).getByRole('button', { name: new RegExp(s) }).textContent;
  expect(screen.getByRole('group', { name: 'Counts by status in all 2 clusters' })).toBeTruthy();
  expect(chip('Synced')).toBe('2 Synced');
  expect(chip('Failed')).toBe('1 Failed');
  expect(screen.getByTestId('summary-scope').textContent).toBe('in all 2 clusters: home 1 of 1 in sync · office 1 of 2 in sync');
  // A cluster's name there filters to it.
  fireEvent.click(within(screen.getByTestId('summary-scope')).getByRole('button', { name: 'office' }));
  expect(new URLSearchParams(window.location.search).get('cluster')).toBe('office');
  expect(screen.getByRole('group', { name: 'Counts by status in cluster office' })).toBeTruthy();
  expect(screen.getByTestId('summary-scope').textContent).toBe('in cluster office');
  expect(chip('Synced')).toBe('1 Synced');
  expect(chip('Failed')).toBe('1 Failed');
  // A status filter narrows the cards, not the counts of the cluster shown.
  fireEvent.click(within(screen.getByRole('group', { name: /^Counts by status/ })).getByRole('button', { name: /Failed/ }));
  expect(chip('Synced')).toBe('1 Synced');
  window.history.replaceState(null, '', '/?view=cards&cluster=home');
  fireEvent(window, new PopStateEvent('popstate'));
  expect(chip('Synced')).toBe('1 Synced');
  expect(chip('Failed')).toBe('0 Failed');
});

// serveSync answers a dry run with the plan of the cluster it names (office or
// not), and a sync with started.
const serveSync = (started: string, planOf: (office: boolean) => unknown) =>
  mockFetch(({ url, body }) =>
    JSON.parse(String(body)).dryRun ? { body: { plan: planOf(url.endsWith('?cluster=office')) } } : { status: 202, body: { status: started } },
  );

test('with a Cluster filter, Sync all syncs that cluster only, after a confirmation naming it with its own plan’s counts', async () => {
  window.history.replaceState(null, '', '/?view=cards&cluster=office');
  const calls = serveSync('a full pass of cluster office started', (office) => ({
    cluster: office ? 'office' : 'home',
    revision: '3f2c1e0a9b8c7d6e',
    summary: office ? { update: 1, statuses: { OutOfSync: 1, Synced: 1 } } : { create: 5, statuses: { OutOfSync: 5 } },
    actions: office ? [{ cluster: 'office', kind: 'VirtualMachine', name: 'app-01', action: 'update' }] : [],
  }));
  renderWith(<Overview theme="light" />, { resources: twoClusters });
  fireEvent.click(screen.getByRole('button', { name: 'Sync all in office' }));
  const dialog = screen.getByRole('dialog', { name: 'Sync all resources of cluster office' });
  expect((await within(dialog).findByTestId('sync-counts')).textContent).toBe('1 to update, 1 in sync');
  fireEvent.click(within(dialog).getByRole('button', { name: 'Sync all' }));
  await screen.findByText('a full pass of cluster office started');
  expect(calls.map((c) => `${c.url} ${(c.body as { dryRun: boolean }).dryRun ? 'dry run' : 'sync'}`)).toEqual([
    '/api/v1/sync?cluster=office dry run',
    '/api/v1/sync?cluster=office sync',
  ]);
});

test('without a Cluster filter, Sync all of several clusters tells each cluster’s counts and asks for one full sync', async () => {
  window.history.replaceState(null, '', '/?view=cards');
  const calls = serveSync('a full pass started', (office) => ({
    revision: 'r',
    summary: office ? { update: 1, statuses: { OutOfSync: 1, Synced: 1 } } : { create: 2, statuses: { OutOfSync: 2, Synced: 1 } },
    actions: [],
  }));
  renderWith(<Overview theme="light" />, { resources: twoClusters });
  fireEvent.click(screen.getByRole('button', { name: 'Sync all' }));
  const dialog = screen.getByRole('dialog', { name: 'Sync all resources of clusters home and office' });
  expect((await within(dialog).findByTestId('sync-counts')).textContent).toBe('2 to create, 1 to update, 2 in sync');
  expect(within(dialog).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['home: 2 to create, 1 in sync', 'office: 1 to update, 1 in sync']);
  fireEvent.click(within(dialog).getByRole('button', { name: 'Sync all' }));
  await screen.findByText('a full pass started');
  expect(calls.filter((c) => !(c.body as { dryRun: boolean }).dryRun).map((c) => c.url)).toEqual(['/api/v1/sync']);
});

test('with several clusters the bar names the shown cluster’s own revision: a pin on lab-2 is said filtered to it, and beside lab-1’s unfiltered', () => {
  const pin = { revision: 'a1b2c3d4e5f6a7b8c9d0', message: 'one core', by: 'admin' };
  const value = resourcesValue([], {
    state: reduceResources(initialResourceState, [
      {
        type: 'snapshot',
        summary: partial({
          revision: 'ffee0011ffee0011ffee',
          revisionMessage: 'two cores',
          lastPass: new Date().toISOString(),
          resources: twoClusters,
          clusters: [
            { name: 'home', revision: 'ffee0011ffee0011ffee', revisionMessage: 'two cores', lastPass: new Date().toISOString() },
            { name: 'office', revision: pin.revision, revisionMessage: 'one core', lastPass: new Date().toISOString(), pinned: pin },
          ],
        }),
      },
    ]),
  });
  window.history.replaceState(null, '', '/?view=cards&cluster=office');
  const { unmount } = renderWith(<Overview theme="light" />, { value });
  const bar = () => screen.getByRole('region', { name: 'Reconciliation' }).querySelector('.summary-rev')!;
  expect(bar().textContent).toBe('pinned revision, not the branch heada1b2c3d4 one core');
  expect(document.querySelector('.pin-banner')?.textContent).toContain('Pinned to a1b2c3d4');
  unmount();

  window.history.replaceState(null, '', '/?view=cards&cluster=home');
  const second = renderWith(<Overview theme="light" />, { value });
  expect(bar().textContent).toBe('revision being reconciledffee0011 two cores');
  expect(document.querySelector('.pin-banner')).toBeNull();
  second.unmount();

  window.history.replaceState(null, '', '/?view=cards');
  renderWith(<Overview theme="light" />, { value });
  expect([...bar().querySelectorAll('.summary-rev-cluster')].map((d) => d.textContent)).toEqual(['home ffee0011 branch head', 'office a1b2c3d4 pinned']);
  expect(document.querySelector('.pin-banner')?.textContent).toContain('Pinned to a1b2c3d4');
});
