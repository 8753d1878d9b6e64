import type { Subscription } from '@nats-io/transport-node';
import { subjects, type ServiceHealth, type ServiceName } from '@svc/protocol';
import { SVC_VERSION, type Logger } from '@svc/service-kit';
import { createServer } from 'node:http';
import { trackConnection, type NatsConnection } from './connection.js';
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

/**
 * `GET /healthz` (the process is alive) and `GET /readyz` (connected to NATS, and the store
 * answers when there is one) on `port`, for Kubernetes probes of the services that serve no
 * HTTP of their own. Plain node:http: nothing else listens on that port.
 */
export async function serveHealthProbes(options: { nc: NatsConnection; port: number; host?: string; probeStore?: (() => Promise<boolean>) | undefined }): Promise<{ close(): Promise<void> }> {
  const connection = trackConnection(options.nc);
  const server = createServer((request, response) => {
    const answer = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.url === '/healthz') return answer(200, { status: 'ok' });
    if (request.url !== '/readyz') return answer(404, { code: 'not_found', message: `${request.url} is not a probe: /healthz or /readyz` });
    if (!connection.connected()) return answer(503, { code: 'unavailable', message: 'not connected to NATS' });
    if (!options.probeStore) return answer(200, { status: 'ok' });
    options.probeStore().then(
      (up) => (up ? answer(200, { status: 'ok' }) : answer(503, { code: 'unavailable', message: 'the store does not answer' })),
      () => answer(503, { code: 'unavailable', message: 'the store does not answer' }),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', resolve);
  });
  return { close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
