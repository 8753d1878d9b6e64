import { sql, type Kysely } from 'kysely';

/**
 * Approvals routed to a team (docs/teams.md), the control service's:
 * - `approval_votes`: each person's vote on a request whose route asks a quorum, one per person
 *   (the primary key), so two control replicas taking the same person's vote keep it once;
 * - `approval_escalations`: a request offered to its route's `escalate_to`, once (the primary
 *   key): the replica whose insert wins announces it.
 * Webhook subscriptions remember their creator's groups, so a routed request's notices go to the
 * people who may decide it.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('approval_votes')
    .addColumn('worker_id', 'text', (column) => column.notNull())
    .addColumn('request_id', 'text', (column) => column.notNull())
    .addColumn('voter', 'text', (column) => column.notNull())
    .addColumn('decision', 'text', (column) => column.notNull())
    .addColumn('channel', 'text', (column) => column.notNull())
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addPrimaryKeyConstraint('approval_votes_pkey', ['worker_id', 'request_id', 'voter'])
    .execute();
  await db.schema
    .createTable('approval_escalations')
    .addColumn('worker_id', 'text', (column) => column.notNull())
    .addColumn('request_id', 'text', (column) => column.notNull())
    .addColumn('escalated_to', 'jsonb', (column) => column.notNull())
    .addColumn('at', 'timestamptz', (column) => column.notNull())
    .addPrimaryKeyConstraint('approval_escalations_pkey', ['worker_id', 'request_id'])
    .execute();
  await db.schema
    .alterTable('webhooks')
    .addColumn('owner_groups', 'jsonb', (column) => column.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
}
