import { fireEvent, render, screen, within } from '@testing-library/react';
import { beforeEach, expect, test } from 'vitest';
import type { PlanAction } from '../api/types';
import { mockFetch } from '../test/helpers';
import Plan, { groupPlan, planDelta, sortPlan } from './Plan';
import { partial } from '../test/partial';

const a = (name: string, action: PlanAction['action'], conflict = false): PlanAction => (partial({ kind: 'VirtualMachine', name, action, ...(conflict ? { status: 'Conflict' as const } : {}) }));

beforeEach(() => window.history.replaceState(null, '', '/plan'));

// servePlan answers the current revision's plan with doc, and nothing else.
const servePlan = (doc: unknown) => mockFetch(({ url }) => (url === '/api/v1/plan' ? { body: doc } : undefined));

test('changes first, then conflicts, then the rest', () => {
  expect(sortPlan([a('n', 'none'), a('c', 'none', true), a('d', 'delete'), a('u', 'update'), a('k', 'create')]).map((x) => x.name)).toEqual(['k', 'u', 'd', 'c', 'n']);
});

test('the delta is what a revision plans differently from the current one', () => {
  const cur = [a('same', 'none'), a('fix', 'update'), a('gone', 'none')];
  const other = [a('same', 'none'), { ...a('fix', 'update'), changes: [{ field: 'cores', from: '2', to: '8' }] }, a('gone', 'delete'), a('new', 'create')];
  expect([...planDelta(cur, other)].sort()).toEqual(['VirtualMachine/fix', 'VirtualMachine/gone', 'VirtualMachine/new']);
});

test('a typed branch is planned and kept in the URL', async () => {
  const calls = mockFetch(({ url }) => {
    if (url === '/api/v1/plan') return { body: { revision: 'aaaaaaaaaaaaaaaa', summary: { statuses: { Synced: 1 } }, actions: [a('app-01', 'none')] } };
    if (url === '/api/v1/plan?revision=feature%2Fx')
      return {
        body: {
          revision: 'bbbbbbbbbbbbbbbb',
          summary: { create: 1, statuses: { Synced: 1, OutOfSync: 1 } },
          actions: [a('app-01', 'none'), { ...a('app-03', 'create'), reason: 'new manifest', changes: [{ field: 'cores', from: '', to: '2' }], needsReboot: false }],
        },
      };
    return undefined;
  });
  render(<Plan />);
  await screen.findByText('No changes');
  fireEvent.change(screen.getByLabelText('Revision'), { target: { value: 'feature/x' } });
  fireEvent.click(screen.getByRole('button', { name: 'Preview' }));
  await screen.findByText('new manifest');
  expect(window.location.search).toBe('?revision=feature%2Fx');
  expect(screen.queryByText('app-01')).toBeNull();
  await screen.findByLabelText(/Only what differs from the current revision \(1\)/);
  fireEvent.click(screen.getByLabelText(/Show the 1 unchanged/));
  // app-01 plans the same in both revisions: hidden while only the difference shows.
  expect(screen.queryByText('app-01')).toBeNull();
  fireEvent.click(screen.getByLabelText(/Only what differs/));
  expect(screen.getByText('app-01')).toBeTruthy();
  expect(screen.getByText('this revision')).toBeTruthy();
  expect(calls.map((c) => c.url).sort()).toEqual(['/api/v1/plan', '/api/v1/plan', '/api/v1/plan?revision=feature%2Fx']);
});

test('an unknown revision shows the daemon’s error', async () => {
  window.history.replaceState(null, '', '/plan?revision=nope');
  mockFetch(() => ({ status: 404, body: { error: 'revision nope not found' } }));
  render(<Plan />);
  await screen.findByText('revision nope not found');
});

test('with no revision ever loaded, the plan page shows why: each load error as an item', async () => {
  mockFetch(() => ({
    status: 503,
    body: { error: 'no revision is loaded: the manifests at 9a1b2c3d4e5f failed to load:\nvms/a.yaml:4:8: unknown field coers\nvms/b.yaml:2:1: unknown kind Vm' },
  }));
  render(<Plan />);
  const alert = await screen.findByRole('alert');
  // The first line leads the list; each error is an item of its own.
  expect(alert.textContent).toMatch(/^no revision is loaded: the manifests at 9a1b2c3d4e5f failed to load:vms/);
  expect([...alert.querySelectorAll('li')].map((li) => li.textContent)).toEqual([
    'vms/a.yaml:4:8: unknown field coers',
    'vms/b.yaml:2:1: unknown kind Vm',
  ]);
});

test('the summary counts the actions to carry out and every resource by status', async () => {
  servePlan({
    revision: 'aaaaaaaaaaaaaaaa',
    summary: { create: 0, failed: 1, statuses: { Synced: 3, OutOfSync: 1, Failed: 1 } },
    actions: [
      { ...a('iso', 'create'), reason: "storage 'nosuch' does not exist", status: 'Failed' },
      { ...a('app-01', 'update'), status: 'OutOfSync' },
    ],
  });
  render(<Plan />);
  const summary = await screen.findByLabelText('Summary');
  expect(summary.textContent).toContain('0 create');
  expect(summary.textContent).toContain('3 Synced');
  expect(summary.textContent).toContain('1 Failed');
  expect(summary.textContent).not.toContain('none');
  // The create that cannot be carried out says it is Failed, beside its reason; a real change does not.
  const iso = screen.getByText('iso').closest('tr')!;
  expect(iso.querySelector('td[data-label="action"]')?.textContent).toBe('create✕Failed');
  expect(screen.getByText('app-01').closest('tr')!.querySelector('td[data-label="action"]')?.textContent).toBe('update');
});

