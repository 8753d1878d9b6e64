import path from 'node:path';
import { optionalStringSetting, stringSetting } from '@svc/service-kit';
import type { DatabaseLocation } from './database.js';

/** Where the store lives: `SVC_DATABASE_URL` (Postgres), else embedded PGlite under `SVC_STATE_DIR`. */
export const storeSettings = {
  databaseUrl: optionalStringSetting('SVC_DATABASE_URL'),
  stateDir: stringSetting('SVC_STATE_DIR', { default: '.svc' }),
};

export function databaseLocationOf(config: { databaseUrl: string | undefined; stateDir: string }): DatabaseLocation {
  return config.databaseUrl ? { url: config.databaseUrl } : { dataDir: path.resolve(config.stateDir, 'pglite') };
}
