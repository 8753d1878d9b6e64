import { Writable } from 'node:stream';
import { AckPolicy, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Objm } from '@nats-io/obj';
import { CodedError, subjects } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { connectBus, isBusUnavailable, type NatsConnection } from './connection.js';
import { createDurablePublisher } from './durable-publisher.js';
import { openBucketWhenReachable } from './kv-buckets.js';
import { openObjectStore, takeObjectStoreMadeElsewhere } from './object-stores.js';
import { consumeLasting } from './lasting-consumer.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';
import { consumeIncomingPartition, type JsMsg } from './partition-consumer.js';
import { ensureStreams, streamsWhenDeclared } from './streams.js';

const logger = createLogger({ name: 'lasting-consumer-test', level: 'silent' });
const PARTITION = 3;
const incoming = (n: number) => ({
  worker_id: 'w-lasting',
  event: { type: 'system', uid: `w-lasting:${n}`, ts: new Date().toISOString(), data: { level: 'info', message: `m${n}` } },
  received_at: new Date().toISOString(),
});

/** A logger whose lines the test reads: the start's "retrying" warnings. */
function recordingLogger(): { logger: typeof logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, callback) {
      lines.push(String(chunk));
      callback();
    },
  });
  return { logger: createLogger({ name: 'start-when-reachable-test', level: 'warn', destination }), lines };
}

/**
 * A service's start opens its durable consumers and KV buckets. A JetStream that does not answer then (NATS
 * restarting, a cluster electing leaders after a server's loss: the consumer's creation times
 * out) is waited out, not a reason for the process to die; a refusal still fails the start.
 *
 * NATS is started again right after the first try: a request made while NATS is away is lost
 * (the client drops what it holds when it connects again), so that try still times out (the
 * JetStream API's request timeout) and is retried, without the test waiting a second timeout out.
 */
describe('a service’s start opening its consumers, KV buckets and object stores (real nats-server)', () => {
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
    expect(openings).toBe(1);
    await server.restart();
    expect(await outcome).toBe('opened');
    // The first try timed out and was retried.
    expect(openings).toBeGreaterThan(1);

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
    const recording = recordingLogger();
    const opening = openBucketWhenReachable(nc, 'svc_start_test', recording.logger);
    // Seen as handled while the server is away (a rejection is awaited below).
    opening.catch(() => {});
    await server.restart();
    const kv = await opening;
    expect(recording.lines.some((line) => line.includes('a dependency is unavailable; retrying'))).toBe(true);
    await kv.put('k', 'v');
    expect((await kv.get('k'))?.string()).toBe('v');
  }, 60_000);

  it('services opening an object store together, with different replicas: each gets the one store', async () => {
    const stores = await Promise.all([1, 1, 1, 1, 1, 1].map(() => openObjectStore(nc, 'svc_start_test_objects', { keptMs: 60_000, replicas: 1 })));
    await stores[0]!.putBlob({ name: 'o' }, new TextEncoder().encode('kept'));
    for (const store of stores) expect(new TextDecoder().decode((await store.getBlob('o'))!)).toBe('kept');
  });

  it('an object store whose name is in use but that does not answer yet (a cluster still placing it) is waited out as NATS not ready', async () => {
    const err = await takeObjectStoreMadeElsewhere(new Objm(nc), 'svc_never_made').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CodedError);
    expect((err as CodedError).code).toBe('bus_unavailable');
    expect((err as CodedError).message).toContain('svc_never_made is being made by another service');
    expect(isBusUnavailable(err)).toBe(true);
  });
});

describe('a service that reads the streams but does not declare them (session, gateway)', () => {
  it('waits at its start until another service has declared them, then goes on', async () => {
    const server = await launchNatsServer({ authorization: natsAuthorization() });
    const nc = await connectBus({ servers: server.url, name: 'declared', logger, credentials: server.credentials.operator });
    try {
      const recording = recordingLogger();
      let done = false;
      const waiting = streamsWhenDeclared(nc, recording.logger).then(() => (done = true));
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(done).toBe(false);
      expect(recording.lines.some((line) => line.includes('waiting for event-ingest or control to declare the streams'))).toBe(true);
      await ensureStreams(nc);
      await waiting;
      expect(done).toBe(true);
    } finally {
      await nc.close();
      await server.stop();
    }
  }, 30_000);
});