test('a create held by metadata.dependsOn says what it waits for', async () => {
  mockFetch(({ url }) =>
    url === '/api/v1/plan'
      ? {
          body: {
            revision: 'aaaaaaaaaaaaaaaa',
            summary: { create: 1, statuses: { OutOfSync: 2 } },
            actions: [
              { ...a('db', 'create'), status: 'OutOfSync' },
              { ...a('web', 'create'), status: 'OutOfSync', waiting: { resource: 'VirtualMachine/db', status: 'OutOfSync', health: 'Missing' } },
            ],
          },
        }
      : undefined,
  );
  render(<Plan />);
  const web = (await screen.findByText('web')).closest('tr')!;
  expect(within(web).getByTestId('waiting').textContent).toBe('waiting for VirtualMachine/db to be in sync and healthy (OutOfSync)');
  expect(within(screen.getByText('db').closest('tr')!).queryByTestId('waiting')).toBeNull();
});

test('a HEAD that failed to load is said loudly, with each error as an item, and the plan is labelled the last good one', async () => {
  servePlan({
    revision: 'aaaaaaaaaaaaaaaa',
    summary: { statuses: { Synced: 1 } },
    actions: [a('app-01', 'none')],
    loadError: { revision: 'bbbbbbbbbbbbbbbb', errors: ['vms/a.yaml:4:8: unknown field coers', 'vms/b.yaml:4:8: unknown field memry'] },
  });
  render(<Plan />);
  const alert = await screen.findByRole('alert', { name: 'HEAD failed to load' });
  expect(alert.textContent).toContain('HEAD (bbbbbbb');
  expect(alert.textContent).toContain('failed to load');
  expect(alert.textContent).toContain('last good revision');
  const items = alert.querySelectorAll('li');
  expect([...items].map((li) => li.textContent)).toEqual(['vms/a.yaml:4:8: unknown field coers', 'vms/b.yaml:4:8: unknown field memry']);
  expect(screen.getByLabelText('Summary').textContent).toContain('last good revision aaaaaaa');
});

test('a good HEAD shows no load warning', async () => {
  mockFetch(() => ({ body: { revision: 'aaaaaaaaaaaaaaaa', summary: { statuses: { Synced: 1 } }, actions: [a('app-01', 'none')] } }));
  render(<Plan />);
  await screen.findByText('No changes');
  expect(screen.queryByRole('alert')).toBeNull();
  expect(screen.getByLabelText('Summary').textContent).not.toContain('last good');
});

test('several errors in one answer are shown as a list, one item each', async () => {
  window.history.replaceState(null, '', '/plan?revision=broken');
  mockFetch(() => ({ status: 400, body: { error: 'vms/a.yaml:4:8: unknown field coers\nvms/b.yaml:2:1: unknown kind Vm' } }));
  render(<Plan />);
  const alert = await screen.findByRole('alert');
  await screen.findByText('vms/b.yaml:2:1: unknown kind Vm');
  expect([...alert.querySelectorAll('li')].map((li) => li.textContent)).toEqual(['vms/a.yaml:4:8: unknown field coers', 'vms/b.yaml:2:1: unknown kind Vm']);
});

const inCluster = (cluster: string, name: string, action: PlanAction['action']): PlanAction => ({ ...a(name, action), cluster });

test('grouping by cluster keeps the plan\'s order within each cluster', () => {
  const sorted = sortPlan([inCluster('office', 'x', 'none'), inCluster('home', 'y', 'create'), inCluster('office', 'z', 'update')]);
  expect(groupPlan(sorted, true).map((g) => [g.cluster, g.actions.map((x) => x.name)])).toEqual([
    ['home', ['y']],
    ['office', ['z', 'x']],
  ]);
  expect(groupPlan(sorted, false)).toEqual([{ cluster: '', actions: sorted }]);
});

test('a plan of several clusters is filtered and grouped by cluster through the URL; one cluster has no such controls', async () => {
  window.history.replaceState(null, '', '/plan?cluster=office');
  servePlan({ revision: 'aaaaaaaaaaaaaaaa', summary: { create: 2, statuses: { OutOfSync: 2 } }, actions: [inCluster('home', 'app-01', 'create'), inCluster('office', 'app-01', 'create')] });
  render(<Plan />);
  await screen.findByRole('group', { name: 'Clusters' });
  expect(screen.getAllByRole('row').filter((r) => r.textContent?.includes('app-01')).map((r) => r.textContent?.includes('office'))).toEqual([true]);
  fireEvent.click(screen.getByLabelText('Group by cluster'));
  expect(new URLSearchParams(window.location.search).get('group')).toBe('cluster');
  fireEvent.click(within(screen.getByRole('group', { name: 'Cluster' })).getByLabelText('office'));
  expect(new URLSearchParams(window.location.search).get('cluster')).toBeNull();
  expect(screen.getAllByRole('rowheader').map((h) => h.textContent)).toEqual(['cluster home · 1', 'cluster office · 1']);
});

test('a plan of one cluster shows no cluster controls', async () => {
  servePlan({ revision: 'aaaaaaaaaaaaaaaa', summary: { create: 1, statuses: { OutOfSync: 1 } }, actions: [a('app-01', 'create')] });
  render(<Plan />);
  await screen.findByText('app-01');
  expect(screen.queryByRole('group', { name: 'Clusters' })).toBeNull();
});
