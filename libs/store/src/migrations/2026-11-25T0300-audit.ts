import { sql, type Kysely } from 'kysely';

/**
 * The audit trail (the control service owns it): one hash chain of records, `seq` 1, 2, 3 …,
 * each with the hash of the one before it (docs/audit.md). `id` names the fact (a decision, a
 * session started), so a fact reported twice is recorded once.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('audit_records')
    .addColumn('seq', 'bigint', (column) => column.primaryKey())
    .addColumn('id', 'text', (column) => column.notNull().unique())
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addColumn('actor', 'text', (column) => column.notNull())
    .addColumn('channel', 'text', (column) => column.notNull())
    .addColumn('action', 'text', (column) => column.notNull())
    .addColumn('worker_id', 'text')
    .addColumn('session_id', 'text')
    .addColumn('request_id', 'text')
    .addColumn('decision', 'text')
    .addColumn('action_hash', 'text')
    .addColumn('details', 'jsonb')
    .addColumn('prev_hash', 'text', (column) => column.notNull())
    .addColumn('hash', 'text', (column) => column.notNull())
    .execute();
  await sql`CREATE INDEX audit_records_actor_idx ON audit_records (actor, seq)`.execute(db);
  await sql`CREATE INDEX audit_records_worker_idx ON audit_records (worker_id, seq) WHERE worker_id IS NOT NULL`.execute(db);
}
