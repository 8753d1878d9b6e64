import type { ColumnType } from 'kysely';

/**
 * One row per worker that has events: the last id handed out. Appenders lock this row, so
 * ids are assigned (and committed) strictly in order per worker, with no holes.
 */
export interface EventStreamsTable {
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
}

/** An allow (or deny) rule a person added for a worker's tool with `scope: "always"`. */
export interface PermissionRulesTable {
  worker_id: string;
  /** bigserial: the order rules were added in. */
  rule_id: ColumnType<string, never, never>;
  tool_name: string;
  /** A pattern over the tool's input (the sidecar's engine interprets it); null: any input. */
  input_pattern: string | null;
  decision: 'allow' | 'deny';
  /** Who added it (the deciding user's `sub`). */
  added_by: string;
  /** The control request whose decision added it. */
  request_id: string;
  added_at: ColumnType<Date, never, never>;
}

export interface ControlSchema {
  permission_rules: PermissionRulesTable;
}

export interface EventStoreSchema {
  event_streams: EventStreamsTable;
  events: EventsTable;
}

/** The whole database, one interface per owner intersected (sessions and workers join later). */
export type Database = EventStoreSchema & ControlSchema;
