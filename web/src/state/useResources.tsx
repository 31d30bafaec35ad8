import { createContext, useCallback, useContext, useEffect, useMemo, useReducer, useRef, useState, type ReactNode } from 'react';
import { api, errorMessage } from '../api/client';
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

export function ResourcesProvider({ children }: { children: ReactNode }) {
  const [state, dispatch] = useReducer(reduceResources, initialResourceState);
  const [conn, setConn] = useState<ConnState>('connecting');
  const [error, setError] = useState('');
  const [reloadTick, setReloadTick] = useState(0);
  const listeners = useRef(new Set<(ev: ResourceEvent) => void>());

  useEffect(() => {
    let cancelled = false;
    let loaded = false;
    let queue: ResourceEvent[] = [];
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ctrl = new AbortController();

    const flush = () => {
      timer = undefined;
      if (!loaded || queue.length === 0) return;
      const batch = queue;
      queue = [];
      dispatch(batch);
    };
    const load = () => {
      api
        .get<Summary>('/api/v1/resources', ctrl.signal)
        .then((summary) => {
          if (cancelled) return;
          loaded = true;
          setError('');
          // Events that arrived while the request ran are applied on top of it; the
          // reducer ignores any that are older than what the snapshot holds.
          queue = [{ type: 'snapshot', summary }, ...queue];
          flush();
        })
        .catch((err) => {
          if (!cancelled && (err as Error).name !== 'AbortError') setError(errorMessage(err));
        });
    };
    const close = openSSE('/api/v1/events', {
      events: ['resource', 'pass', 'deleted', 'snapshot'],
      onEvent: (type, data) => {
        const ev = parseEvent(type, data);
        if (!ev) return;
        for (const l of listeners.current) l(ev);
        queue.push(ev);
        if (loaded && timer === undefined) timer = setTimeout(flush, FLUSH_MS);
      },
      onState: (s) => !cancelled && setConn(s),
      onReopen: load,
    });
    load();
    return () => {
      cancelled = true;
      ctrl.abort();
      clearTimeout(timer);
      close();
    };
  }, [reloadTick]);

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
