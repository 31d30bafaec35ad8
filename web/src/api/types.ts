// JSON shapes of the daemon's API, as fixed by docs/api.md. The unions
// Status, Health, Action, SyncPolicy and Hold and the interface Change are the
// vocabulary of internal/vocab/vocab.go; its TestTypeScriptUnionsMatch
// fails when they disagree.

export const STATUSES = ['Synced', 'OutOfSync', 'Progressing', 'Failed', 'Conflict', 'Unknown'] as const;
export type Status = (typeof STATUSES)[number];

export const HEALTHS = ['Healthy', 'Progressing', 'Suspended', 'Missing', 'Degraded', 'Unknown'] as const;
export type Health = (typeof HEALTHS)[number];

export type Action = 'create' | 'update' | 'reboot' | 'delete' | 'none';
export type HistoryEvent = 'created' | 'drifted' | 'synced' | 'applied' | 'failed' | 'deleted' | 'rolledBack' | 'adopted' | 'moved' | 'health';
export type SyncPolicy = 'auto' | 'manual' | 'disabled';
export type Role = 'admin' | 'viewer';
// What started an action or wrote a history entry (api.ActorKind).
export type ActorKind = 'pass' | 'user' | 'token' | 'webhook' | 'cli' | 'commit';

export interface Actor {
  kind: ActorKind;
  // The user, the token, the forge, the OS user of a command, a commit's author.
  name?: string;
  // 'oidc' for a user who logged in by single sign-on.
  via?: string;
  // A webhook's delivery id.
  delivery?: string;
  // The API token the CLI acted through.
  token?: string;
}

export interface Change {
  // The Proxmox key ("net1").
  field: string;
  // The manifest path of the field ("spec.net[1].bridge"), when known.
  path?: string;
  from: string;
  to: string;
  // Proxmox already holds the value as pending: it takes effect when the guest restarts.
  pending?: boolean;
  // Why the change is listed but never applied (absent: it is applied).
  hold?: Hold;
}

// Why a listed change is never applied (vocab.Hold).
export type Hold = 'creation-only' | 'grown since adoption';

export interface Progress {
  task?: string;
  message?: string;
  percent?: number;
}

export interface Resource {
  // The cluster it belongs to: its name in the clusters list, "default" for
  // the single cluster section (absent from older daemons).
  cluster?: string;
  kind: string;
  name: string;
  node?: string;
  // The node metadata.node names when the guest is on another one (node):
  // moved by HA or a migration, left where it is and counted in sync.
  manifestNode?: string;
  vmid?: number;
  tags?: string[] | null;
  status: Status;
  health?: Health;
  action?: Action;
  reason?: string;
  needsReboot?: boolean;
  changes?: Change[] | null;
  owned?: boolean;
  syncPolicy?: SyncPolicy;
  file?: string;
  // Declared resources this one needs (absent: none); see Dependency.
  dependsOn?: Dependency[] | null;
  progress?: Progress | null;
  updatedAt?: string;
  // Set while the cluster cannot be observed (status Unknown): when what is
  // shown was last read from the cluster; absent when it never was.
  lastObserved?: string | null;
}

// How a resource needs another (internal/api Relation*): a VM clones a
// Template and mounts an Iso, a Container is builtFrom a ContainerTemplate,
// a guest uses the vnet or bridge of its NICs, a vnet is inZone a zone.
export type Relation = 'clones' | 'mounts' | 'builtFrom' | 'uses' | 'inZone';

export interface Dependency {
  kind: string;
  name: string;
  relation: Relation;
}

export type Counts = Partial<Record<Status, number>>;

export interface Summary {
  revision: string;
  revisionMessage?: string;
  lastPass?: string;
  passDurationMs?: number;
  // What keeps the Git source from being read.
  sourceError?: string;
  // Why the last pass could not observe the cluster ("" when it did), and
  // when it last did (null: not since the daemon started).
  clusterError?: string;
  lastObserved?: string | null;
  loadError?: LoadError;
  counts?: Counts;
  resources: Resource[];
  // The revision applied instead of the branch head (absent when none).
  pinned?: Pin | null;
  // Each cluster's own pass status, in configuration order (a clusters list).
  clusters?: ClusterStatus[] | null;
}

// ClusterStatus is one cluster's pass status in Summary.clusters.
export interface ClusterStatus {
  name: string;
  revision: string;
  revisionMessage?: string;
  lastPass?: string | null;
  passDurationMs?: number;
  sourceError?: string;
  clusterError?: string;
  lastObserved?: string | null;
  counts?: Counts;
  // Pins and load errors are per cluster (?cluster= on the pin routes).
  pinned?: Pin | null;
  loadError?: LoadError | null;
}

// LoadError: the branch head's manifests failed to load; what is shown is the
// last good revision's. One error per item (file:line:column: message).
export interface LoadError {
  revision: string;
  errors: string[];
}

export interface PassEvent {
  cluster?: string;
  revision: string;
  revisionMessage?: string;
  passDurationMs?: number;
  lastPass?: string;
  counts?: Counts;
  sourceError?: string;
  // As in Summary (absent from older daemons).
  clusterError?: string;
  lastObserved?: string | null;
  // The head's load failure; null once it loads (absent from older daemons).
  loadError?: LoadError | null;
  pinned?: Pin | null;
}

