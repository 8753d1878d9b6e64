import { Migrator, sql, type Kysely } from 'kysely';
import { migrationGroups, type MigrationGroup } from './migrations/index.js';
import type { Database } from './schema.js';

/** Where every migration was recorded before they were grouped by owner. */
const LEGACY_MIGRATION_TABLE = 'kysely_migration';
/**
 * Serializes the migrations of every group between services starting together (any constant will
 * do). Kysely locks each group's own table, but groups share a schema: its introspection of one
 * group's table names every table, and a table another group's migration drops meanwhile fails it.
 */
const MIGRATION_LOCK = 0x5356_4d47;

class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** Another service's tables are not at their latest yet: wait for their owner to migrate them. */
export class MigrationsPending extends Error {
  override readonly name = 'MigrationsPending';
}

/** The group's migrations this build knows that the database has not applied (a read: no lock, no DDL). */
async function pendingMigrations(db: Kysely<Database>, group: MigrationGroup): Promise<Array<{ name: string }>> {
  return (await migratorOf(db, group).getMigrations()).filter((migration) => migration.executedAt === undefined);
}

function migratorOf(db: Kysely<Database>, group: MigrationGroup): Migrator {
  const { table, migrations } = migrationGroups[group];
  return new Migrator({
    db,
    provider: { getMigrations: () => Promise.resolve(migrations) },
    migrationTableName: table,
    migrationLockTableName: `${table}_lock`,
  });
}

/**
 * The group's table, with the records of its migrations that a database migrated before the
 * grouping holds in `kysely_migration` (so they are not applied twice). The table is Kysely's own
 * layout.
 */
async function adoptLegacyRecords(db: Kysely<Database>, group: MigrationGroup): Promise<void> {
  const { table, migrations } = migrationGroups[group];
  await db.transaction().execute(async (tx) => {
    await sql`CREATE TABLE IF NOT EXISTS ${sql.table(table)} (name varchar(255) NOT NULL PRIMARY KEY, timestamp varchar(255) NOT NULL)`.execute(tx);
    const { rows } = await sql<{ legacy: string | null }>`SELECT to_regclass(${LEGACY_MIGRATION_TABLE})::text AS legacy`.execute(tx);
    if (rows[0]?.legacy == null) return;
    await sql`INSERT INTO ${sql.table(table)} (name, timestamp)
      SELECT name, timestamp FROM ${sql.table(LEGACY_MIGRATION_TABLE)} WHERE name IN (${sql.join(Object.keys(migrations))})
      ON CONFLICT (name) DO NOTHING`.execute(tx);
  });
}

/**
 * Applies the group's pending migrations, for its owner (`migrationGroups`); returns their
 * names. Safe to run from several processes at once: one connection holds `MIGRATION_LOCK`
 * throughout.
 */
export async function migrateToLatest(db: Kysely<Database>, group: MigrationGroup): Promise<string[]> {
  // Nothing to apply (a restart; or the service's start after `SVC_DATABASE_MIGRATION_URL` did
  // it): no lock and no DDL, only a read. A session lock taken through a transaction-mode pooler
  // could be released on another server connection and never let go.
  if ((await pendingMigrations(db, group)).length === 0) return [];
  const { error, results } = await db.connection().execute(async (connection) => {
    await sql`SELECT pg_advisory_lock(${MIGRATION_LOCK})`.execute(connection);
    try {
      await adoptLegacyRecords(connection, group);
      return await migratorOf(connection, group).migrateToLatest();
    } finally {
      await sql`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`.execute(connection);
    }
  });
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName ?? 'unknown';
    throw new MigrationError(`migration ${failed} failed`, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/**
 * For a service that reads another's tables (the control service reads the event log): throws
 * `MigrationsPending` until the owner has applied every migration of the group this build knows.
 */
export async function awaitMigrated(db: Kysely<Database>, group: MigrationGroup): Promise<void> {
  const pending = await pendingMigrations(db, group);
  if (pending.length > 0)
    throw new MigrationsPending(`the ${group} service's tables are not migrated yet (it applies ${pending.map((migration) => migration.name).join(', ')})`);
}
