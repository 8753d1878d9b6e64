import type { Migration, MigrationProvider } from 'kysely';
import * as eventStore from './2026-11-22T0530-event-store.js';
import * as appendMany from './2026-11-22T0900-append-many.js';
import * as control from './2026-11-22T1000-control.js';
import * as sessions from './2026-11-22T1200-sessions.js';
import * as decide from './2026-11-22T1500-decide.js';
import * as appendGenericPlans from './2026-11-22T1700-append-generic-plans.js';
import * as appendManySetBased from './2026-11-22T2000-append-many-set-based.js';

/**
 * Every migration, by timestamped name, in one explicit index: bundlers and single-file builds
 * keep them, and the order is the names' order.
 */
export const migrations: Record<string, Migration> = {
  '2026-11-22T0530-event-store': eventStore,
  '2026-11-22T0900-append-many': appendMany,
  '2026-11-22T1000-control': control,
  '2026-11-22T1200-sessions': sessions,
  '2026-11-22T1500-decide': decide,
  '2026-11-22T1700-append-generic-plans': appendGenericPlans,
  '2026-11-22T2000-append-many-set-based': appendManySetBased,
};

export const migrationProvider: MigrationProvider = {
  getMigrations: () => Promise.resolve(migrations),
};
