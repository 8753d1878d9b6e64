import type { Subscription } from '@nats-io/transport-node';
import { subjects, type ServiceHealth, type ServiceName } from '@svc/protocol';
import { SVC_VERSION, type Logger } from '@svc/service-kit';
import type { NatsConnection } from './connection.js';
import { serveRpc } from './messaging.js';

export interface HealthOptions {
  instance: string;
  logger: Logger;
  /** For a service with a database: whether it answers. */
  probeStore?: () => Promise<boolean>;
}

/** Answers `svc.health.<service>` so `/v1/status` can tell which services (and the store) are up. */
export function serveHealth(nc: NatsConnection, service: ServiceName, options: HealthOptions): Subscription {
  const startedAt = Date.now();
  return serveRpc(
    nc,
    subjects.health(service),
    async (): Promise<ServiceHealth> => {
      const health: ServiceHealth = { service, status: 'up', version: SVC_VERSION, instance: options.instance, uptime_s: (Date.now() - startedAt) / 1000 };
      if (options.probeStore) health.store = (await options.probeStore().catch(() => false)) ? 'up' : 'down';
      return health;
    },
    { logger: options.logger },
  );
}