export interface Pin {
  revision: string;
  message?: string;
  by?: string;
  at?: string;
}

export interface RevisionResult {
  firstPass: string;
  lastPass: string;
  counts?: Counts;
  events?: Partial<Record<HistoryEvent, number>>;
}

export interface Revision {
  hash: string;
  time: string;
  author: string;
  message: string;
  current: boolean;
  pinned: boolean;
  result: RevisionResult | null;
  // Set on the branch head while its manifests fail to load, one error each.
  loadErrors?: string[];
}

export interface RevisionList {
  branch: string;
  pinned: Pin | null;
  revisions: Revision[];
}

export interface HistoryEntry {
  id: number;
  event: HistoryEvent;
  commit?: string;
  time: string;
  message?: string;
  // What started it; absent on entries recorded before proxmops kept it.
  actor?: Actor;
  // Whose event, in a listing across resources (CommitHistory).
  kind?: string;
  name?: string;
  // Its cluster of a clusters list, in such a listing.
  cluster?: string;
}

// GET /api/v1/revisions/{commit}/history: what was recorded at one commit.
export interface CommitHistory {
  commit: string;
  entries: HistoryEntry[];
}

export interface Manifest {
  apiVersion?: string;
  kind?: string;
  metadata?: Record<string, unknown>;
  spec?: Record<string, unknown>;
}

export interface Observed {
  config?: Record<string, unknown> | null;
  status?: string;
  [key: string]: unknown;
}

export interface ResourceDetail extends Resource {
  desired: Manifest | null;
  observed: Observed | null;
  history?: HistoryEntry[] | null;
  /** When the daemon last read the guest's full configuration (RFC 3339). */
  configReadAt?: string;
  /** Proxmox key -> manifest path, for kinds whose keys differ from the manifest's (Network, SDN). */
  fieldPaths?: Record<string, string>;
}

// POST /api/v1/resources/{kind}/{name}/adopt (docs/api.md, "Adoption").
export interface AdoptResult {
  kind: string;
  name: string;
  node: string;
  vmid: number;
  revision: string;
  dryRun: boolean;
  adopted: boolean;
  plan: PlanAction;
  message: string;
}

export interface PlanAction {
  // Set in a plan of several clusters (and on one cluster's plan of a clusters list).
  cluster?: string;
  kind: string;
  name: string;
  node?: string;
  // As Resource.manifestNode: the guest was moved off the node its manifest names.
  manifestNode?: string;
  vmid?: number;
  action: Action;
  reason?: string;
  changes?: Change[] | null;
  needsReboot?: boolean;
  blockedBy?: string;
  conflict?: boolean;
  // The status the summary counts it under; Failed or Unknown with an action
  // means the action cannot be carried out (the CLI's "(cannot be planned)").
  status?: Status;
}

// PlanSummary: `statuses` puts every resource in exactly one status (as
// `counts` of the resource list); create..delete count what a sync would carry out.
export interface PlanSummary {
  create?: number;
  update?: number;
  reboot?: number;
  delete?: number;
  conflict?: number;
  failed?: number;
  unknown?: number;
  needsReboot?: number;
  statuses?: Counts;
}

export interface PlanDocument {
  cluster?: string;
  revision: string;
  summary: PlanSummary;
  actions: PlanAction[] | null;
  loadError?: LoadError;
}

// One open pull request (GitLab: merge request) and its last plan (docs/api.md,
// "Pull-request previews").
export interface PullRequest {
  forge: string;
  number: number;
  title: string;
  url: string;
  headRef: string;
  commit: string;
  planned: string;
  state: 'pending' | 'success' | 'failure' | 'error';
  description: string;
  errors: string[] | null;
  plan: PlanDocument | null;
  updatedAt: string;
  commentURL: string;
}

export interface PullRequestList {
  enabled: boolean;
  requests: PullRequest[];
}

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

export interface LogLine {
  id: number;
  time: string;
  level: LogLevel | string;
  msg: string;
  attrs?: Record<string, unknown> | null;
}

export interface Me {
  username: string;
  role: Role;
  csrfToken: string;
  // 'oidc' when signed in by single sign-on.
  via?: string;
}

// GET /api/v1/auth: how one may sign in.
export interface AuthMethods {
  password: boolean;
  oidc?: { name: string; loginURL: string };
}

export interface User {
  username: string;
  role: Role;
  createdAt?: string;
}

export interface ApiToken {
  id: string | number;
  name: string;
  role: Role;
  createdAt?: string;
  lastUsedAt?: string | null;
}

export interface NewToken {
  id: string | number;
  name: string;
  role: Role;
  token: string;
}

export interface ClusterSettings {
  endpoint: string;
  tokenId: string;
  tokenSecret: string;
  insecureSkipVerify: boolean;
  fingerprint: string;
  caFile: string;
}

export interface SourceSettings {
  repoURL: string;
  path: string;
  revision: string;
  username: string;
  token: string;
  sshKey: string;
  knownHostsFile?: string;
  insecureIgnoreHostKey?: boolean;
  submodules: boolean;
}

