export * from './schema.js';
export * from './database.js';
export * from './event-store.js';
export * from './control-requests.js';
export { createPGliteDialect } from './pglite-dialect.js';
export * from './store-settings.js';
export { isConnectionLoss, isStoreUnavailable } from './store-errors.js';
export type { Kysely, Selectable } from 'kysely';
