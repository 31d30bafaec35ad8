import { act, render } from '@testing-library/react';
import { beforeEach, expect, test, vi } from 'vitest';
import { ResourcesProvider, useResources } from './useResources';

class FakeEventSource {
  static instances: FakeEventSource[] = [];
  static CLOSED = 2;
  readyState = 0;
  onopen: (() => void) | null = null;
  onerror: (() => void) | null = null;
  listeners = new Map<string, ((e: MessageEvent) => void)[]>();
  constructor(readonly url: string) {
    FakeEventSource.instances.push(this);
  }
  addEventListener(type: string, fn: (e: MessageEvent) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), fn]);
  }
  emit(type: string, data: unknown) {
    for (const fn of this.listeners.get(type) ?? []) fn(new MessageEvent(type, { data: JSON.stringify(data) }));
  }
  close() {
    this.readyState = 2;
  }
}

let seen: ReturnType<typeof useResources> | null = null;
function Probe() {
  seen = useResources();
  return null;
}

beforeEach(() => {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  FakeEventSource.instances = [];
  vi.stubGlobal('EventSource', FakeEventSource);
});
test('the snapshot loads, then stream events apply in batches, and earlier ones are not lost', async () => {
  let answer: (v: unknown) => void = () => {};
  const pending = new Promise((r) => (answer = r));
  vi.stubGlobal(
    'fetch',
    vi.fn(async () => {
      await pending;
      return new Response(JSON.stringify({ revision: 'r1', resources: [{ kind: 'Iso', name: 'a', status: 'OutOfSync', updatedAt: '2026-11-30T10:00:00Z' }] }));
    }),
  );
  render(
    <ResourcesProvider>
      <Probe />
    </ResourcesProvider>,
  );
  const es = FakeEventSource.instances[0];
  expect(es.url).toBe('/api/v1/events');
  act(() => {
    es.onopen?.();
    // Arrives before the snapshot: kept and applied after it.
    es.emit('resource', { kind: 'Iso', name: 'b', status: 'Synced' });
  });
  expect(seen?.conn).toBe('live');
  await act(async () => {
    answer(null);
    await pending;
    await Promise.resolve();
    await Promise.resolve();
  });
  expect([...seen!.state.byKey.keys()].sort()).toEqual(['Iso/a', 'Iso/b']);
  act(() => {
    es.emit('resource', { kind: 'Iso', name: 'a', status: 'Synced', updatedAt: '2026-11-30T10:00:05Z' });
    es.emit('deleted', { kind: 'Iso', name: 'b' });
    es.emit('pass', { revision: 'r2' });
  });
  // Nothing is rendered until the batch is flushed.
  expect(seen!.state.byKey.get('Iso/a')?.status).toBe('OutOfSync');
  act(() => {
    vi.advanceTimersByTime(500);
  });
  expect(seen!.state.byKey.get('Iso/a')?.status).toBe('Synced');
  expect(seen!.state.byKey.has('Iso/b')).toBe(false);
  expect(seen!.state.revision).toBe('r2');
});
