// A tiny history router: the app has five pages and query-string state, which does
// not need a routing library.

import { useSyncExternalStore, type AnchorHTMLAttributes, type MouseEvent } from 'react';

const listeners = new Set<() => void>();

function notify() {
  for (const l of listeners) l();
}

if (typeof window !== 'undefined') window.addEventListener('popstate', notify);

function subscribe(l: () => void) {
  listeners.add(l);
  return () => listeners.delete(l);
}

function snapshot(): string {
  return window.location.pathname + window.location.search;
}

export interface Location {
  pathname: string;
  search: string;
}

export function useLocation(): Location {
  const href = useSyncExternalStore(subscribe, snapshot, snapshot);
  const i = href.indexOf('?');
  return i < 0 ? { pathname: href, search: '' } : { pathname: href.slice(0, i), search: href.slice(i) };
}

export function navigate(to: string, opts: { replace?: boolean } = {}): void {
  if (to === snapshot()) return;
  if (opts.replace) window.history.replaceState(null, '', to);
  else window.history.pushState(null, '', to);
  notify();
}

// setQuery replaces the query of the current page; filter typing uses replace so
// the back button is not flooded with keystrokes.
export function setQuery(params: URLSearchParams, opts: { replace?: boolean } = {}): void {
  const q = params.toString();
  navigate(window.location.pathname + (q ? `?${q}` : ''), opts);
}

export function Link({ href, onClick, ...rest }: AnchorHTMLAttributes<HTMLAnchorElement> & { href: string }) {
  const handle = (e: MouseEvent<HTMLAnchorElement>) => {
    onClick?.(e);
    if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };
  return <a href={href} onClick={handle} {...rest} />;
}
