import { createContext, useCallback, useContext, useEffect, useMemo, useReducer, useRef, useState, type ReactNode } from 'react';
import { useApiGet } from '../api/useApi';
import type { Summary } from '../api/types';
import { openSSE, type ConnState } from '../lib/sse';
import { initialResourceState, parseEvent, reduceResources, type ResourceEvent, type ResourceState } from './resources';

export interface ResourcesValue {
  state: ResourceState;
  conn: ConnState;
  error: string;
  // Subscribe to every event, e.g. so the open drawer refetches its resource.
  onEvent: (fn: (ev: ResourceEvent) => void) => () => void;
  reload: () => void;
}

export const ResourcesContext = createContext<ResourcesValue | null>(null);

export function useResources(): ResourcesValue {
  const v = useContext(ResourcesContext);
  if (!v) throw new Error('useResources outside ResourcesProvider');
  return v;
}

// Events are applied in batches: at most ~8 renders a second however busy the daemon is.
const FLUSH_MS = 120;

interface Pending {
  queue: ResourceEvent[];
  loaded: boolean;
  timer?: ReturnType<typeof setTimeout>;
}

const newPending = (): Pending => ({ queue: [], loaded: false });

function flush(p: Pending, dispatch: (batch: ResourceEvent[]) => void) {
  clearTimeout(p.timer);
  p.timer = undefined;
  if (!p.loaded || p.queue.length === 0) return;
  const batch = p.queue;
  p.queue = [];
  dispatch(batch);
}

export function ResourcesProvider({ children }: { children: ReactNode }) {
  const [state, dispatch] = useReducer(reduceResources, initialResourceState);
  const [conn, setConn] = useState<ConnState>('connecting');
  const [reloadTick, setReloadTick] = useState(0);
  const listeners = useRef(new Set<(ev: ResourceEvent) => void>());
  const { data: summary, error, reload: reloadSummary } = useApiGet<Summary>('/api/v1/resources', { deps: [reloadTick] });
  // The stream's events not yet applied; until the snapshot came, all of them.
  const pending = useRef<Pending>(newPending());

  useEffect(() => {
    let cancelled = false;
    const p = newPending();
    pending.current = p;
    const close = openSSE('/api/v1/events', {
      events: ['resource', 'pass', 'deleted', 'snapshot'],
      onEvent: (type, data) => {
        const ev = parseEvent(type, data);
        if (!ev) return;
        for (const l of listeners.current) l(ev);
        p.queue.push(ev);
        if (p.loaded && p.timer === undefined) p.timer = setTimeout(() => flush(p, dispatch), FLUSH_MS);
      },
      onState: (s) => !cancelled && setConn(s),
      onReopen: () => reloadSummary(),
    });
    return () => {
      cancelled = true;
      clearTimeout(p.timer);
      close();
    };
  }, [reloadTick, reloadSummary]);

  // Events that arrived while the snapshot was read are applied on top of it; the
  // reducer ignores any that are older than what the snapshot holds.
  useEffect(() => {
    if (!summary) return;
    const p = pending.current;
    p.loaded = true;
    p.queue = [{ type: 'snapshot', summary }, ...p.queue];
    flush(p, dispatch);
  }, [summary]);

  const onEvent = useCallback((fn: (ev: ResourceEvent) => void) => {
    listeners.current.add(fn);
    return () => {
      listeners.current.delete(fn);
    };
  }, []);
  const reload = useCallback(() => setReloadTick((t) => t + 1), []);
  const value = useMemo<ResourcesValue>(
    () => ({ state, conn, error, onEvent, reload }),
    [state, conn, error, onEvent, reload],
  );
  return <ResourcesContext.Provider value={value}>{children}</ResourcesContext.Provider>;
}
