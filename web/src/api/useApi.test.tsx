import { act, render } from '@testing-library/react';
import { afterEach, expect, test, vi } from 'vitest';
import { fakeTimeouts, heldFetch } from '../test/helpers';
import { useApiGet, type ApiGet, type ApiGetOptions } from './useApi';

let seen: ApiGet<{ v: number }> | null = null;
function Probe({ path, opts }: { path: string | null; opts?: ApiGetOptions }) {
  seen = useApiGet<{ v: number }>(path, opts);
  return null;
}

afterEach(() => {
  seen = null;
});

// loaded renders a probe of path and answers its first read with { v: 1 }.
async function loaded(path: string, opts?: ApiGetOptions) {
  const fetch = heldFetch();
  const { rerender } = render(<Probe path={path} opts={opts} />);
  await fetch.reads(1);
  await fetch.answer(0, { v: 1 });
  return { fetch, rerender };
}

async function reloadNow(fetch: ReturnType<typeof heldFetch>) {
  const n = fetch.urls().length;
  act(() => seen!.reload());
  await fetch.reads(n + 1);
}

test('an answer that comes after its path was replaced is dropped', async () => {
  const fetch = heldFetch();
  const { rerender } = render(<Probe path="/a" />);
  rerender(<Probe path="/b" />);
  await fetch.reads(2);
  await fetch.answer(1, { v: 2 });
  await fetch.answer(0, { v: 1 });
  expect(seen?.data).toEqual({ v: 2 });
});

test.each([
  ['keeps the last document while the next path loads', {}, { v: 1 }],
  ['with fresh, shows nothing of the last path while the next loads', { fresh: true }, null],
])('%s', async (_name, opts: ApiGetOptions, shown) => {
  const { fetch, rerender } = await loaded('/a', opts);
  expect(seen?.loading).toBe(false);
  rerender(<Probe path="/b" opts={opts} />);
  await fetch.reads(2);
  expect(seen?.data).toEqual(shown);
  expect(seen?.loading).toBe(true);
});

test('with fresh, a reload keeps the document shown until its answer', async () => {
  const { fetch } = await loaded('/a', { fresh: true });
  await reloadNow(fetch);
  expect(seen?.data).toEqual({ v: 1 });
  await fetch.answer(1, { v: 2 });
  expect(seen?.data).toEqual({ v: 2 });
});

test.each([
  ['a failure keeps the document and says why', {}, { v: 1 }],
  ['with dropOnError, a failure drops the document', { dropOnError: true }, null],
])('%s; the next answer clears the error', async (_name, opts: ApiGetOptions, kept) => {
  const { fetch } = await loaded('/a', opts);
  await reloadNow(fetch);
  await fetch.answer(1, { error: 'no such thing' }, 404);
  expect(seen).toMatchObject({ data: kept, error: 'no such thing', status: 404 });
  await reloadNow(fetch);
  await fetch.answer(2, { v: 3 });
  expect(seen).toMatchObject({ data: { v: 3 }, error: '', status: 0 });
});

test('reloads asked for within the delay are one read, after the delay', async () => {
  fakeTimeouts();
  const { fetch } = await loaded('/a');
  act(() => {
    seen!.reload(400);
    vi.advanceTimersByTime(200);
    seen!.reload(400);
    seen!.reload(400);
    vi.advanceTimersByTime(199);
  });
  expect(fetch.urls()).toHaveLength(1);
  act(() => {
    vi.advanceTimersByTime(1);
  });
  await fetch.reads(2);
  act(() => {
    vi.advanceTimersByTime(1000);
  });
  expect(fetch.urls()).toHaveLength(2);
});

test('a delayed reload is dropped when the path changes before it', async () => {
  fakeTimeouts();
  const fetch = heldFetch();
  const { rerender } = render(<Probe path="/a" />);
  await fetch.reads(1);
  act(() => seen!.reload(400));
  rerender(<Probe path="/b" />);
  await fetch.reads(2);
  act(() => {
    vi.advanceTimersByTime(1000);
  });
  expect(fetch.urls()).toEqual(['/a', '/b']);
});

test('with every, it reads again that long after each answer', async () => {
  fakeTimeouts();
  const { fetch } = await loaded('/log', { every: 1500 });
  act(() => {
    vi.advanceTimersByTime(1499);
  });
  expect(fetch.urls()).toHaveLength(1);
  act(() => {
    vi.advanceTimersByTime(1);
  });
  await fetch.reads(2);
  expect(seen?.loading).toBe(false);
});

test('with every, a failed read ends the polling unless pollFailures asks again', async () => {
  fakeTimeouts();
  for (const pollFailures of [false, true]) {
    const fetch = heldFetch();
    const { unmount } = render(<Probe path="/replicas" opts={{ every: 1000, pollFailures, dropOnError: true }} />);
    await fetch.reads(1);
    await fetch.answer(0, { error: 'down' }, 503);
    expect(seen?.data).toBeNull();
    act(() => {
      vi.advanceTimersByTime(1000);
    });
    if (!pollFailures) {
      expect(fetch.urls()).toHaveLength(1);
      unmount();
      continue;
    }
    await fetch.reads(2);
    await fetch.answer(1, { v: 2 });
    expect(seen?.data).toEqual({ v: 2 });
    unmount();
  }
});
