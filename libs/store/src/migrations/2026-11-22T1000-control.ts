import { sql, type Kysely } from 'kysely';

/**
 * The control channel's reads stay index lookups however long a worker runs:
 * - a worker's control requests and decisions by `request_id` (partial index: only those two types);
 * - withdrawals, which are `system` events (subtype `control_withdrawn`), by the request they close.
 * A decision's first-wins rule needs no index of its own: every decision on a request is stored
 * under one uid (`control_response:<request_id>`), and (worker_id, uid) is unique.
 *
 * `permission_rules` held the allow rules a person added with `scope: "always"` (until
 * 2026-11-24T2330-rules-from-decisions: they are read from the decisions now).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE INDEX events_control_request_id_idx ON events (worker_id, (data->>'request_id'), id) WHERE type IN ('control_request', 'control_response')`.execute(
    db,
  );
  await sql`CREATE INDEX events_control_withdrawn_idx ON events (worker_id, ((data->'details')->>'request_id')) WHERE type = 'system' AND data->>'subtype' = 'control_withdrawn'`.execute(
    db,
  );

  await db.schema
    .createTable('permission_rules')
    .addColumn('worker_id', 'text', (column) => column.notNull())
    .addColumn('rule_id', 'bigserial', (column) => column.primaryKey())
    .addColumn('tool_name', 'text', (column) => column.notNull())
    .addColumn('input_pattern', 'text')
    .addColumn('decision', 'text', (column) => column.notNull())
    .addColumn('added_by', 'text', (column) => column.notNull())
    .addColumn('request_id', 'text', (column) => column.notNull())
    .addColumn('added_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema.createIndex('permission_rules_worker_idx').on('permission_rules').columns(['worker_id', 'rule_id']).execute();
}
