import type { Subscription } from '@nats-io/transport-node';
import { subjects, type ServiceHealth, type ServiceName } from '@svc/protocol';
import { SVC_VERSION, type Logger } from '@svc/service-kit';
import type { NatsConnection } from './connection.js';
import { serveRpc } from './messaging.js';

/** Answers `svc.health.<service>` so `/v1/status` can tell which services are up. */
export function serveHealth(nc: NatsConnection, service: ServiceName, options: { instance: string; logger: Logger }): Subscription {
  const startedAt = Date.now();
  return serveRpc(
    nc,
    subjects.health(service),
    (): ServiceHealth => ({ service, status: 'up', version: SVC_VERSION, instance: options.instance, uptime_s: (Date.now() - startedAt) / 1000 }),
    { logger: options.logger },
  );
}
