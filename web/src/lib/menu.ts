// A <details> drop-down menu (the user menu, MultiSelect) closes when the
// mouse is pressed anywhere outside it.

import { useEffect, useRef } from 'react';

export function useMenuRef() {
  const ref = useRef<HTMLDetailsElement>(null);
  useEffect(() => {
    const onDoc = (e: MouseEvent) => {
      if (ref.current?.open && !ref.current.contains(e.target as Node)) ref.current.open = false;
    };
    document.addEventListener('mousedown', onDoc);
    return () => document.removeEventListener('mousedown', onDoc);
  }, []);
  return ref;
}
