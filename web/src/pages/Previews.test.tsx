import { render, screen, within } from '@testing-library/react';
import { beforeEach, expect, test } from 'vitest';
import type { PlanDocument, PullRequest } from '../api/types';
import { mockFetch } from '../test/helpers';
import Previews, { changedActions, requestNoun } from './Previews';
import { partial } from '../test/partial';

beforeEach(() => window.history.replaceState(null, '', '/previews'));
const pr = (over: Partial<PullRequest>): PullRequest => ({
  forge: 'github',
  number: 7,
  title: 'More cores',
  url: 'https://github.com/you/homelab/pull/7',
  headRef: 'refs/pull/7/head',
  commit: 'aaaaaaaaaaaaaaaa',
  planned: 'aaaaaaaaaaaaaaaa',
  state: 'success',
  description: '0 to create, 1 to update, 0 to reboot, 0 to delete',
  errors: [],
  plan: partial<PlanDocument>({
    revision: 'aaaaaaaaaaaaaaaa',
    summary: { create: 0, update: 1, reboot: 0, delete: 0, conflict: 0, failed: 0, unknown: 0, needsReboot: 0, statuses: {} },
    actions: [
      { kind: 'VirtualMachine', name: 'web', action: 'update', reason: 'cores differ', changes: [{ field: 'cores', from: '1', to: '2' }] },
      { kind: 'VirtualMachine', name: 'db', action: 'none', status: 'Synced' },
    ],
  }),
  updatedAt: new Date().toISOString(),
  commentURL: 'https://github.com/you/homelab/pull/7#issuecomment-1',
  ...over,
});

test('each open request shows its status and what its plan changes', async () => {
  const calls = mockFetch(({ url }) =>
    url === '/api/v1/previews'
      ? {
          body: {
            enabled: true,
            requests: [
              pr({}),
              pr({ forge: 'github', number: 9, title: 'Broken', state: 'failure', plan: null, errors: ['vms/a.yaml:9:10: spec.cores: expected an integer'] }),
            ],
          },
        }
      : undefined,
  );
  window.history.replaceState(null, '', '/previews?request=7');
  render(<Previews />);
  const plan = await screen.findByRole('list', { name: 'Plan of pull request 7' });
  expect(within(plan).getByText('VirtualMachine/web')).toBeTruthy();
  expect(within(plan).getByText('2')).toBeTruthy();
  // A resource in sync is not listed.
  expect(within(plan).queryByText('VirtualMachine/db')).toBeNull();
  expect(screen.getByText('plan ok')).toBeTruthy();
  expect(screen.getByText('cannot merge as is')).toBeTruthy();
  expect(screen.getByText('vms/a.yaml:9:10: spec.cores: expected an integer')).toBeTruthy();
  expect(screen.getAllByRole('link', { name: 'its comment' })[0].getAttribute('href')).toBe('https://github.com/you/homelab/pull/7#issuecomment-1');
  expect(calls.map((c) => c.url)).toEqual(['/api/v1/previews']);
});

test('with previews off the page says how to turn them on', async () => {
  mockFetch(() => ({ body: { enabled: false, requests: [] } }));
  render(<Previews />);
  await screen.findByText(/Previews are off: set forge.pullRequestPreviews/);
});

test('GitLab requests are merge requests, and a blocked resource is listed though it changes nothing', () => {
  expect(requestNoun('gitlab')).toBe('merge request');
  expect(requestNoun('gitea')).toBe('pull request');
  const listed = changedActions([
    partial({ kind: 'VirtualMachine', name: 'a', action: 'none', status: 'Synced' }),
    partial({ kind: 'VirtualMachine', name: 'b', action: 'none', status: 'Conflict', reason: 'held by another VM' }),
    partial({ kind: 'Iso', name: 'c', action: 'create', status: 'Failed', reason: 'the API token lacks Datastore.AllocateTemplate' }),
  ]).map((a) => a.name);
  expect(listed.sort()).toEqual(['b', 'c']);
});
