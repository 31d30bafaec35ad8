// The API's JSON shapes for the UI. Every shape of internal/api and every
// vocabulary word of internal/vocab comes from generated.ts, written from
// the Go types by `go generate ./internal/api/` (never edit it by hand);
// this file only gives some of them the UI's names and adds what is the
// UI's own (the manifest's shape, resource keys).
import type * as gen from './generated';

export { HEALTHS, KINDS, LOG_LEVELS, STATUSES } from './generated';
export type {
  Accepted,
  Action,
  Actor,
  ActorKind,
  AdoptResult,
  AuthMethods,
  Change,
  Check,
  CheckLevel,
  ClusterSettings,
  ClusterStatus,
  CommitHistory,
  Dependency,
  DryRun,
  ForgeSettings,
  Health,
  HistoryEntry,
  HistoryEvent,
  Hold,
  Kind,
  LeaderInfo,
  LoadError,
  LogLevel,
  LogLine,
  LogLines,
  Me,
  NewToken,
  NotificationEvent,
  NotificationList,
  NotificationStatus,
  PassEvent,
  Pin,
  PinAccepted,
  PlanAction,
  PlanSummary,
  Progress,
  PullRequest,
  PullRequestList,
  ReconcileSettings,
  Relation,
  ReplicaRole,
  ReplicaStatus,
  Revision,
  RevisionList,
  RevisionResult,
  Role,
  RollbackResult,
  SetupState,
  Snapshot,
  SnapshotList,
  SourceSettings,
  Status,
  SyncPolicy,
  TaskLog,
  TestResult,
  TokenList,
  User,
  UserList,
  Wait,
} from './generated';

// The UI's names of some documents.
export type Resource = gen.ResourceSummary;
export type Summary = gen.ResourceList;
export type PlanDocument = gen.Plan;
export type Settings = gen.SettingsDocument;
export type ApiToken = gen.Token;
export type ManifestText = gen.Manifest;
export type LiveConfig = gen.Live;
export type Counts = Partial<Record<gen.Status, number>>;

// A manifest as the UI reads it (the API sends any document).
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

// The API sends desired and observed as any document; the UI reads them so.
export interface ResourceDetail extends Omit<gen.ResourceDetail, 'desired' | 'observed'> {
  desired: Manifest | null;
  observed: Observed | null;
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
