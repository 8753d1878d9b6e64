import { ensureStreams, isBusUnavailable, runServiceMain } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, retryWithBackoff, integerSetting, readConfig } from '@svc/service-kit';
import { databaseLocationOf, isStoreUnavailable, migrateToLatest, openDatabase, pingDatabase, storeSettings } from '@svc/store';
import { start } from './index.js';

const config = readConfig({
  ...commonSettings,
  ...storeSettings,
  replicaIndex: integerSetting('SVC_INGEST_REPLICA_INDEX', { default: 0, min: 0 }),
  replicaCount: integerSetting('SVC_INGEST_REPLICA_COUNT', { default: 1, min: 1 }),
});
const logger = createLogger({ name: 'event-ingest', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

// Opening makes a pool, not a connection: it works with Postgres still away.
const database = await openDatabase(databaseLocationOf(config));
shutdown.add({ name: 'database', close: () => database.close() });
await runServiceMain({
  service: 'event-ingest',
  config,
  logger,
  shutdown,
  probeStore: () => pingDatabase(database.db),
  // Migrations are the first thing start() asks of the store: once they are through, it is there.
  async prepare(nc) {
    await retryWithBackoff('creating the streams', () => ensureStreams(nc), { logger, retryable: isBusUnavailable });
    await retryWithBackoff('waiting for the store', () => migrateToLatest(database.db), { logger, retryable: isStoreUnavailable });
  },
  start: (nc) => start({ nc, db: database.db, logger, instance: config.instance, replicaIndex: config.replicaIndex, replicaCount: config.replicaCount }),
});
