import { sql, type Kysely } from 'kysely';

/**
 * Sessions shared with a team (docs/teams.md): `access` is the session's list of
 * `{principal, role}`; `access_principals` the principals it names, which a person's sessions are
 * looked up by (`&&` their `user:<sub>` and `group:<name>`s, along a GIN index). The session
 * service writes both together.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .alterTable('sessions')
    .addColumn('access', 'jsonb', (column) => column.notNull().defaultTo(sql`'[]'::jsonb`))
    .execute();
  await db.schema
    .alterTable('sessions')
    .addColumn('access_principals', sql`text[]`, (column) => column.notNull().defaultTo(sql`'{}'::text[]`))
    .execute();
  await sql`CREATE INDEX sessions_access_principals_idx ON sessions USING gin (access_principals)`.execute(db);
}
