import path from 'node:path';
import { ConfigError, optionalStringSetting, retryWithBackoff, stringSetting, type Logger } from '@svc/service-kit';
import type { Kysely } from 'kysely';
import { openDatabase, pingDatabase, type DatabaseLocation } from './database.js';
import { awaitMigrated, migrateToLatest, MigrationsPending } from './migrate.js';
import type { MigrationGroup } from './migrations/index.js';
import type { Database } from './schema.js';
import { isStoreUnavailable } from './store-errors.js';

/** Where the store lives: `SVC_DATABASE_URL` (Postgres), else embedded PGlite under `SVC_STATE_DIR`. */
export const storeSettings = {
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
  /**
   * Where migrations run, when not at `SVC_DATABASE_URL`: a direct connection when that one goes
   * through a transaction-mode pooler (the migrations hold a session-level advisory lock), or a
   * role allowed to change the schema when the services' own role is not (docs/scale-out.md).
   */
  databaseMigrationUrl: optionalStringSetting('SVC_DATABASE_MIGRATION_URL'),
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
};

type StoreConfig = { databaseUrl: string | undefined; databaseMigrationUrl?: string | undefined; stateDir: string };

function databaseLocationOf(config: { databaseUrl: string | undefined; stateDir: string }): DatabaseLocation {
  return config.databaseUrl ? { url: config.databaseUrl } : { dataDir: path.resolve(config.stateDir, 'pglite') };
}

/** What a service does about migrations: applies those of the group it owns, waits for those of the groups it reads. */
export interface StoreUse {
  owns?: MigrationGroup;
  reads?: MigrationGroup[];
}

/** Brings the service's tables to this build's schema: its own group migrated, the groups it reads awaited. */
export async function prepareTables(db: Kysely<Database>, use: StoreUse): Promise<string[]> {
  const applied = use.owns ? await migrateToLatest(db, use.owns) : [];
  for (const group of use.reads ?? []) await awaitMigrated(db, group);
  return applied;
}

/**
 * A service's database as its `main.ts` runs it (`runService` in libs/bus): opened as a pool (it
 * works with Postgres still away), probed for `/readyz`, its tables made ready once it answers
 * (waited for with back-off: a database that is restarting, or another service's tables not
 * migrated yet, is no reason to exit).
 */
export function serviceStore(use: StoreUse) {
  return async (config: StoreConfig, logger: Logger) => {
    if (config.databaseMigrationUrl && !config.databaseUrl)
      throw new ConfigError(['SVC_DATABASE_MIGRATION_URL is set without SVC_DATABASE_URL: the embedded store migrates itself; set both or neither']);
    const database = await openDatabase(databaseLocationOf(config));
    const retryable = (err: unknown) => isStoreUnavailable(err) || err instanceof MigrationsPending;
    /** Tables made ready on the migration connection (opened for it, closed after), else on the pool. */
    async function prepare(): Promise<string[]> {
      if (!config.databaseMigrationUrl) return prepareTables(database.db, use);
      const migration = await openDatabase({ url: config.databaseMigrationUrl, poolSize: 1 });
      try {
        return await prepareTables(migration.db, use);
      } finally {
        await migration.close();
      }
    }
    return {
      db: database.db,
      probe: () => pingDatabase(database.db),
      ready: () => retryWithBackoff('waiting for the store', prepare, { logger, retryable }),
      close: () => database.close(),
    };
  };
}
