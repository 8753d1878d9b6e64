import { connectBus, natsCredentialsOf, serveHealthProbes } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, readConfig } from '@svc/service-kit';
import { databaseLocationOf, openDatabase, pingDatabase, storeSettings } from '@svc/store';
import { start } from './index.js';

const config = readConfig({ ...commonSettings, ...storeSettings });
const logger = createLogger({ name: 'control', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

const nc = await connectBus({ servers: config.natsUrl, name: `control-${config.instance}`, logger, credentials: natsCredentialsOf(config) });
shutdown.add({ name: 'nats', close: () => nc.drain() });
const database = await openDatabase(databaseLocationOf(config));
shutdown.add({ name: 'database', close: () => database.close() });
const service = await start({ nc, db: database.db, logger, instance: config.instance });
shutdown.add({ name: 'control', close: () => service.stop() });
if (config.healthPort) {
  const probes = await serveHealthProbes({ nc, port: config.healthPort, probeStore: () => pingDatabase(database.db) });
  shutdown.add({ name: 'probes', close: () => probes.close() });
}
