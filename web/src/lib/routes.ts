// The pages of the dashboard, one entry each: the navigation lists them, App.tsx
// renders them (a Record over RoutePath, so a page without an entry does not
// compile), and the browser tests check every one for accessibility and phone
// layout (e2e/scenario.e2e.ts fails on a route it has no view of).

export interface Route {
  path: string;
  label: string;
  // Shown in the navigation to administrators only.
  admin?: boolean;
}

export const ROUTES = [
  { path: '/', label: 'Overview' },
  { path: '/plan', label: 'Plan' },
  { path: '/revisions', label: 'Revisions' },
  { path: '/previews', label: 'Previews' },
  { path: '/logs', label: 'Logs' },
  { path: '/settings', label: 'Settings', admin: true },
] as const satisfies readonly Route[];

export type RoutePath = (typeof ROUTES)[number]['path'];

export function isRoute(path: string): path is RoutePath {
  return ROUTES.some((r) => r.path === path);
}
