import { useSyncExternalStore } from 'react';

// useMediaQuery follows a CSS media query, e.g. the phone breakpoint of
// styles.css, for layouts CSS alone cannot switch (row heights of a
// windowed list).
export function useMediaQuery(query: string): boolean {
  return useSyncExternalStore(
    (notify) => {
      if (typeof matchMedia !== 'function') return () => {};
      const mq = matchMedia(query);
      mq.addEventListener('change', notify);
      return () => mq.removeEventListener('change', notify);
    },
    () => typeof matchMedia === 'function' && matchMedia(query).matches,
    () => false,
  );
}

// PHONE is styles.css's phone breakpoint.
export const PHONE = '(max-width: 700px)';