export interface ReconcileSettings {
  interval: string;
  autoSync: boolean;
  prune: boolean;
  concurrency: number;
  dryRun: boolean;
  driftCheckInterval?: string;
  historyPerResource?: number;
  historyTotal?: number;
}

// The forge that pull-request previews comment on (docs/configuration.md, "forge").
export interface ForgeSettings {
  type: '' | 'github' | 'gitea' | 'gitlab';
  apiURL: string;
  repository: string;
  token: string;
  pullRequestPreviews: boolean;
}

export interface Settings {
  cluster: ClusterSettings;
  source: SourceSettings;
  reconcile: ReconcileSettings;
  forge?: ForgeSettings;
  // Advice about the configuration; in answers only.
  warnings?: string[] | null;
}

// What an action (sync, delete, refresh) answers: it starts work and does not wait.
export interface ActionAccepted {
  status?: string;
}

// One line of a check report (GET /api/v1/check, POST /api/v1/settings/test,
// `proxmops check`): ok is false for FAIL only; fix says what to do.
export type CheckLevel = 'OK' | 'WARN' | 'FAIL';

export interface Check {
  name: string;
  ok: boolean;
  level?: CheckLevel;
  message?: string;
  fix?: string;
}

export interface TestResult {
  ok: boolean;
  checks: Check[];
}

// The cluster of the single `cluster:` section (config.DefaultClusterName).
export const DEFAULT_CLUSTER = 'default';

// resourceKey identifies a resource in the UI (store, URL `r`, graph): kind/name,
// prefixed with its cluster ("home:VirtualMachine/app-01") when it is in a
// clusters list, where two clusters may each declare app-01.
export function resourceKey(r: { cluster?: string; kind: string; name: string }): string {
  const base = `${r.kind}/${r.name}`;
  return r.cluster && r.cluster !== DEFAULT_CLUSTER ? `${r.cluster}:${base}` : base;
}

// parseResourceKey reads resourceKey back; cluster is "" for the single cluster.
export function parseResourceKey(key: string): { cluster: string; kind: string; name: string } {
  const slash = key.indexOf('/');
  const head = slash < 0 ? key : key.slice(0, slash);
  const colon = head.indexOf(':');
  return {
    cluster: colon < 0 ? '' : head.slice(0, colon),
    kind: head.slice(colon + 1),
    name: slash < 0 ? '' : key.slice(slash + 1),
  };
}

// GET /api/v1/resources/{kind}/{name}/snapshots (VirtualMachine, Container).
export interface Snapshot {
  name: string;
  description: string;
  time: number; // Unix seconds
  parent?: string;
  vmstate: boolean;
  proxmops: boolean; // a proxmops-* snapshot, taken before a change and pruned by proxmops
  // Why Proxmox would refuse a rollback to it (a newest-only storage: ZFS, LVM, snapshot-as-volume-chain).
  rollbackBlocked?: string;
}

export interface SnapshotList {
  kind: string;
  name: string;
  node: string;
  vmid: number;
  running: boolean;
  current?: string;
  snapshots: Snapshot[];
  syncPolicy: SyncPolicy;
}

// POST /api/v1/resources/{kind}/{name}/rollback answers when the rollback is done.
export interface RollbackResult {
  kind: string;
  name: string;
  snapshot: string;
  started: boolean;
  syncPolicy: SyncPolicy;
  next: string;
}

// GET /api/v1/resources/{kind}/{name}/manifest: the document as in Git.
export interface ManifestText {
  kind: string;
  name: string;
  file: string;
  line: number;
  revision: string;
  text: string;
}

// GET /api/v1/resources/{kind}/{name}/live: the config as Proxmox answers it now
// (source "proxmox"), or as the last pass observed it (source "last pass").
export interface LiveConfig {
  kind: string;
  name: string;
  source: 'proxmox' | 'last pass';
  path?: string;
  time: string;
  data: Record<string, unknown>;
}

// GET /api/v1/resources/{kind}/{name}/tasklog: the last Proxmox task's log.
export interface TaskLog {
  task: string;
  running: boolean;
  lines: string[];
}

// GET /api/v1/replicas (also in /readyz): this replica's role among the replicas
// sharing one PostgreSQL database, and the leader ("single": SQLite, one daemon).
export interface LeaderInfo {
  replica: string;
  host: string;
  pid: number;
  url?: string;
  since: string;
  term: number;
}
export interface ReplicaStatus {
  role: 'leader' | 'follower' | 'single';
  replica: string;
  leader?: LeaderInfo;
}

// GET /api/v1/notifications (docs/api.md, "Notifications").
export interface NotificationStatus {
  name: string;
  // Scheme and host only: never a secret.
  url: string;
  service: string;
  on: string[];
  resources?: string[];
  lastDelivery?: string;
  // Kept after a later success: compare lastErrorAt with lastDelivery.
  lastError?: string;
  lastErrorAt?: string;
  delivered: number;
  failed: number;
  pending: number;
}
export interface NotificationList {
  notifications: NotificationStatus[];
}
