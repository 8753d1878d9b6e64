import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectBus, createDurablePublisher, ensureStreams, subscribeStoredEvents, type NatsConnection } from '@svc/bus';
import { storedBatchMessageId, subjects, type StoredEvent } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { startNatsServer, startTcpProxy, waitFor, type NatsServerProcess, type TcpProxy } from '@svc/test-support';

const logger = createLogger({ name: 'silent-network-test', level: 'silent' });

function stored(workerId: string, id: number): StoredEvent {
  return {
    id: String(id),
    worker_id: workerId,
    type: 'system',
    uid: `u${id}`,
    ts: new Date().toISOString(),
    data: { level: 'info', message: `m${id}` },
    source: 'worker',
  };
}

/**
 * A server lost without a word (a node gone, a partition): no FIN, no RST, the connection just
 * carries nothing. An idle durable subscriber (the webhook and lifecycle subscribers are idle
 * most of the time) has nothing arriving that could show it; the connection's pings find it
 * (every 10 s, two unanswered: libs/bus connection.ts), the client connects again, and the
 * subscriber's consumer hands over what was stored meanwhile.
 */
describe('an idle stored-event subscriber whose network to NATS goes silent', () => {
  let server: NatsServerProcess;
  let proxy: TcpProxy;
  let direct: NatsConnection;
  let throughProxy: NatsConnection;

  beforeAll(async () => {
    server = await startNatsServer();
    proxy = await startTcpProxy(server.port);
    direct = await connectBus({ servers: server.url, name: 'publisher', logger, credentials: server.credentials.operator });
    await ensureStreams(direct);
    throughProxy = await connectBus({ servers: `nats://127.0.0.1:${proxy.port}`, name: 'subscriber', logger, credentials: server.credentials.operator });
  });
  afterAll(async () => {
    await throughProxy?.close();
    await direct?.close();
    await proxy?.stop();
    await server?.stop();
  });

  it('finds out within a minute, connects again and gets every event stored meanwhile, once and in order', async () => {
    const publisher = createDurablePublisher(direct);
    const publish = (event: StoredEvent) =>
      publisher.publish(
        subjects.storedEvent(event.worker_id),
        { worker_id: event.worker_id, events: [event] },
        { messageId: storedBatchMessageId({ worker_id: event.worker_id, events: [event] }) },
      );
    const seen: string[] = [];
    const subscription = await subscribeStoredEvents(throughProxy, {
      durableName: 'silent',
      workerId: 'wrk_silent',
      from: 'new',
      logger,
      handler: (e) => void seen.push(e.id),
    });
    await publish(stored('wrk_silent', 1));
    await waitFor('the first event', () => seen.length === 1, 5_000);

    proxy.silenceOpenConnections();
    const silencedAt = Date.now();
    for (let id = 2; id <= 4; id++) await publish(stored('wrk_silent', id));
    await waitFor('the events stored while the network was silent', () => seen.length === 4, 60_000, 100);
    const recoveredAfterMs = Date.now() - silencedAt;
    console.info(`silent network: the idle subscriber had the events stored meanwhile after ${recoveredAfterMs} ms`);
    expect(seen).toEqual(['1', '2', '3', '4']);
    expect(proxy.connections).toBeGreaterThanOrEqual(2);

    await publish(stored('wrk_silent', 5));
    await waitFor('the next event, on the new connection', () => seen.length === 5, 5_000);
    expect(seen).toEqual(['1', '2', '3', '4', '5']);
    await subscription.stop();
  }, 90_000);
});
