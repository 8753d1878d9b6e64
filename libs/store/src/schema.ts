import type { ColumnType } from 'kysely';

/**
 * One row per worker that has events: the last id handed out. Appenders lock this row, so
 * ids are assigned (and committed) strictly in order per worker, with no holes.
 */
interface EventStreamsTable {
  worker_id: string;
  /** bigint; read as a decimal string. */
  last_id: ColumnType<string, string | undefined, string>;
}

/** Every SDK event of every worker, control messages included. */
export interface EventsTable {
  worker_id: string;
  /** Per-worker cursor (bigint), read as a decimal string. */
  id: ColumnType<string, string, never>;
  /** The producer's idempotency key, unique per worker. */
  uid: string;
  type: string;
  /** When the producer saw the event. */
  ts: ColumnType<Date, string, never>;
  /** When it was committed here. */
  stored_at: ColumnType<Date, never, never>;
  /** The type's body (jsonb); written as JSON text. */
  data: ColumnType<unknown, string, never>;
  /** Who wrote it (`EventSource`); null for events stored before sources existed: the worker's. */
  source: ColumnType<string | null, string | undefined, never>;
}

interface EventStoreSchema {
  event_streams: EventStreamsTable;
  events: EventsTable;
}

/** A session and its one worker (the session service's). Timestamps are read as `Date`. */
export interface SessionsTable {
  id: string;
  worker_id: string;
  owner: string;
  template: string;
  status: string;
  /** Whether a sidecar runs (and polls): only then does its silence fail the session. */
  has_sidecar: boolean;
  /** `{step, reason}` of a failed session (jsonb; written as JSON text). */
  failure: ColumnType<unknown, string | null | undefined, string | null>;
  /** The sandbox provider's handle (jsonb; written as JSON text). */
  sandbox: ColumnType<unknown, string | null | undefined, string | null>;
  created_at: ColumnType<Date, never, never>;
  updated_at: ColumnType<Date, never, Date>;
  ended_at: ColumnType<Date | null, never, Date | null>;
  /** Its template's retention of the events once ended, in days (null: the service's default; 0: kept). */
  events_retention_days: ColumnType<number | null, number | null | undefined, never>;
  /** When its events were removed (retention). */
  events_purged_at: ColumnType<Date | null, never, Date>;
  /** Its access list, `[{principal, role}]` (jsonb; written as JSON text): docs/teams.md. */
  access: ColumnType<unknown, string | undefined, string>;
  /** The principals `access` names, to find a person's shared sessions by. */
  access_principals: ColumnType<string[], string[] | undefined, string[]>;
}

interface SessionSchema {
  sessions: SessionsTable;
}

/** The audit trail (control owns it): one hash chain, `seq` 1, 2, 3 … */
export interface AuditRecordsTable {
  seq: ColumnType<string, number, never>;
  id: string;
  at: ColumnType<Date, Date, never>;
  actor: string;
  channel: string;
  action: string;
  worker_id: string | null;
  session_id: string | null;
  request_id: string | null;
  decision: string | null;
  action_hash: string | null;
  details: ColumnType<Record<string, unknown> | null, string | null, never>;
  /** The key its `hash` is an HMAC with (null: written before keys, a plain SHA-256). */
  key_id: string | null;
  prev_hash: string;
  hash: string;
}

/** Webhook subscriptions (control owns them, with their attempts). */
export interface WebhooksTable {
  id: string;
  owner: string;
  url: string;
  kinds: ColumnType<string[], string, never>;
  format: string;
  scope: string;
  secret: string;
  created_at: ColumnType<Date, Date, never>;
  disabled_at: ColumnType<Date | null, never, Date>;
  disabled_reason: ColumnType<string | null, never, string>;
  /** Its creator's groups when it was made (jsonb): a routed request's notices go to who may decide it. */
  owner_groups: ColumnType<string[], string | undefined, never>;
}

/** One person's vote on a request whose approval route asks a quorum (docs/teams.md). */
interface ApprovalVotesTable {
  worker_id: string;
  request_id: string;
  voter: string;
  decision: string;
  channel: string;
  at: ColumnType<Date, Date, never>;
}

/** A rule (an "always" decision's event id) revoked, by whom and when. */
interface RuleRevocationsTable {
  rule_id: string;
  revoked_by: string;
  revoked_at: ColumnType<Date, Date, never>;
}

/** A request offered to its route's `escalate_to` (once). */
interface ApprovalEscalationsTable {
  worker_id: string;
  request_id: string;
  escalated_to: ColumnType<string[], string, never>;
  at: ColumnType<Date, Date, never>;
}

export interface WebhookAttemptsTable {
  seq: ColumnType<string, never, never>;
  webhook_id: string;
  message_id: string;
  kind: string;
  attempt: number;
  at: ColumnType<Date, Date, never>;
  status: number | null;
  error: string | null;
  delivered: boolean;
}

/** The control service's tables (migration group `control`); its queries are in services/control. */
interface ControlSchema {
  audit_records: AuditRecordsTable;
  webhooks: WebhooksTable;
  webhook_attempts: WebhookAttemptsTable;
  approval_votes: ApprovalVotesTable;
  approval_escalations: ApprovalEscalationsTable;
  rule_revocations: RuleRevocationsTable;
}

/** The whole database, one interface per owner intersected. */
export type Database = EventStoreSchema & SessionSchema & ControlSchema;
