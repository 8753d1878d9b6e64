import { Migrator, sql, type Kysely } from 'kysely';
import { migrationGroups, type MigrationGroup } from './migrations/index.js';
import type { Database } from './schema.js';

/** Where every migration was recorded before they were grouped by owner. */
const LEGACY_MIGRATION_TABLE = 'kysely_migration';
/** Serializes the copying of legacy records between services starting together (any constant will do). */
const ADOPTION_LOCK = 0x5356_4d47;

export class MigrationError extends Error {
  override readonly name = 'MigrationError';
}

/** Another service's tables are not at their latest yet: wait for their owner to migrate them. */
export class MigrationsPending extends Error {
  override readonly name = 'MigrationsPending';
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
 * grouping holds in `kysely_migration` (so they are not applied twice). Under a transaction lock:
 * several services may start at once. The table is Kysely's own layout.
 */
async function adoptLegacyRecords(db: Kysely<Database>, group: MigrationGroup): Promise<void> {
  const { table, migrations } = migrationGroups[group];
  await db.transaction().execute(async (tx) => {
    await sql`SELECT pg_advisory_xact_lock(${ADOPTION_LOCK})`.execute(tx);
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
 * names. Safe to run from several processes at once: Kysely takes a lock.
 */
export async function migrateToLatest(db: Kysely<Database>, group: MigrationGroup): Promise<string[]> {
  await adoptLegacyRecords(db, group);
  const { error, results } = await migratorOf(db, group).migrateToLatest();
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
  const pending = (await migratorOf(db, group).getMigrations()).filter((migration) => migration.executedAt === undefined);
  if (pending.length > 0)
    throw new MigrationsPending(
      `the ${group} tables are not migrated yet (${migrationGroups[group].owner} applies ${pending.map((migration) => migration.name).join(', ')})`,
    );
}
