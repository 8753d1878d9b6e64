import { sql, type Kysely } from 'kysely';

/**
 * The session service's table: one row per session (one worker each). Lists are by owner,
 * newest first, optionally by status; the watchdog reads the sessions still under way.
 * `has_sidecar`: the worker's sidecar polls, so silence means it is lost. `sandbox` is the provider's handle of the sandbox (enough to reach it again after a restart).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('sessions')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('worker_id', 'text', (column) => column.notNull().unique())
    .addColumn('owner', 'text', (column) => column.notNull())
    .addColumn('template', 'text', (column) => column.notNull())
    .addColumn('status', 'text', (column) => column.notNull())
    .addColumn('has_sidecar', 'boolean', (column) => column.notNull())
    .addColumn('failure', 'jsonb')
    .addColumn('sandbox', 'jsonb')
    .addColumn('created_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('updated_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('ended_at', 'timestamptz')
    .execute();
  await db.schema.createIndex('sessions_owner_created_idx').on('sessions').columns(['owner', 'created_at desc']).execute();
  await sql`CREATE INDEX sessions_under_way_idx ON sessions (status) WHERE status IN ('pending', 'provisioning', 'running')`.execute(db);
}
