// The API's JSON shapes for the UI. Every shape of internal/api and every
// vocabulary word of internal/vocab comes from generated.ts, written from
// the Go types by `go generate ./internal/api/` (never edit it by hand);
// this file only gives some of them the UI's names and adds what is the
// UI's own (the manifest's shape, resource keys).
import type * as gen from './generated';

export { HEALTHS, KINDS, STATUSES } from './generated';
export type {
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
  ForgeSettings,
  Health,
  HistoryEntry,
  HistoryEvent,
  Hold,
  Kind,
  LoadError,
  LogLine,
  Me,
  NewToken,
  NotificationEvent,
  NotificationList,
  NotificationStatus,
  PassEvent,
  Pin,
  PlanAction,
  PlanSummary,
  Progress,
  PullRequest,
  PullRequestList,
  ReconcileSettings,
  Relation,
  Revision,
  RevisionList,
  RevisionResult,
  Role,
  RollbackResult,
  Snapshot,
  SnapshotList,
  SourceSettings,
  Status,
  SyncPolicy,
  TaskLog,
  TestResult,
  User,
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

export type LogLevel = 'DEBUG' | 'INFO' | 'WARN' | 'ERROR';

// What an action (sync, delete, refresh) answers: it starts work and does not wait.
export interface ActionAccepted {
  status?: string;
}

// GET /api/v1/replicas (also in /readyz): this replica's role among the replicas
// sharing one PostgreSQL database, and the leader ("single": SQLite, one daemon).
// Written by internal/server from internal/leader's status, not an internal/api type.
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
