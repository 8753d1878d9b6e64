import { sql, type Kysely } from 'kysely';

/**
 * Webhook subscriptions and every try to deliver to them (the control service owns both:
 * docs/webhooks.md). The signing secret is kept as given out: each delivery is signed with it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('webhooks')
    .addColumn('id', 'text', (column) => column.primaryKey())
    .addColumn('owner', 'text', (column) => column.notNull())
    .addColumn('url', 'text', (column) => column.notNull())
    .addColumn('kinds', 'jsonb', (column) => column.notNull())
    .addColumn('format', 'text', (column) => column.notNull())
    .addColumn('scope', 'text', (column) => column.notNull())
    .addColumn('secret', 'text', (column) => column.notNull())
    .addColumn('created_at', 'timestamptz', (column) => column.notNull())
    .addColumn('disabled_at', 'timestamptz')
    .addColumn('disabled_reason', 'text')
    .execute();
  await sql`CREATE INDEX webhooks_owner_idx ON webhooks (owner)`.execute(db);
  await db.schema
    .createTable('webhook_attempts')
    .addColumn('seq', 'bigserial', (column) => column.primaryKey())
    .addColumn('webhook_id', 'text', (column) => column.notNull().references('webhooks.id').onDelete('cascade'))
    .addColumn('message_id', 'text', (column) => column.notNull())
    .addColumn('kind', 'text', (column) => column.notNull())
    .addColumn('attempt', 'integer', (column) => column.notNull())
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addColumn('status', 'integer')
    .addColumn('error', 'text')
    .addColumn('delivered', 'boolean', (column) => column.notNull())
    .execute();
  await sql`CREATE INDEX webhook_attempts_webhook_idx ON webhook_attempts (webhook_id, seq)`.execute(db);
}
