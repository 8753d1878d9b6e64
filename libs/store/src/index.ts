export * from './schema.js';
export * from './database.js';
export * from './migrate.js';
export * from './event-store.js';
// The reads only: a decision is appended through the event store (`EventStore.decide`), by the worker's writer.
export { createControlRequestLog, createRuleLog, type ControlRequestLog, type RuleLog, type StoredRequest } from './control-requests.js';
export * from './store-settings.js';
export { isStoreUnavailable } from './store-errors.js';
export type { Expression, ExpressionBuilder, Insertable, Kysely, Selectable, SqlBool } from 'kysely';
export { sql } from 'kysely';
