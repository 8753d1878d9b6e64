import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '@svc/service-kit';
import { connectBus, type NatsConnection } from './connection.js';
import { serveHealthProbes } from './health.js';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('health probes (/healthz, /readyz) for the services without HTTP', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({
      servers: server.url,
      name: 'probes',
      logger: createLogger({ name: 't', level: 'silent' }),
      credentials: server.credentials.operator,
    });
  });
  afterAll(async () => {
    if (!nc.isClosed()) await nc.close();
    await server?.stop();
  });

  it("alive always; ready once started, while NATS is connected and the store answers, saying which is missing; a wrong path is 404; /metrics is the process's metrics", async () => {
    let storeUp = true;
    const port = await freePort();
    const probes = await serveHealthProbes({ port, host: '127.0.0.1', probeStore: async () => storeUp });
    const get = async (path: string) => {
      const response = await fetch(`http://127.0.0.1:${port}${path}`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };
    // From the first moment: alive, and not ready while the service waits for its dependencies.
    expect(await get('/healthz')).toEqual({ status: 200, body: { status: 'ok' } });
    expect(await get('/readyz')).toEqual({ status: 503, body: { code: 'bus_unavailable', message: 'starting: waiting for NATS' } });
    probes.watch(nc);
    storeUp = false;
    expect(await get('/readyz')).toEqual({ status: 503, body: { code: 'store_unavailable', message: 'starting: waiting for the store' } });
    storeUp = true;
    expect(await get('/readyz')).toEqual({ status: 503, body: { code: 'unavailable', message: 'starting' } });
    probes.started();
    expect(await get('/readyz')).toEqual({ status: 200, body: { status: 'ok' } });
    storeUp = false;
    expect(await get('/readyz')).toEqual({ status: 503, body: { code: 'store_unavailable', message: 'the store does not answer' } });
    expect((await get('/nothing-here')).status).toBe(404);
    // The process's Prometheus metrics, beside the probes (text, not JSON).
    const metrics = await fetch(`http://127.0.0.1:${port}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get('content-type')).toMatch(/^text\/plain/);
    expect(await metrics.text()).toContain('# TYPE process_cpu_user_seconds_total counter');
    await nc.close();
    expect(await get('/readyz')).toEqual({ status: 503, body: { code: 'bus_unavailable', message: 'not connected to NATS' } });
    expect((await get('/healthz')).status).toBe(200);
    await probes.close();
  });
});
