import { fireEvent, render, screen } from '@testing-library/react';
import { afterEach, beforeEach, expect, test, vi } from 'vitest';
import type { PlanAction } from '../api/types';
import { mockFetch } from '../test/helpers';
import Plan, { planDelta, sortPlan } from './Plan';

const a = (name: string, action: PlanAction['action'], conflict = false): PlanAction => ({ kind: 'VirtualMachine', name, action, conflict });

beforeEach(() => window.history.replaceState(null, '', '/plan'));
afterEach(() => vi.unstubAllGlobals());

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

test('the summary counts the actions to carry out and every resource by status', async () => {
  mockFetch(({ url }) =>
    url === '/api/v1/plan'
      ? {
          body: {
            revision: 'aaaaaaaaaaaaaaaa',
            summary: { create: 0, failed: 1, statuses: { Synced: 3, OutOfSync: 1, Failed: 1 } },
            actions: [{ ...a('iso', 'create'), reason: "storage 'nosuch' does not exist" }],
          },
        }
      : undefined,
  );
  render(<Plan />);
  const summary = await screen.findByLabelText('Summary');
  expect(summary.textContent).toContain('0 create');
  expect(summary.textContent).toContain('3 Synced');
  expect(summary.textContent).toContain('1 Failed');
  expect(summary.textContent).not.toContain('none');
});
