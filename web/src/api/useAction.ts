// useAction is the one way a component runs what a person asks of the daemon (a
// request that changes something): busy names the action under way ('' when none),
// error holds the words of the last one that failed, cleared as the next one starts.

import { useCallback, useState } from 'react';
import { errorMessage } from './client';

export interface Action<B extends string> {
  busy: B | '';
  error: string;
  setError: (error: string) => void;
  // run marks what busy while act runs and keeps what it throws as error.
  run: (what: B, act: () => Promise<void>) => Promise<void>;
}

export function useAction<B extends string>(): Action<B> {
  const [busy, setBusy] = useState<B | ''>('');
  const [error, setError] = useState('');
  const run = useCallback(async (what: B, act: () => Promise<void>) => {
    setBusy(what);
    setError('');
    try {
      await act();
    } catch (err) {
      setError(errorMessage(err));
    } finally {
      setBusy('');
    }
  }, []);
  return { busy, error, setError, run };
}
