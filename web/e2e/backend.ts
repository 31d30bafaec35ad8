// What the browser tests run against, handed from the global setup to the tests.

export interface BackendInfo {
  // The daemon's base URL and its one-time setup token.
  url: string;
  setupToken: string;
  // What the Settings page is filled with: the simulator and the example repository.
  cluster: { endpoint: string; tokenId: string; tokenSecret: string; fingerprint: string };
  source: { repoURL: string; revision: string };
  // The simulator's API, for changing the cluster behind proxmops' back.
  sim: { apiURL: string; authorization: string };
  // A branch of the repository that adds the VirtualMachine `planBranchAdds`.
  planBranch: string;
  planBranchAdds: string;
  // A declared guest whose VMID an unowned guest holds on the cluster (a Conflict).
  conflicting: string;
  // Where the daemon's and the simulator's output go, for a failing run.
  logDir: string;
}

declare module 'vitest' {
  export interface ProvidedContext {
    backend: BackendInfo;
  }
}
