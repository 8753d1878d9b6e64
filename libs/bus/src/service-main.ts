import type { GracefulShutdown, Logger, RunningService } from '@svc/service-kit';
import { connectBus, natsCredentialsOf, type NatsConnection } from './connection.js';
import { serveHealthProbes } from './health.js';

export interface ServiceMainOptions<T extends RunningService> {
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
export async function runServiceMain<T extends RunningService>(options: ServiceMainOptions<T>): Promise<T> {
  const { config, logger, shutdown } = options;
  const probes = config.healthPort ? await serveHealthProbes({ port: config.healthPort, probeStore: options.probeStore }) : undefined;
  if (probes) shutdown.add({ name: 'probes', close: () => probes.close() });
  const nc = await connectBus({ servers: config.natsUrl, name: `${options.service}-${config.instance}`, logger, credentials: natsCredentialsOf(config), connectTimeoutMs: Infinity });
  probes?.watch(nc);
  shutdown.add({ name: 'nats', close: () => nc.drain() });
  await options.prepare?.(nc);
  const service = await options.start(nc);
  shutdown.add({ name: options.service, close: () => service.stop() });
  probes?.started();
  return service;
}
