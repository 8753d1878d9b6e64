import type { Subscription } from '@nats-io/transport-node';
import { subjects, type ServiceHealth, type ServiceName } from '@svc/protocol';
import { metricsExposition, SVC_VERSION, type Logger } from '@svc/service-kit';
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

/** The probes of one process: it tells them when it has a NATS connection and when it has started. */
export interface HealthProbes {
  /** The service's NATS connection, once it has one: `/readyz` follows its state from then on. */
  watch(nc: NatsConnection): void;
  /** The service finished starting (migrations applied, subscriptions made). */
  started(): void;
  close(): Promise<void>;
}

/**
 * `GET /healthz` (the process is alive) and `GET /readyz` (started, connected to NATS, and the
 * store answers when there is one) on `port`, for Kubernetes probes, and `GET /metrics` (the
 * process's Prometheus metrics) for its scraper: the probe port is cluster-internal, never the
 * public one. They answer from the first moment of the process: a service waiting for
 * NATS or Postgres at start is alive and not ready, and says which one it waits for. Plain
 * node:http: nothing else listens on that port.
 */
export async function serveHealthProbes(options: { port: number; host?: string; probeStore?: (() => Promise<boolean>) | undefined }): Promise<HealthProbes> {
  let connection: { connected(): boolean } | undefined;
  let started = false;
  const server = createServer((request, response) => {
    const answer = (status: number, body: unknown) => response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (request.url === '/healthz') return answer(200, { status: 'ok' });
    if (request.url === '/metrics') {
      metricsExposition().then(
        ({ contentType, body }) => response.writeHead(200, { 'content-type': contentType }).end(body),
        (err: unknown) => answer(500, { code: 'internal', message: `could not collect the metrics: ${(err as Error).message}` }),
      );
      return;
    }
    if (request.url !== '/readyz') return answer(404, { code: 'not_found', message: `${request.url} is not a probe: /healthz, /readyz or /metrics` });
    if (!connection?.connected()) return answer(503, { code: 'bus_unavailable', message: connection ? 'not connected to NATS' : 'starting: waiting for NATS' });
    const storeDown = () => answer(503, { code: 'store_unavailable', message: started ? 'the store does not answer' : 'starting: waiting for the store' });
    const ready = () => (started ? answer(200, { status: 'ok' }) : answer(503, { code: 'unavailable', message: 'starting' }));
    if (!options.probeStore) return ready();
    options.probeStore().then((up) => (up ? ready() : storeDown()), storeDown);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', resolve);
  });
  return {
    watch: (nc) => void (connection = trackConnection(nc)),
    started: () => void (started = true),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
