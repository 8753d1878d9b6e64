import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { connectBus, type NatsConnection } from './connection.js';
import { createDurablePublisher } from './durable-publisher.js';
import { openBucketWhenReachable } from './kv-buckets.js';
import { consumeLasting } from './lasting-consumer.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';
import { consumeIncomingPartition, type JsMsg } from './partition-consumer.js';
import { ensureStreams } from './streams.js';

const logger = createLogger({ name: 'lasting-consumer-test', level: 'silent' });
const PARTITION = 3;
const incoming = (n: number) => ({
  worker_id: 'w-lasting',
  event: { type: 'system', uid: `w-lasting:${n}`, ts: new Date().toISOString(), data: { level: 'info', message: `m${n}` } },
  received_at: new Date().toISOString(),
});

/**
 * A service's start opens its durable consumers and KV buckets. A JetStream that does not answer then (NATS
 * restarting, a cluster electing leaders after a server's loss: the consumer's creation times
 * out) is waited out, not a reason for the process to die; a refusal still fails the start.
 */
describe('a service’s start opening its consumers and KV buckets (real nats-server)', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({ servers: server.url, name: 'lasting', logger, credentials: server.credentials.operator });
    await ensureStreams(nc);
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  it('NATS gone when the consumer is first opened (its creation times out): waits, opens it once NATS is back, and hands over every message', async () => {
    await server.kill();
    const handled: string[] = [];
    let openings = 0;
    const starting = consumeLasting(
      () => {
        openings++;
        return consumeIncomingPartition(nc, PARTITION);
      },
      (msg: JsMsg) => {
        handled.push(msg.json<{ event: { uid: string } }>().event.uid);
        msg.ack();
      },
      { logger, what: `partition ${PARTITION}` },
    );
    const outcome = starting.then(
      () => 'opened',
      (err: unknown) => err,
    );
    // Longer than a JetStream API request's timeout: the first tries fail while the server is away.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(openings).toBeGreaterThan(1);
    await server.restart();
    expect(await outcome).toBe('opened');

    const publisher = createDurablePublisher(nc);
    for (let n = 0; n < 3; n++) await publisher.publish(subjects.incomingEvent(PARTITION, 'w-lasting'), incoming(n), { messageId: `w-lasting:${n}` });
    const deadline = Date.now() + 10_000;
    while (handled.length < 3 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(handled).toEqual(['w-lasting:0', 'w-lasting:1', 'w-lasting:2']);
    publisher.close();
    await (await starting).stop();
  }, 60_000);

  it('a consumer JetStream refuses (no such stream): the start fails at once with JetStream’s reason', async () => {
    const jsm = await jetstreamManager(nc);
    const started = Date.now();
    await expect(
      consumeLasting(
        async () => {
          await jsm.consumers.add('SVC_NO_SUCH_STREAM', { durable_name: 'nobody', ack_policy: AckPolicy.Explicit });
          throw new Error('unreachable: the stream does not exist');
        },
        () => {},
        { logger, what: 'a consumer of a stream that is not there' },
      ),
    ).rejects.toThrow(/stream not found/);
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  it('NATS gone when a KV bucket is first opened: waits, and opens it once NATS is back', async () => {
    await server.kill();
    const opening = openBucketWhenReachable(nc, 'svc_start_test', logger);
    // Seen as handled while the server is away (a rejection is awaited below).
    opening.catch(() => {});
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    await server.restart();
    const kv = await opening;
    await kv.put('k', 'v');
    expect((await kv.get('k'))?.string()).toBe('v');
  }, 60_000);
});
