import Type from 'typebox';
import { requestJson, trackConnection } from '@svc/bus';
import { CodedError, SERVICE_NAMES, StatusResponse, subjects, type ServiceHealth, type ServiceName } from '@svc/protocol';
import { metricsExposition, SVC_VERSION } from '@svc/service-kit';
import { errorResponses, routePlugin } from './route-plugin.js';

/** A service that does not answer within this long shows as down; status itself still answers. */
const SERVICE_HEALTH_TIMEOUT_MS = 1000;

const Ok = Type.Object({ status: Type.Literal('ok') });
const errors = errorResponses(401, 403, 429, 503);

/** `/healthz` (alive), `/readyz` (NATS connected) for Kubernetes probes, and `GET /v1/status`. */
export const healthRoutes = routePlugin('svc-health-routes', ['svc-bus', 'svc-settings'], async (app) => {
  const { instance } = app.settings;
  const startedAt = Date.now();
  const connection = trackConnection(app.bus);
  const natsUp = () => connection.connected();

  app.get(
    '/healthz',
    { config: { auth: 'public', rateLimit: false }, schema: { tags: ['health'], summary: 'The process is alive', response: { 200: Ok } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/readyz',
    {
      config: { auth: 'public', rateLimit: false },
      schema: { tags: ['health'], summary: 'Ready to serve: connected to NATS', response: { 200: Ok, ...errorResponses(503) } },
    },
    async () => {
      if (!natsUp()) throw new CodedError('bus_unavailable', 'not connected to NATS');
      return { status: 'ok' as const };
    },
  );

  app.get(
    '/metrics',
    {
      config: { rateLimit: false },
      schema: {
        tags: ['health'],
        summary: "This process's Prometheus metrics (an admin's token)",
        description:
          'The text exposition format. In Kubernetes, scrape the probe port instead (`SVC_HEALTH_PORT`, cluster-internal, no token); here it is for a gateway without one (the local stack: every service in one process, so every metric).',
        produces: ['text/plain'],
        response: { 200: Type.String(), ...errors },
      },
    },
    async (request, reply) => {
      if (request.principal?.kind !== 'user' || !request.principal.admin) throw new CodedError('forbidden', 'the metrics are for admins');
      const { contentType, body } = await metricsExposition();
      return reply.type(contentType).send(body);
    },
  );

  app.get(
    '/v1/status',
    { schema: { tags: ['health'], summary: 'Health of every service, NATS and the store', response: { 200: StatusResponse, ...errors } } },
    async (request) => {
      const nats = natsUp() ? 'up' : 'down';
      const gateway: ServiceHealth = { service: 'gateway', status: 'up', version: SVC_VERSION, instance, uptime_s: (Date.now() - startedAt) / 1000 };
      const others = await Promise.all(
        SERVICE_NAMES.filter((name) => name !== 'gateway').map((service: ServiceName) =>
          requestJson<ServiceHealth>(app.bus, subjects.health(service), {}, { timeoutMs: SERVICE_HEALTH_TIMEOUT_MS, requestId: request.id }).catch(
            (): ServiceHealth => ({ service, status: 'down', version: 'unknown', instance: 'none', uptime_s: 0 }),
          ),
        ),
      );
      const services = [gateway, ...others];
      const storeAnswers = others.filter((s) => s.store !== undefined);
      const store = storeAnswers.some((s) => s.store === 'up') ? 'up' : 'down';
      const healthy = nats === 'up' && store === 'up' && services.every((s) => s.status === 'up');
      return { status: healthy ? ('ok' as const) : ('degraded' as const), version: SVC_VERSION, nats, store, services } as const;
    },
  );
});
