import path from 'node:path';
import { optionalStringSetting, retryWithBackoff, stringSetting, type Logger } from '@svc/service-kit';
import { migrateToLatest, openDatabase, pingDatabase, type DatabaseLocation } from './database.js';
import { isStoreUnavailable } from './store-errors.js';

/** Where the store lives: `SVC_DATABASE_URL` (Postgres), else embedded PGlite under `SVC_STATE_DIR`. */
export const storeSettings = {
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
};

export function databaseLocationOf(config: { databaseUrl: string | undefined; stateDir: string }): DatabaseLocation {
  return config.databaseUrl ? { url: config.databaseUrl } : { dataDir: path.resolve(config.stateDir, 'pglite') };
}

/**
 * A service's database as its `main.ts` runs it (`runService` in libs/bus): opened as a pool (it
 * works with Postgres still away), probed for `/readyz`, migrated once it answers (waited for
 * with back-off: a database that is restarting is no reason to exit).
 */
export async function openServiceStore(config: { databaseUrl: string | undefined; stateDir: string }, logger: Logger) {
  const database = await openDatabase(databaseLocationOf(config));
  return {
    db: database.db,
    probe: () => pingDatabase(database.db),
    ready: () => retryWithBackoff('waiting for the store', () => migrateToLatest(database.db), { logger, retryable: isStoreUnavailable }),
    close: () => database.close(),
  };
}
