import { AckPolicy, jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsMsg } from '@svc/bus';
import { startBusFixture, waitFor, type BusFixture } from '@svc/test-support';
import { createAcknowledgements } from './acknowledgements.js';

/** How long acknowledgements wait for an announcement to travel with (`createAcknowledgements`' linger). */
const LINGER_MS = 300;
/** Well inside the linger: nothing is acknowledged yet. */
const WITHIN_LINGER_MS = 100;

/** The replica's shared acknowledgements (acknowledgements.ts), against a real nats-server's JetStream. */
describe('acknowledgements of stored and announced messages', () => {
  let bus: BusFixture;
  const stream = 'ACK_TEST';
  let consumerCount = 0;

  beforeAll(async () => {
    bus = await startBusFixture();
    const jsm = await jetstreamManager(bus.nc);
    await jsm.streams.add({ name: stream, subjects: ['acktest.>'] });
  });
  afterAll(async () => bus?.stop());

  /** Publishes `count` messages on a subject of their own and takes them from a fresh consumer, unacknowledged. */
  async function delivered(count: number): Promise<{ msgs: JsMsg[]; ackPending(): Promise<number> }> {
    const name = `c${consumerCount++}`;
    const subject = `acktest.${name}`;
    const js = jetstream(bus.nc);
    for (let n = 0; n < count; n++) await js.publish(subject, `m${n}`);
    const jsm = await jetstreamManager(bus.nc);
    await jsm.consumers.add(stream, { durable_name: name, filter_subject: subject, ack_policy: AckPolicy.Explicit });
    const batch = await (await js.consumers.get(stream, name)).fetch({ max_messages: count, expires: 2000 });
    const msgs: JsMsg[] = [];
    for await (const msg of batch) msgs.push(msg);
    expect(msgs).toHaveLength(count);
    return { msgs, ackPending: async () => (await jsm.consumers.info(stream, name)).num_ack_pending };
  }

  it('wait for an announcement to travel with, and go on their own after the linger when none comes', async () => {
    const acknowledgements = createAcknowledgements(LINGER_MS);
    const { msgs, ackPending } = await delivered(3);
    const added = performance.now();
    acknowledgements.add(msgs);
    await new Promise((resolve) => setTimeout(resolve, WITHIN_LINGER_MS));
    expect(await ackPending()).toBe(3);
    await waitFor('the lingering acknowledgements sent', async () => (await ackPending()) === 0, 5000, 20);
    expect(performance.now() - added).toBeGreaterThanOrEqual(LINGER_MS - 10);
  });

  it('leave at once, every partition’s together, when an announcement is published (flush)', async () => {
    const acknowledgements = createAcknowledgements(60_000);
    const [first, second] = [await delivered(2), await delivered(1)];
    acknowledgements.add(first.msgs);
    acknowledgements.add(second.msgs);
    acknowledgements.flush();
    await waitFor('both partitions acknowledged', async () => (await first.ackPending()) === 0 && (await second.ackPending()) === 0, 2000, 20);
    // Nothing is left to send later: a flush with nothing waiting sends nothing.
    acknowledgements.flush();
    acknowledgements.add([]);
    expect(await first.ackPending()).toBe(0);
  });
});
