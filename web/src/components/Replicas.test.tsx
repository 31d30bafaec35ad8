import { act, render, screen } from '@testing-library/react';
import { expect, test, vi } from 'vitest';
import type { ReplicaStatus } from '../api/types';
import { fakeTimeouts, mockFetch, settle } from '../test/helpers';
import { POLL_MS, ReplicaBadge, replicaText } from './Replicas';

const leaderA = { replica: 'a', host: 'pve-ops-1', pid: 4242, since: new Date(Date.now() - 5 * 60_000).toISOString(), term: 7 };

test.each<[string, ReplicaStatus, RegExp | '']>([
  ['a follower names the leader and when it took over', { role: 'follower', replica: 'b', leader: leaderA }, /^Replica b · leader a, took over 5m ago$/],
  ['the leader says it is this replica', { role: 'leader', replica: 'a', leader: leaderA }, /^Leader: this replica \(a\)$/],
  ['a failover says no replica leads', { role: 'follower', replica: 'b' }, /no leader \(failover under way\)/],
  ['a single daemon says nothing', { role: 'single', replica: 'h' }, ''],
])('%s', (_name, st, want) => {
  const { text, title } = replicaText(st);
  if (want === '') {
    expect(text).toBe('');
    return;
  }
  expect(text).toMatch(want);
  if (st.leader) expect(title).toContain('pid 4242');
});

test('the badge asks the daemon and shows the leader as a status', async () => {
  const calls = mockFetch(({ url }) => (url === '/api/v1/replicas' ? { body: { role: 'follower', replica: 'b', leader: leaderA } } : undefined));
  render(<ReplicaBadge />);
  const badge = await screen.findByRole('status');
  expect(badge.textContent).toMatch(/leader a/);
  expect(badge.getAttribute('title')).toContain('forwards actions to the leader');
  expect(calls.map((c) => c.url)).toEqual(['/api/v1/replicas']);
});

test('a daemon that does not answer the question shows no badge', async () => {
  const calls = mockFetch(() => ({ status: 404, body: { error: 'no route' } }));
  const { container } = render(<ReplicaBadge />);
  await vi.waitFor(() => expect(calls.length).toBe(1));
  expect(container.textContent).toBe('');
});

test('the badge asks again, after a failure too, and shows the new leader', async () => {
  fakeTimeouts();
  let answers = [
    { status: 503, body: { error: 'restarting' } },
    { body: { role: 'follower', replica: 'b', leader: leaderA } },
    { body: { role: 'follower', replica: 'b', leader: { ...leaderA, replica: 'c', term: 8 } } },
  ];
  const calls = mockFetch(({ url }) => {
    if (url !== '/api/v1/replicas') return undefined;
    const [next, ...rest] = answers;
    answers = rest.length ? rest : [next];
    return next;
  });
  const { container } = render(<ReplicaBadge />);
  for (const want of [/leader a/, /leader c/]) {
    // The next read is due once the last answer (the first: a failure) is read.
    await settle('the next read timed', () => vi.getTimerCount() > 0);
    if (want.source === 'leader a') expect(container.textContent).toBe('');
    act(() => {
      vi.advanceTimersByTime(POLL_MS);
    });
    const badge = await settle(`a badge with ${want}`, () => {
      const b = screen.queryByRole('status');
      return b && want.test(b.textContent ?? '') ? b : null;
    });
    expect(badge.textContent).toMatch(want);
  }
  expect(calls).toHaveLength(3);
});
