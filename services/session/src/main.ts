import { runServiceMain } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, retryWithBackoff, readConfig } from '@svc/service-kit';
import { databaseLocationOf, isStoreUnavailable, migrateToLatest, openDatabase, pingDatabase, storeSettings } from '@svc/store';
import { sessionSettings } from './config.js';
import { start } from './index.js';

const config = readConfig({ ...commonSettings, ...storeSettings, ...sessionSettings });
const logger = createLogger({ name: 'session', level: config.logLevel, base: { instance: config.instance } });
// Stopping sandboxes may take their kill grace: the deadline leaves room for it.
const shutdown = createGracefulShutdown({ logger, timeoutMs: config.killGraceMs + 10_000 });
shutdown.installSignalHandlers();

// Opening makes a pool, not a connection: it works with Postgres still away.
const database = await openDatabase(databaseLocationOf(config));
shutdown.add({ name: 'database', close: () => database.close() });
await runServiceMain({
  service: 'session',
  config,
  logger,
  shutdown,
  probeStore: () => pingDatabase(database.db),
  // Migrations are the first thing start() asks of the store: once they are through, it is there.
  prepare: () => retryWithBackoff('waiting for the store', () => migrateToLatest(database.db), { logger, retryable: isStoreUnavailable }),
  start: (nc) => start({ nc, db: database.db, logger, instance: config.instance, config }),
});
