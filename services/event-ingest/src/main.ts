import { connectBus, natsCredentialsOf, ensureStreams, serveHealthProbes } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, integerSetting, readConfig } from '@svc/service-kit';
import { databaseLocationOf, openDatabase, pingDatabase, storeSettings } from '@svc/store';
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

const nc = await connectBus({ servers: config.natsUrl, name: `event-ingest-${config.instance}`, logger, credentials: natsCredentialsOf(config) });
shutdown.add({ name: 'nats', close: () => nc.drain() });
await ensureStreams(nc);
const database = await openDatabase(databaseLocationOf(config));
shutdown.add({ name: 'database', close: () => database.close() });
const service = await start({ nc, db: database.db, logger, instance: config.instance, replicaIndex: config.replicaIndex, replicaCount: config.replicaCount });
shutdown.add({ name: 'event-ingest', close: () => service.stop() });
if (config.healthPort) {
  const probes = await serveHealthProbes({ nc, port: config.healthPort, probeStore: () => pingDatabase(database.db) });
  shutdown.add({ name: 'probes', close: () => probes.close() });
}
