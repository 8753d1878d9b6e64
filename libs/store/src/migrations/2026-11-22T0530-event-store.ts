import { sql, type Kysely } from 'kysely';

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('event_streams')
    .addColumn('worker_id', 'text', (column) => column.primaryKey())
    .addColumn('last_id', 'bigint', (column) => column.notNull().defaultTo(0))
    .execute();

  await db.schema
    .createTable('events')
    .addColumn('worker_id', 'text', (column) => column.notNull())
    .addColumn('id', 'bigint', (column) => column.notNull())
    .addColumn('uid', 'text', (column) => column.notNull())
    .addColumn('type', 'text', (column) => column.notNull())
    .addColumn('ts', 'timestamptz', (column) => column.notNull())
    .addColumn('stored_at', 'timestamptz', (column) => column.notNull().defaultTo(sql`now()`))
    .addColumn('data', 'jsonb', (column) => column.notNull())
    .addPrimaryKeyConstraint('events_pkey', ['worker_id', 'id'])
    .addUniqueConstraint('events_worker_uid_key', ['worker_id', 'uid'])
    .execute();

  // Type-filtered reads (the event list's `types`, open control requests) stay index scans.
  await db.schema.createIndex('events_worker_type_id_idx').on('events').columns(['worker_id', 'type', 'id']).execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('events').execute();
  await db.schema.dropTable('event_streams').execute();
}
