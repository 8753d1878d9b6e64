export * from './schema.js';
export * from './database.js';
export * from './migrate.js';
export * from './event-store.js';
export * from './control-requests.js';
export * from './store-settings.js';
export { isStoreUnavailable } from './store-errors.js';
export type { Insertable, Kysely, Selectable } from 'kysely';
export { sql } from 'kysely';
