import { connectBus, natsCredentialsOf, serveHealthProbes } from '@svc/bus';
import { commonSettings, createGracefulShutdown, createLogger, retryWithBackoff, readConfig } from '@svc/service-kit';
import { databaseLocationOf, isStoreUnavailable, migrateToLatest, openDatabase, pingDatabase, storeSettings } from '@svc/store';
import { sessionSettings } from './config.js';
import { start } from './index.js';

const config = readConfig({ ...commonSettings, ...storeSettings, ...sessionSettings });
const logger = createLogger({ name: 'session', level: config.logLevel, base: { instance: config.instance } });
const shutdown = createGracefulShutdown({ logger });
shutdown.installSignalHandlers();

// Opening makes a pool, not a connection: it works with Postgres still away.
const database = await openDatabase(databaseLocationOf(config));
shutdown.add({ name: 'database', close: () => database.close() });
// The probes answer from the first moment: alive, and not ready until the service has started.
const probes = config.healthPort ? await serveHealthProbes({ port: config.healthPort, probeStore: () => pingDatabase(database.db) }) : undefined;
if (probes) shutdown.add({ name: 'probes', close: () => probes.close() });

// NATS and Postgres may come up after this process (or be restarting): wait for them, never exit.
const nc = await connectBus({ servers: config.natsUrl, name: `session-${config.instance}`, logger, credentials: natsCredentialsOf(config), connectTimeoutMs: Infinity });
probes?.watch(nc);
shutdown.add({ name: 'nats', close: () => nc.drain() });
// Migrations are the first thing start() asks of the store: once they are through, it is there.
await retryWithBackoff('waiting for the store', () => migrateToLatest(database.db), { logger, retryable: isStoreUnavailable });
const service = await start({ nc, db: database.db, logger, instance: config.instance, config });
shutdown.add({ name: 'session', close: () => service.stop() });
probes?.started();
