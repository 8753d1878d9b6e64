import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storedBatchMessageId, streams, subjects, type StoredEvent } from '@svc/protocol';
import { createLogger } from '@svc/service-kit';
import { connectBus, type NatsConnection } from './connection.js';
import { createDurablePublisher } from './durable-publisher.js';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { ensureStreams } from './streams.js';
import { subscribeStoredEvents } from './stored-events.js';
import { natsAuthorization, type NatsCredentials } from './nats-auth.js';

const logger = createLogger({ name: 'stored-events-test', level: 'silent' });

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

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 5000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('bus — durable subscribers to stored events', () => {
  let server: NatsServerProcess<NatsCredentials>;
  let nc: NatsConnection;
  beforeAll(async () => {
    server = await launchNatsServer({ authorization: natsAuthorization() });
    nc = await connectBus({ servers: server.url, name: 'test', logger, credentials: server.credentials.operator });
    await ensureStreams(nc);
  });
  afterAll(async () => {
    await nc?.close();
    await server?.stop();
  });

  const publish = (...events: StoredEvent[]) => {
    const batch = { worker_id: events[0]!.worker_id, events };
    return createDurablePublisher(nc).publish(subjects.storedEvent(batch.worker_id), batch, { messageId: storedBatchMessageId(batch) });
  };

  it("receives every worker's events in order; a restart with the same name resumes without repeats", async () => {
    const seen: string[] = [];
    const first = await subscribeStoredEvents(nc, { durableName: 'audit', logger, handler: (e) => void seen.push(`${e.worker_id}/${e.id}`) });
    for (let id = 1; id <= 3; id++) await publish(stored('wrk_a', id));
    await publish(stored('wrk_b', 1));
    await until(() => seen.length === 4);
    await first.stop();
    await publish(stored('wrk_a', 4));
    const second = await subscribeStoredEvents(nc, { durableName: 'audit', logger, handler: (e) => void seen.push(`${e.worker_id}/${e.id}`) });
    await until(() => seen.length === 5);
    expect(seen).toEqual(['wrk_a/1', 'wrk_a/2', 'wrk_a/3', 'wrk_b/1', 'wrk_a/4']);
    await second.stop();
  });

  it('an idle subscriber whose consumer is deleted (a cluster lost it) makes it again and hands over what comes next', async () => {
    const seen: string[] = [];
    const subscription = await subscribeStoredEvents(nc, {
      durableName: 'idle',
      workerId: 'wrk_idle',
      from: 'new',
      logger,
      handler: (e) => void seen.push(e.id),
    });
    await publish(stored('wrk_idle', 1));
    await until(() => seen.length === 1);
    const jsm = await jetstreamManager(nc);
    await jsm.consumers.delete(streams.storedEvents.name, 'idle');
    const deletedAt = Date.now();
    await until(async () => (await jsm.consumers.info(streams.storedEvents.name, 'idle').catch(() => undefined)) !== undefined, 60_000);
    const remadeAfterMs = Date.now() - deletedAt;
    await publish(stored('wrk_idle', 2));
    await until(() => seen.length === 2);
    expect(seen).toEqual(['1', '2']);
    // The server tells a waiting pull that its consumer is gone: noticed at once, not after missed heartbeats.
    expect(remadeAfterMs).toBeLessThan(5_000);
    await subscription.stop();
  }, 90_000);

  it('a failing handler gets the event again, and order is kept', async () => {
    const seen: string[] = [];
    let attemptsOfFirst = 0;
    const subscription = await subscribeStoredEvents(nc, {
      durableName: 'flaky',
      workerId: 'wrk_c',
      logger,
      handler: (e) => {
        if (e.id === '1' && ++attemptsOfFirst === 1) throw new Error('first try fails');
        seen.push(e.id);
      },
    });
    await publish(stored('wrk_c', 1));
    await publish(stored('wrk_c', 2));
    await until(() => seen.length === 2);
    expect(seen).toEqual(['1', '2']);
    expect(attemptsOfFirst).toBe(2);
    await subscription.stop();
  });

  it('an announcement of several events hands each over once; a repeat (after an ingest crash) or a retry part-way hands over only what is new', async () => {
    const seen: string[] = [];
    let failed = false;
    const subscription = await subscribeStoredEvents(nc, {
      durableName: 'batches',
      workerId: 'wrk_d',
      logger,
      handler: (e) => {
        if (e.id === '3' && !failed) {
          failed = true;
          throw new Error('fails once, in the middle of a batch');
        }
        seen.push(e.id);
      },
    });
    await publish(stored('wrk_d', 1), stored('wrk_d', 2), stored('wrk_d', 3));
    // Re-announced with other batch boundaries, as after a crash between commit and acknowledgement.
    await publish(stored('wrk_d', 2), stored('wrk_d', 3), stored('wrk_d', 4));
    await until(() => seen.length === 4);
    expect(seen).toEqual(['1', '2', '3', '4']);
    expect(failed).toBe(true);
    await subscription.stop();
  });
});
