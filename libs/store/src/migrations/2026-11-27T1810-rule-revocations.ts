import type { Kysely } from 'kysely';

/**
 * Rules revoked (docs/teams.md, "Rules"): a rule is a person's "always" decision in the event
 * log, which is never rewritten; its revocation is the control service's, kept here by the
 * rule's id (the decision's event id), with who revoked it and when.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('rule_revocations')
    .addColumn('rule_id', 'bigint', (column) => column.primaryKey())
    .addColumn('revoked_by', 'text', (column) => column.notNull())
    .addColumn('revoked_at', 'timestamptz', (column) => column.notNull())
    .execute();
}
