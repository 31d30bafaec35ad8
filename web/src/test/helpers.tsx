import { act, fireEvent, render, screen, within } from '@testing-library/react';
import type { ReactNode } from 'react';
import { expect, vi } from 'vitest';
import type { Resource, Role } from '../api/types';
import { TRANSIENT_MS } from '../lib/transient';
import { reduceResources, initialResourceState } from '../state/resources';
import { SessionContext } from '../state/session';
import { ResourcesContext, type ResourcesValue } from '../state/useResources';
import { partial } from './partial';

export function resourcesValue(resources: Resource[], over: Partial<ResourcesValue> = {}): ResourcesValue {
  return {
    state: reduceResources(initialResourceState, [
      { type: 'snapshot', summary: partial({ revision: '3f2c1e0a9b8c7d6e', revisionMessage: 'vms: add app-03', lastPass: new Date().toISOString(), resources }) },
    ]),
    conn: 'live',
    error: '',
    onEvent: () => () => {},
    reload: () => {},
    ...over,
  };
}

export interface ProvidersProps {
  role?: Role;
  via?: string;
  resources?: Resource[];
  value?: ResourcesValue;
}

export function Providers({ role = 'admin', via, resources = [], value, children }: ProvidersProps & { children: ReactNode }) {
  return (
    <SessionContext.Provider value={{ me: { username: 'alice', role, csrfToken: 'csrf-1', via }, isAdmin: role === 'admin', logout: async () => {} }}>
      <ResourcesContext.Provider value={value ?? resourcesValue(resources)}>{children}</ResourcesContext.Provider>
    </SessionContext.Provider>
  );
}

// renderWith renders ui inside the session and the resources it would have in
// the app; rerenderWith renders it again, with other ones.
export function renderWith(ui: ReactNode, providers: ProvidersProps = {}) {
  const r = render(<Providers {...providers}>{ui}</Providers>);
  return { ...r, rerenderWith: (next: ReactNode, p: ProvidersProps = {}) => r.rerender(<Providers {...p}>{next}</Providers>) };
}

type Route = (init: RequestInit & { url: string }) => { status?: number; body?: unknown } | undefined;

// mockFetch answers fetch() from a route function and records every request.
export function mockFetch(route: Route) {
  const calls: { url: string; method: string; headers: Record<string, string>; body?: unknown }[] = [];
  const fn = vi.fn(async (input: RequestInfo | URL, init: RequestInit = {}) => {
    const url = String(input);
    const method = init.method ?? 'GET';
    const headers = (init.headers ?? {}) as Record<string, string>;
    const body = typeof init.body === 'string' ? JSON.parse(init.body) : undefined;
    calls.push({ url, method, headers, body });
    const answer = route({ ...init, url, method }) ?? { status: 404, body: { error: `no route ${method} ${url}` } };
    const status = answer.status ?? 200;
    return new Response(answer.body === undefined ? '' : JSON.stringify(answer.body), { status, headers: { 'Content-Type': 'application/json' } });
  });
  vi.stubGlobal('fetch', fn);
  return calls;
}

// fakeTimeouts fakes setTimeout and clearTimeout only, and the fake clock moves only
// when the test advances it: a banner's timer fires exactly then. testing-library's
// findBy and waitFor wait on a real setTimeout, so wait with settle() meanwhile.
export function fakeTimeouts() {
  vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
}

// settle lets requests and renders run (real event-loop turns) until find() returns
// something, and returns it.
export async function settle<T>(what: string, find: () => T | null | undefined): Promise<T> {
  for (let i = 0; i < 1000; i++) {
    const found = find();
    if (found) return found;
    await act(async () => {
      await new Promise((r) => setImmediate(r));
    });
  }
  throw new Error(`never came: ${what}`);
}

// expectTransient checks that what find() shows is still there 1 ms before
// TRANSIENT_MS and gone at TRANSIENT_MS (with fakeTimeouts, from the moment it came).
export function expectTransient(what: string, find: () => unknown) {
  act(() => {
    vi.advanceTimersByTime(TRANSIENT_MS - 1);
  });
  expect(find(), `${what}, 1 ms before TRANSIENT_MS`).toBeTruthy();
  act(() => {
    vi.advanceTimersByTime(1);
  });
  expect(find(), `${what}, at TRANSIENT_MS`).toBeFalsy();
}

// expectStays checks that what find() shows is still there long after TRANSIENT_MS.
export function expectStays(what: string, find: () => unknown) {
  act(() => {
    vi.advanceTimersByTime(10 * TRANSIENT_MS);
  });
  expect(find(), `${what}, long after TRANSIENT_MS`).toBeTruthy();
}

// heldFetch answers no fetch() by itself: each request waits until the test
// answers it (with answer(i, ...)), so a test decides which answer comes first.
export function heldFetch() {
  const held: { url: string; answer: (status: number, body: unknown) => void }[] = [];
  vi.stubGlobal(
    'fetch',
    vi.fn(
      (input: RequestInfo | URL) =>
        new Promise<Response>((resolve) => {
          held.push({ url: String(input), answer: (status, body) => resolve(new Response(JSON.stringify(body), { status })) });
        }),
    ),
  );
  return {
    urls: () => held.map((h) => h.url),
    // reads waits until n requests were made.
    reads: (n: number) => settle(`${n} reads`, () => held.length >= n),
    answer: async (i: number, body: unknown, status = 200) => {
      await act(async () => {
        held[i].answer(status, body);
        await new Promise((r) => setImmediate(r));
      });
    },
  };
}

// expectErrorStays waits for the alert of a refused action, checks that it says
// words, that no success notice shows beside it, that it stays long after
// TRANSIENT_MS (with fakeTimeouts) and that Dismiss takes it away.
export async function expectErrorStays(what: string, words: string) {
  const error = () => screen.queryByRole('alert');
  expect((await settle(what, error)).textContent).toContain(words);
  expect(screen.queryByRole('status')).toBeNull();
  expectStays(what, error);
  fireEvent.click(within(error()!).getByRole('button', { name: 'Dismiss' }));
  expect(error()).toBeNull();
}
