import { useEffect, useState, useSyncExternalStore } from 'react';

// Theme: follow the system (prefers-color-scheme) unless the user picked one, which
// is remembered in localStorage. index.html applies it before the first paint.

export type ThemeChoice = 'system' | 'light' | 'dark';
const KEY = 'proxmops.theme';

export function readChoice(): ThemeChoice {
  try {
    const v = localStorage.getItem(KEY);
    return v === 'light' || v === 'dark' ? v : 'system';
  } catch {
    return 'system';
  }
}

function systemDark(): boolean {
  return typeof matchMedia === 'function' && matchMedia('(prefers-color-scheme: dark)').matches;
}

export function resolve(choice: ThemeChoice): 'light' | 'dark' {
  return choice === 'system' ? (systemDark() ? 'dark' : 'light') : choice;
}

function subscribeSystem(cb: () => void) {
  if (typeof matchMedia !== 'function') return () => {};
  const mq = matchMedia('(prefers-color-scheme: dark)');
  mq.addEventListener?.('change', cb);
  return () => mq.removeEventListener?.('change', cb);
}

export function useTheme(): { choice: ThemeChoice; resolved: 'light' | 'dark'; setChoice: (c: ThemeChoice) => void } {
  const [choice, setChoiceState] = useState<ThemeChoice>(readChoice);
  const dark = useSyncExternalStore(subscribeSystem, systemDark, () => false);
  const resolved = choice === 'system' ? (dark ? 'dark' : 'light') : choice;
  useEffect(() => {
    document.documentElement.dataset.theme = resolved;
  }, [resolved]);
  const setChoice = (c: ThemeChoice) => {
    try {
      if (c === 'system') localStorage.removeItem(KEY);
      else localStorage.setItem(KEY, c);
    } catch {
      /* storage may be disabled; the choice then lasts for this page */
    }
    setChoiceState(c);
  };
  return { choice, resolved, setChoice };
}
