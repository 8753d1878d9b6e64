import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstreamManager } from '@nats-io/jetstream';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { partitionOfWorker, streams, subjects, type IncomingEvent, type IncomingEventBatchMessageType, type IncomingEventMessageType } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { connectBus, type NatsConnection } from './connection.js';
import { createDurablePublisher } from './durable-publisher.js';
import { createEventCoalescer, type CoalescingSettings } from './event-coalescer.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';
import { ensureStreams } from './streams.js';

const logger = createLogger({ name: 'coalescer-test', level: 'silent' });
const event = (uid: string): IncomingEvent => ({ type: 'system', uid, ts: new Date().toISOString(), data: { level: 'info', message: uid } });
const receivedAt = new Date().toISOString();
/** What a worker posts (the gateway's choice of source is tested with the route). */
const sourceOf = () => 'worker' as const;

/** `count` worker ids in `partition` (and only there). */
function workersOf(partition: number, count: number, tag: string): string[] {
  const found: string[] = [];
  for (let n = 0; found.length < count; n++) if (partitionOfWorker(`wrk_${tag}${n}`) === partition) found.push(`wrk_${tag}${n}`);
  return found;
}

type Stored = { subject: string; messageId: string | undefined; body: IncomingEventMessageType | IncomingEventBatchMessageType };

/**
 * Coalescing at the gateway (docs/event-ingest.md), against a real nats-server with the
 * incoming-event stream: what lands in JetStream for POSTs of one partition.
 */
