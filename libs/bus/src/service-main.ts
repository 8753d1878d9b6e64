import {
  commonSettings,
  createGracefulShutdown,
  createLogger,
  readConfig,
  startTracing,
  tracingSettings,
  type ConfigOf,
  type GracefulShutdown,
  type Logger,
  type RunningService,
  type Setting,
} from '@svc/service-kit';
import { connectBus, natsCredentialsOf, type NatsConnection } from './connection.js';
import { serveHealthProbes } from './health.js';

interface ServiceMainOptions<T extends RunningService> {
  /** The service's name, in its NATS connection's name (`<service>-<instance>`). */
  service: string;
  config: { natsUrl: string; instance: string; healthPort: number; natsUser?: string | undefined; natsPassword?: string | undefined };
  logger: Logger;
  shutdown: GracefulShutdown;
  /** For a service with a database: whether it answers (`/readyz`). */
  probeStore?: () => Promise<boolean>;
  /** What must be there before the service starts (its streams, its migrations): waited for, with back-off. */
  prepare?: (nc: NatsConnection) => Promise<unknown>;
  start(nc: NatsConnection): Promise<T>;
}

/**
 * How every service's `main.ts` starts: its probes first (alive from the first moment, ready
 * once started, saying meanwhile what it waits for), then NATS (waited for, however long) and
 * whatever `prepare` waits for, then the service; each part is closed on shutdown in reverse.
 * Dependencies that come up after the process, or are restarting, are waited out, never a
 * reason to exit (docs/reliability.md).
 */
async function runServiceMain<T extends RunningService>(options: ServiceMainOptions<T>): Promise<T> {
  const { config, logger, shutdown } = options;
  const probes = config.healthPort ? await serveHealthProbes({ port: config.healthPort, probeStore: options.probeStore }) : undefined;
  if (probes) shutdown.add({ name: 'probes', close: () => probes.close() });
  const nc = await connectBus({
    servers: config.natsUrl,
    name: `${options.service}-${config.instance}`,
    logger,
    credentials: natsCredentialsOf(config),
    connectTimeoutMs: Infinity,
  });
  probes?.watch(nc);
  shutdown.add({ name: 'nats', close: () => nc.drain() });
  await options.prepare?.(nc);
  const service = await options.start(nc);
  shutdown.add({ name: options.service, close: () => service.stop() });
  probes?.started();
  return service;
}

/** A service's database as `runService` needs it (`libs/store`'s `serviceStore` makes one). */
interface ServiceStore<Db> {
  db: Db;
  /** Whether it answers now (`/readyz`). */
  probe(): Promise<boolean>;
  /** Waits for it (with back-off) and brings its tables up to date. */
  ready(): Promise<unknown>;
  close(): Promise<void>;
}

type CommonConfig = ConfigOf<typeof commonSettings>;

export interface RunServiceOptions<S extends Record<string, Setting<unknown>>, Db, T extends RunningService> {
  service: string;
  /** The service's own settings, besides `commonSettings` (NATS, log level, instance, probes). */
  settings: S;
  /** For a service with a database: opens it (a pool: it works with the database still away). */
  store?: (config: ConfigOf<S> & CommonConfig, logger: Logger) => Promise<ServiceStore<Db>>;
  /** How long closing may take (default 10 s). */
  shutdownTimeoutMs?: (config: ConfigOf<S> & CommonConfig) => number;
  /** What else must be there before the service starts (its streams): waited for, with back-off. */
  prepare?: (nc: NatsConnection, context: { logger: Logger; config: ConfigOf<S> & CommonConfig }) => Promise<unknown>;
  start(context: { nc: NatsConnection; config: ConfigOf<S> & CommonConfig; logger: Logger; db: Db }): Promise<T>;
}

/**
 * A service's whole `main.ts`: reads its configuration, makes its logger and its graceful
 * shutdown (SIGTERM, SIGINT), starts tracing (docs/tracing.md), opens its database, then `runServiceMain`: probes, NATS, what it
 * waits for (streams, migrations), the service.
 */
export async function runService<S extends Record<string, Setting<unknown>>, Db = undefined, T extends RunningService = RunningService>(
  options: RunServiceOptions<S, Db, T>,
): Promise<T> {
  const config = readConfig({ ...commonSettings, ...tracingSettings, ...options.settings }) as ConfigOf<S> & CommonConfig & ConfigOf<typeof tracingSettings>;
  const logger = createLogger({ name: options.service, level: config.logLevel, base: { instance: config.instance } });
  const shutdown = createGracefulShutdown({ logger, ...(options.shutdownTimeoutMs ? { timeoutMs: options.shutdownTimeoutMs(config) } : {}) });
  shutdown.installSignalHandlers();
  // Added first, closed last: the spans of the shutdown itself are sent too.
  const tracing = await startTracing(options.service, config);
  shutdown.add({ name: 'tracing', close: () => tracing.shutdown() });
  const store = await options.store?.(config, logger);
  if (store) shutdown.add({ name: 'database', close: () => store.close() });
  return runServiceMain({
    service: options.service,
    config,
    logger,
    shutdown,
    ...(store ? { probeStore: () => store.probe() } : {}),
    async prepare(nc) {
      await options.prepare?.(nc, { logger, config });
      // The store comes after the bus's streams: the first thing a service asks of its store is its migrations.
      await store?.ready();
    },
    start: (nc) => options.start({ nc, config, logger, db: store?.db as Db }),
  });
}
