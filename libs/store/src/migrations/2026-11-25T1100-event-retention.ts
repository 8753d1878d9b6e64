import { sql, type Kysely } from 'kysely';

/**
 * Retention of an ended session's events (docs/event-ingest.md "Retention"):
 * `events_retention_days` is its template's `[retention] events_days` (null: the service's
 * default when the sweep runs, so a changed default applies to sessions already there);
 * `events_purged_at` is when event-ingest removed them. The sweep reads the ended sessions not
 * yet purged, oldest first, along a partial index that holds only those.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('sessions').addColumn('events_retention_days', 'integer').execute();
  await db.schema.alterTable('sessions').addColumn('events_purged_at', 'timestamptz').execute();
  await sql`CREATE INDEX sessions_events_unpurged_idx ON sessions (ended_at) WHERE ended_at IS NOT NULL AND events_purged_at IS NULL`.execute(db);
}
