export * from './schema.js';
export * from './database.js';
export * from './event-store.js';
export { createPGliteDialect } from './pglite-dialect.js';
export * from './store-settings.js';
export type { Kysely, Selectable } from 'kysely';
