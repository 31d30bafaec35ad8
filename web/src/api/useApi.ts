// useApiGet is the one way a component loads a document: it reads path when
// the component shows it and again when path or deps change, aborts the read
// a newer one replaces (or the component leaving) and drops any answer that
// comes after that. A null path reads nothing.
//
// What stays shown while the next read runs: the last document and error,
// unless fresh is set, in which case a new path or new deps start empty (a
// reload() or a poll keeps them in either case). An answer clears the error;
// a failure keeps the document unless dropOnError is set.

import { useCallback, useEffect, useRef, useState } from 'react';
import { api, ApiError, errorMessage } from './client';

export interface ApiGetOptions {
  // The caller's other reasons to read again (a version, a revision).
  deps?: readonly unknown[];
  // Poll: read again this many milliseconds after each answer.
  every?: number;
  // With every, a failed read is asked again as well, the same time later
  // (a status that may come back, such as a restarting daemon's).
  pollFailures?: boolean;
  // A new path or new deps show nothing of the previous ones while they load.
  fresh?: boolean;
  // A failed read clears the document too.
  dropOnError?: boolean;
}

export interface ApiGet<T> {
  data: T | null;
  // The last failure's words; '' after an answer.
  error: string;
  // The last failure's HTTP status (404: no such document); 0 after an answer or
  // when no answer came at all.
  status: number;
  // A read for this path and deps runs and has not answered yet (polls and
  // reloads do not count).
  loading: boolean;
  // Reads again now, or with after > 0 in that many milliseconds: the calls
  // made meanwhile are one read (say, a burst of stream events).
  reload: (after?: number) => void;
  setData: (d: T | null) => void;
  setError: (e: string) => void;
}

interface Got<T> {
  key: readonly unknown[];
  data: T | null;
  error: string;
  status: number;
  loading: boolean;
}

const sameKey = (a: readonly unknown[], b: readonly unknown[]) => a.length === b.length && a.every((v, i) => Object.is(v, b[i]));

export function useApiGet<T>(path: string | null, opts: ApiGetOptions = {}): ApiGet<T> {
  const { deps = [], every = 0, pollFailures = false, fresh = false, dropOnError = false } = opts;
  const key = [path, ...deps];
  const keyRef = useRef(key);
  keyRef.current = key;
  const [got, setGot] = useState<Got<T>>({ key, data: null, error: '', status: 0, loading: path !== null });
  const [reloads, setReloads] = useState(0);
  const later = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);

  useEffect(() => {
    const key = keyRef.current;
    if (path === null) {
      setGot((s) => (s.loading ? { ...s, loading: false } : s));
      return;
    }
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    setGot((s) => (s.loading ? s : { ...s, loading: true }));
    const read = () =>
      api
        .get<T>(path, ctrl.signal)
        .then((data) => {
          if (ctrl.signal.aborted) return;
          setGot({ key, data, error: '', status: 0, loading: false });
          if (every > 0) timer = setTimeout(read, every);
        })
        .catch((err) => {
          if (ctrl.signal.aborted || (err as Error).name === 'AbortError') return;
          setGot((s) => ({
            key,
            data: dropOnError || (fresh && !sameKey(s.key, key)) ? null : s.data,
            error: errorMessage(err),
            status: err instanceof ApiError ? err.status : 0,
            loading: false,
          }));
          if (every > 0 && pollFailures) timer = setTimeout(read, every);
        });
    read();
    return () => {
      ctrl.abort();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- deps are the caller's reasons to read again
  }, [path, every, pollFailures, reloads, ...deps]);

  // A delayed reload belongs to the path it was asked for.
  useEffect(
    () => () => {
      clearTimeout(later.current);
      later.current = undefined;
    },
    [path],
  );
  const reload = useCallback((after = 0) => {
    if (after <= 0) {
      setReloads((n) => n + 1);
      return;
    }
    if (later.current !== undefined) return;
    later.current = setTimeout(() => {
      later.current = undefined;
      setReloads((n) => n + 1);
    }, after);
  }, []);
  const setData = useCallback((data: T | null) => setGot((s) => ({ ...s, key: keyRef.current, data })), []);
  const setError = useCallback((error: string) => setGot((s) => ({ ...s, key: keyRef.current, error })), []);

  if (fresh && !sameKey(got.key, key)) {
    return { data: null, error: '', status: 0, loading: path !== null, reload, setData, setError };
  }
  return { data: got.data, error: got.error, status: got.status, loading: path !== null && got.loading, reload, setData, setError };
}
