// useApiGet is the one way a component loads a document: it reads path when
// the component shows it and again when path or deps change, aborts the read
// a newer one replaces (or the component leaving), and, with every, reads
// again that many milliseconds after each answer. A null path reads nothing.
// The last document stays shown while the next one loads; an answer clears
// the error.

import { useEffect, useState } from 'react';
import { api, errorMessage } from './client';

export interface ApiGet<T> {
  data: T | null;
  error: string;
  setData: (d: T | null) => void;
  setError: (e: string) => void;
}

export function useApiGet<T>(path: string | null, deps: readonly unknown[] = [], every = 0): ApiGet<T> {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState('');
  useEffect(() => {
    if (path === null) return;
    const ctrl = new AbortController();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = () =>
      api
        .get<T>(path, ctrl.signal)
        .then((d) => {
          setData(d);
          setError('');
          if (every > 0) timer = setTimeout(read, every);
        })
        .catch((err) => {
          if ((err as Error).name !== 'AbortError') setError(errorMessage(err));
        });
    read();
    return () => {
      ctrl.abort();
      clearTimeout(timer);
    };
    // eslint-disable-next-line react-hooks/exhaustive-deps -- deps are the caller's reasons to read again
  }, [path, every, ...deps]);
  return { data, error, setData, setError };
}
