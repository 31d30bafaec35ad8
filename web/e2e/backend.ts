// What the browser tests run against, shared from the global setup to the tests.

export interface BackendInfo {
  // 'daemon': `proxmops serve` with `proxmops sim`; 'stopgap': the stop-gap fake.
  kind: 'daemon' | 'stopgap';
  url: string;
  setupToken: string;
  // Where and how a test makes a guest drift on the (simulated) cluster.
  driftURL: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    backend: BackendInfo;
  }
}
