import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { connectBus, isBusUnavailable, type NatsConnection } from './connection.js';
import { createDurablePublisher } from './durable-publisher.js';
import { requestJson, serveRpc } from './messaging.js';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { ensureStreams } from './streams.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';

const logger = createLogger({ name: 'bus-outage-test', level: 'silent' });
const message = (n: number) => ({
  worker_id: 'w-outage',
  event: { type: 'system', uid: `w-outage:${n}`, ts: new Date().toISOString(), data: { level: 'info', message: 'hi' } },
  received_at: new Date().toISOString(),
});

/**
 * NATS killed (SIGKILL) and started again on the same store: publishes and requests fail at once
 * as `bus_unavailable` while it is gone (not after their timeouts), and work again within a
 * moment of its return, on the same connection.
 */
describe('the bus across a nats-server crash (real nats-server, SIGKILL, restart on the same store)', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({ servers: server.url, name: 'outage', logger, credentials: server.credentials.operator });
    await ensureStreams(nc);
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('fails fast while NATS is gone, and recovers on the same connection after the restart', async () => {
    const publisher = createDurablePublisher(nc, { timeoutMs: 5000 });
    const rpc = serveRpc(nc, 'svc.rpc.outage.echo', (request: { n: number }) => request.n, { logger });
    const subject = subjects.incomingEvent(0, 'w-outage');
    expect((await publisher.publish(subject, message(0), { messageId: 'w-outage:0' })).duplicate).toBe(false);

    // A publish sent just before the crash fails when the connection drops, not after 5 s.
    const waiting = publisher.publish(subject, message(1), { messageId: 'w-outage:1' }).then(
      () => undefined,
      (err: unknown) => err,
    );
    const disconnected = (async () => {
      for await (const status of nc.status()) if (status.type === 'disconnect') return;
    })();
    const killedAt = Date.now();
    await server.kill();
    const failed = await waiting;
    // It may have made it into the stream before the crash; if not, it failed fast.
    if (failed !== undefined) {
      expect(failed).toMatchObject({ code: 'bus_unavailable' });
      expect(Date.now() - killedAt).toBeLessThan(1000);
    }
    // Once the client has seen the connection drop, what is sent fails at once.
    await disconnected;
    for (const attempt of [
      () => publisher.publish(subject, message(2), { messageId: 'w-outage:2' }),
      () => requestJson(nc, 'svc.rpc.outage.echo', { n: 1 }, { timeoutMs: 5000 }),
    ]) {
      const started = Date.now();
      const err = await attempt().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'bus_unavailable' });
      expect(isBusUnavailable(err)).toBe(true);
      expect(Date.now() - started).toBeLessThan(100);
    }

    await server.restart();
    const restartedAt = Date.now();
    const pause = () => new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 25));
    let ack: Awaited<ReturnType<typeof publisher.publish>> | undefined;
    while (!ack) ack = await publisher.publish(subject, message(2), { messageId: 'w-outage:2' }).catch(pause);
    expect(Date.now() - restartedAt).toBeLessThan(1500);
    expect(await requestJson(nc, 'svc.rpc.outage.echo', { n: 7 })).toBe(7);
    rpc.unsubscribe();
    publisher.close();
  }, 30_000);
});
