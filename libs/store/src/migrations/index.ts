import type { Migration, MigrationProvider } from 'kysely';
import * as eventStore from './2026-11-22T0530-event-store.js';

/**
 * Every migration, by timestamped name, in one explicit index: bundlers and single-file builds
 * keep them, and the order is the names' order.
 */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0530-event-store': eventStore,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
