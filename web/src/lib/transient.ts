import { useCallback, useEffect, useRef, useState } from 'react';

// How long a transient banner ("Sync requested.") stays before it goes by itself.
export const TRANSIENT_MS = 6000;

// useTransient is a message state that clears itself TRANSIENT_MS after it was set.
export function useTransient(ms = TRANSIENT_MS): [string, (msg: string) => void] {
  const [msg, setMsg] = useState('');
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const set = useCallback(
    (m: string) => {
      clearTimeout(timer.current);
      setMsg(m);
      if (m) timer.current = setTimeout(() => setMsg(''), ms);
    },
    [ms],
  );
  useEffect(() => () => clearTimeout(timer.current), []);
  return [msg, set];
}