describe('the event coalescer (real nats-server, JetStream)', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;

  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({ servers: server.url, name: 'coalescer', logger, credentials: server.credentials.operator });
    await ensureStreams(nc);
  }, 30_000);
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  /** The stream's messages after `afterSeq`, in stream order. */
  async function storedAfter(afterSeq: number): Promise<Stored[]> {
    const jsm = await jetstreamManager(nc);
    const last = (await jsm.streams.info(streams.incomingEvents.name)).state.last_seq;
    const stored: Stored[] = [];
    for (let seq = afterSeq + 1; seq <= last; seq++) {
      const msg = await jsm.streams.getMessage(streams.incomingEvents.name, { seq });
      if (msg) stored.push({ subject: msg.subject, messageId: msg.header?.get('Nats-Msg-Id'), body: msg.json() });
    }
    return stored;
  }
  const lastSeq = async () => (await (await jetstreamManager(nc)).streams.info(streams.incomingEvents.name)).state.last_seq;
  const uidsOf = (stored: Stored) =>
    'events' in stored.body ? stored.body.events.map((e) => (e.event as IncomingEvent).uid) : [(stored.body.event as IncomingEvent).uid];

  function coalescer(settings: Partial<CoalescingSettings> = {}) {
    const publisher = createDurablePublisher(nc);
    return { publisher, coalescer: createEventCoalescer(publisher, { windowMs: 1, maxEvents: 1000, maxBytes: 512 * 1024, ...settings }) };
  }

  it("POSTs of one partition's workers arriving together share one message, in the order received; one event alone keeps its own form and its uid as message id", async () => {
    const { publisher, coalescer: gateway } = coalescer();
    const [a, b, c] = workersOf(3, 3, 'together');
    const before = await lastSeq();
    await Promise.all([
      gateway.publish(a!, [event('a1'), event('a2')], { receivedAt, sourceOf, requestId: 'req-a' }),
      gateway.publish(b!, [event('b1')], { receivedAt, sourceOf }),
      gateway.publish(c!, [event('c1'), event('c2'), event('c3')], { receivedAt, sourceOf }),
    ]);
    const lonely = workersOf(4, 1, 'lonely')[0]!;
    await gateway.publish(lonely, [event('l1')], { receivedAt, sourceOf });
    publisher.close();

    const stored = await storedAfter(before);
    expect(stored).toHaveLength(2);
    expect(stored[0]!.subject).toBe(subjects.incomingBatch(3));
    expect(stored[0]!.messageId).toMatch(/^batch:[0-9a-f]+:\d+$/);
    expect(uidsOf(stored[0]!)).toEqual(['a1', 'a2', 'b1', 'c1', 'c2', 'c3']);
    expect((stored[0]!.body as IncomingEventBatchMessageType).events.map((e) => e.worker_id)).toEqual([a, a, b, c, c, c]);
    expect(stored[1]).toEqual({
      subject: subjects.incomingEvent(4, lonely),
      messageId: `${lonely}:l1`,
      body: { worker_id: lonely, event: expect.objectContaining({ uid: 'l1' }), received_at: receivedAt, source: 'worker' },
    });
  });

  it('while a message of the partition is in flight the next one fills, and goes when the first is acknowledged, not after the window', async () => {
    const { publisher, coalescer: gateway } = coalescer({ windowMs: 100 });
    const [a, b, c] = workersOf(5, 3, 'inflight');
    const before = await lastSeq();
    const started = performance.now();
    const first = gateway.publish(a!, [event('a1')], { receivedAt, sourceOf });
    // The first message leaves at the end of this turn; these come in the next, while it is in flight.
    await new Promise((resolve) => setImmediate(resolve));
    const later = [gateway.publish(b!, [event('b1')], { receivedAt, sourceOf }), gateway.publish(c!, [event('c1')], { receivedAt, sourceOf })];
    await Promise.all([first, ...later]);
    const took = performance.now() - started;
    publisher.close();
    const stored = await storedAfter(before);
    expect(stored.map(uidsOf)).toEqual([['a1'], ['b1', 'c1']]);
    expect(took).toBeLessThan(100);
  });

  it('a POST larger than a message is split in order across several, and answered once all are durable', async () => {
    const { publisher, coalescer: gateway } = coalescer({ maxEvents: 3 });
    const [a] = workersOf(6, 1, 'split');
    const before = await lastSeq();
    await gateway.publish(
      a!,
      Array.from({ length: 7 }, (_, n) => event(`s${n}`)),
      { receivedAt, sourceOf },
    );
    publisher.close();
    expect((await storedAfter(before)).map(uidsOf)).toEqual([['s0', 's1', 's2'], ['s3', 's4', 's5'], ['s6']]);
  });

  it('a byte bound splits too', async () => {
    const { publisher, coalescer: gateway } = coalescer({ maxBytes: 600 });
    const [a] = workersOf(7, 1, 'bytes');
    const before = await lastSeq();
    await gateway.publish(
      a!,
      Array.from({ length: 6 }, (_, n) => event(`b${n}`)),
      { receivedAt, sourceOf },
    );
    publisher.close();
    const stored = await storedAfter(before);
    expect(stored.length).toBeGreaterThan(1);
    expect(stored.flatMap(uidsOf)).toEqual(['b0', 'b1', 'b2', 'b3', 'b4', 'b5']);
    for (const message of stored) expect(JSON.stringify(message.body).length).toBeLessThanOrEqual(600);
  });

  it('window 0: each POST is its own message, even when they arrive together', async () => {
    const { publisher, coalescer: gateway } = coalescer({ windowMs: 0 });
    const [a, b] = workersOf(8, 2, 'zero');
    const before = await lastSeq();
    await Promise.all([
      gateway.publish(a!, [event('a1'), event('a2')], { receivedAt, sourceOf }),
      gateway.publish(b!, [event('b1'), event('b2')], { receivedAt, sourceOf }),
    ]);
    publisher.close();
    expect((await storedAfter(before)).map(uidsOf)).toEqual([
      ['a1', 'a2'],
      ['b1', 'b2'],
    ]);
  });

  it('when the message cannot be made durable (NATS gone), every POST in it fails as bus_unavailable', async () => {
    const gone = await connectBus({ servers: server.url, name: 'coalescer-gone', logger, credentials: server.credentials.operator });
    const gateway = createEventCoalescer(createDurablePublisher(gone), { windowMs: 1, maxEvents: 1000, maxBytes: 512 * 1024 });
    await gone.close();
    const [a, b] = workersOf(9, 2, 'fails');
    const posts = [gateway.publish(a!, [event('a1')], { receivedAt, sourceOf }), gateway.publish(b!, [event('b1')], { receivedAt, sourceOf })];
    for (const post of posts) await expect(post).rejects.toMatchObject({ code: 'bus_unavailable' });
  });
});
