import { fireEvent, render, screen, within } from '@testing-library/react';
import { beforeEach, expect, test } from 'vitest';
import type { Resource } from '../api/types';
import { Providers, resourcesValue } from '../test/helpers';
import { reduceResources } from '../state/resources';
import Overview from './Overview';

const resources: Resource[] = [
  { kind: 'VirtualMachine', name: 'app-01', node: 'pve1', status: 'OutOfSync', tags: ['prod'], progress: { message: 'downloading image', percent: 40 } },
  { kind: 'VirtualMachine', name: 'db-01', node: 'pve2', status: 'Synced', tags: ['db'] },
  { kind: 'Iso', name: 'debian', node: 'pve1', status: 'Failed' },
];

beforeEach(() => {
  window.history.replaceState(null, '', '/?view=cards');
});

const cardNames = () => [...document.querySelectorAll('.card .card-name')].map((n) => n.textContent);

test('counts by status, and clicking one filters through the URL', async () => {
  render(
    <Providers resources={resources}>
      <Overview theme="light" />
    </Providers>,
  );
  const counts = screen.getByRole('group', { name: 'Counts by status' });
  expect(within(counts).getByRole('button', { name: /Failed/ }).textContent).toBe('1 Failed');
  fireEvent.click(within(counts).getByRole('button', { name: /Failed/ }));
  expect(new URLSearchParams(window.location.search).get('status')).toBe('Failed');
  expect(cardNames()).toEqual(['debian']);
  expect(screen.getByText('1 of 3 resources')).toBeTruthy();
});

test('search and drift-only write the URL and filter the cards', () => {
  render(
    <Providers resources={resources}>
      <Overview theme="light" />
    </Providers>,
  );
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
  render(
    <Providers resources={resources}>
      <Overview theme="light" />
    </Providers>,
  );
  expect(cardNames()).toEqual(['app-01']);
  expect(screen.getByRole('heading', { name: 'prod' })).toBeTruthy();
});

test('a resource with progress shows it', () => {
  render(
    <Providers resources={resources}>
      <Overview theme="light" />
    </Providers>,
  );
  const bar = screen.getByRole('progressbar', { name: 'downloading image' });
  expect(bar.getAttribute('aria-valuenow')).toBe('40');
});

test('viewers get no sync buttons', () => {
  render(
    <Providers role="viewer" resources={resources}>
      <Overview theme="light" />
    </Providers>,
  );
  expect(screen.queryByRole('button', { name: /Sync all|Refresh/ })).toBeNull();
});

test('an empty daemon says why the page is empty', () => {
  render(
    <Providers resources={[]}>
      <Overview theme="light" />
    </Providers>,
  );
  expect(screen.getByText('No resources yet')).toBeTruthy();
});

test('the banner lists several manifest errors one per item', () => {
  const base = resourcesValue(resources);
  const state = reduceResources(base.state, [
    { type: 'pass', pass: { revision: '3f2c1e0a9b8c7d6e', sourceError: 'manifests at 9a1b2c3d are invalid: vms/a.yaml:4:8: unknown field coers\nvms/b.yaml:2:1: unknown kind Vm' } },
  ]);
  render(
    <Providers value={{ ...base, state }}>
      <Overview theme="light" />
    </Providers>,
  );
  const banner = screen.getByText(/Git source:/);
  expect([...banner.querySelectorAll('li')].map((li) => li.textContent)).toEqual([
    'manifests at 9a1b2c3d are invalid: vms/a.yaml:4:8: unknown field coers',
    'vms/b.yaml:2:1: unknown kind Vm',
  ]);
});
