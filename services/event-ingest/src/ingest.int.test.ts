import { jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createDurablePublisher, createIncomingEventPublisher, ensureStreams, partitionConsumerName, requestJson } from '@svc/bus';
import {
  LIFECYCLE_SUBTYPES,
  partitionOfWorker,
  streams,
  subjects,
  type IncomingEvent,
  type IncomingEventMessageType,
  type ListResponseOf,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import { metricsRegistry, type RunningService } from '@svc/service-kit';
import { openDatabase, type StoreDatabase } from '@svc/store';
import { systemEvent, startBusFixture, startPostgres, waitFor, type BusFixture, type PostgresProcess } from '@svc/test-support';
import { start } from './index.js';

describe('event-ingest — from JetStream to the store and the stored-event stream', () => {
  let bus: BusFixture;
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  let replicas: RunningService[];

  beforeAll(async () => {
    [bus, postgres] = await Promise.all([startBusFixture(), startPostgres()]);
    await ensureStreams(bus.nc);
    database = await openDatabase({ url: postgres.url });
    // Two replicas share the partitions, as in a deployment.
    replicas = [];
    for (const replicaIndex of [0, 1]) {
      replicas.push(await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: `ingest-${replicaIndex}`, replicaIndex, replicaCount: 2 }));
    }
  });
  afterAll(async () => {
    for (const replica of replicas ?? []) await replica.stop();
    await database?.close();
    await Promise.all([bus?.stop(), postgres?.stop()]);
  });

  async function post(workerId: string, events: IncomingEvent[]) {
    const publisher = createIncomingEventPublisher(bus.nc, 'worker');
    for (const event of events) await publisher.publish(workerId, event);
    publisher.close();
  }
  const list = (workerId: string, afterId = '0') =>
    requestJson<ListResponseOf<StoredEvent>>(bus.nc, subjects.rpc.listEvents, { worker_id: workerId, after_id: afterId, limit: 1000 });

  it("events of many workers (both replicas' partitions) are stored once each, in order, and acknowledged", async () => {
    const workers = Array.from({ length: 12 }, (_, i) => `wrk_ingest_${i}`);
    expect(new Set(workers.map((w) => partitionOfWorker(w) % 2)).size).toBe(2);
    await Promise.all(
      workers.map((workerId) =>
        post(
          workerId,
          Array.from({ length: 30 }, (_, n) => systemEvent(`${workerId}:${n}`)),
        ),
      ),
    );
    for (const workerId of workers) {
      const page = await waitFor(`${workerId} stored`, async () => {
        const result = await list(workerId);
        return result.items.length === 30 ? result : undefined;
      });
      expect(page.items.map((e) => e.id)).toEqual(Array.from({ length: 30 }, (_, i) => String(i + 1)));
      expect(page.items.map((e) => e.uid)).toEqual(Array.from({ length: 30 }, (_, n) => `${workerId}:${n}`));
    }
    const jsm = await jetstreamManager(bus.nc);
    await waitFor('the work queue to empty', async () => (await jsm.streams.info(streams.incomingEvents.name)).state.messages === 0);
  });

  it('a partition consumer taken away under a running replica (a cluster server lost, the consumer gone) is made again: the events that follow are stored, in order, and the process lives', async () => {
    const workerId = 'wrk_consumer_gone';
    await post(workerId, [systemEvent('g1'), systemEvent('g2')]);
    await waitFor('the first events stored', async () => (await list(workerId)).items.length === 2);
    const jsm = await jetstreamManager(bus.nc);
    await jsm.consumers.delete(streams.incomingEvents.name, partitionConsumerName(partitionOfWorker(workerId)));
    await post(workerId, [systemEvent('g3'), systemEvent('g4')]);
    const page = await waitFor(
      'the events after the loss stored',
      async () => {
        const result = await list(workerId);
        return result.items.length === 4 ? result : undefined;
      },
      15_000,
    );
    expect(page.items.map((e) => `${e.id}:${e.uid}`)).toEqual(['1:g1', '2:g2', '3:g3', '4:g4']);
  });

  it('stored events are announced on svc.events.stored.<worker>, one batch per commit, with their ids', async () => {
    const workerId = 'wrk_announced';
    const announced: StoredEventBatchType[] = [];
    const sub = bus.nc.subscribe(subjects.storedEvent(workerId), { callback: (_err, msg) => void announced.push(msg.json<StoredEventBatchType>()) });
    await post(workerId, [systemEvent('a1'), systemEvent('a2')]);
    await waitFor('both announced', () => announced.flatMap((b) => b.events).length === 2);
    expect(announced.every((b) => b.worker_id === workerId)).toBe(true);
    expect(announced.flatMap((b) => b.events).map((e) => [e.id, e.uid])).toEqual([
      ['1', 'a1'],
      ['2', 'a2'],
    ]);
    sub.unsubscribe();
  });

  it('an agent exit is announced a second time on svc.events.lifecycle.<worker>, alone (the session service reads only those)', async () => {
    const workerId = 'wrk_exits';
    const exits: StoredEventBatchType[] = [];
    const sub = bus.nc.subscribe(subjects.lifecycleEvent(workerId), { callback: (_err, msg) => void exits.push(msg.json<StoredEventBatchType>()) });
    const exit: IncomingEvent = {
      type: 'system',
      uid: 'exit',
      ts: new Date().toISOString(),
      data: { level: 'info', subtype: LIFECYCLE_SUBTYPES.agentExit, message: 'the agent exited', details: { code: 3 } },
    };
    await post(workerId, [systemEvent('before'), exit]);
    await waitFor('the exit announced', () => exits.length === 1);
    expect(exits[0]!.events.map((e) => [e.id, e.uid])).toEqual([['2', 'exit']]);
    const kept = await (await jetstreamManager(bus.nc)).streams.getMessage(streams.lifecycleEvents.name, { last_by_subj: subjects.lifecycleEvent(workerId) });
    expect(kept?.json<StoredEventBatchType>().events.map((e) => e.uid)).toEqual(['exit']);
    sub.unsubscribe();
  });

  it("a gathered message (several workers' events, one JetStream message) is stored in order per worker; a bad event in it is dropped alone, a message with no good one for good", async () => {
    const partition = partitionOfWorker('wrk_gathered_0');
    const [a, b] = Array.from({ length: 200 }, (_, n) => `wrk_gathered_${n}`).filter((w) => partitionOfWorker(w) === partition);
    const entry = (workerId: string, event: unknown): IncomingEventMessageType => ({ worker_id: workerId, event, received_at: new Date().toISOString() });
    const publisher = createDurablePublisher(bus.nc);
    const gathered = (events: IncomingEventMessageType[], messageId: string) => publisher.publish(subjects.incomingBatch(partition), { events }, { messageId });
    await gathered(
      [entry(a!, systemEvent('a1')), entry(b!, systemEvent('b1')), entry(a!, { type: 'system', uid: 'a-bad' }), entry(a!, systemEvent('a2'))],
      'gathered-1',
    );
    await gathered([entry(b!, { type: 'nonsense', uid: 'b-bad' })], 'gathered-2');
    await gathered([entry(b!, systemEvent('b2')), entry(a!, systemEvent('a3'))], 'gathered-3');
    publisher.close();
    await waitFor('both workers stored', async () => (await list(a!)).total === 3 && (await list(b!)).total === 2);
    expect((await list(a!)).items.map((e) => [e.id, e.uid])).toEqual([
      ['1', 'a1'],
      ['2', 'a2'],
      ['3', 'a3'],
    ]);
    expect((await list(b!)).items.map((e) => [e.id, e.uid])).toEqual([
      ['1', 'b1'],
      ['2', 'b2'],
    ]);
    const jsm = await jetstreamManager(bus.nc);
    await waitFor('every gathered message acknowledged or dropped', async () => (await jsm.streams.info(streams.incomingEvents.name)).state.messages === 0);
  });

  it('a uid posted again after the duplicate window is still stored once', async () => {
    const workerId = 'wrk_repost';
    await post(workerId, [systemEvent('r1')]);
    await waitFor('r1 stored', async () => (await list(workerId)).total === 1);
    // A different JetStream message id gets past JetStream's de-duplication; the store catches it.
    const message: IncomingEventMessageType = { worker_id: workerId, event: systemEvent('r1'), received_at: new Date().toISOString() };
    await createDurablePublisher(bus.nc).publish(subjects.incomingEvent(partitionOfWorker(workerId), workerId), message, { messageId: 'another-id' });
    await post(workerId, [systemEvent('r2')]);
    await waitFor('r2 stored', async () => (await list(workerId)).total === 2);
    expect((await list(workerId)).items.map((e) => e.uid)).toEqual(['r1', 'r2']);
  });

  it('rides out a store outage: appends retry until Postgres is back, then every event is stored once, in order', async () => {
    const workerId = 'wrk_outage';
    await post(workerId, [systemEvent('before')]);
    await waitFor('the first event stored', async () => (await list(workerId)).total === 1);
    const appendFailures = async () => (await metricsRegistry.getSingleMetric('svc_ingest_append_failures_total')!.get()).values[0]?.value ?? 0;
    const failuresBefore = await appendFailures();
    await postgres.suspend();
    await post(
      workerId,
      Array.from({ length: 20 }, (_, n) => systemEvent(`during-${n}`)),
    );
    // Postgres comes back only once the appends have really failed and been retried.
    await waitFor('an append failed and retried', async () => (await appendFailures()) >= failuresBefore + 2, 15_000);
    await postgres.resume();
    // `items` and `total` are read side by side, so `total` may already count a commit `items` missed.
    const page = await waitFor(
      'all 21 stored',
      async () => {
        const result = await list(workerId).catch(() => undefined);
        return result?.items.length === 21 ? result : undefined;
      },
      20_000,
    );
    expect(page.items.map((e) => e.uid)).toEqual(['before', ...Array.from({ length: 20 }, (_, n) => `during-${n}`)]);
    expect(page.items.map((e) => e.id)).toEqual(Array.from({ length: 21 }, (_, i) => String(i + 1)));
    const jsm = await jetstreamManager(bus.nc);
    await waitFor('the work queue to empty', async () => (await jsm.streams.info(streams.incomingEvents.name)).state.messages === 0);
  });

  it('a list query names a bad field; an unknown worker has no events', async () => {
    await expect(requestJson(bus.nc, subjects.rpc.listEvents, { worker_id: 'wrk_x', after_id: '-1', limit: 10 })).rejects.toMatchObject({
      code: 'invalid_request',
    });
    expect(await list('wrk_nobody')).toEqual({ items: [], total: 0 });
  });

  it("a list query with with_last_id also answers the worker's highest id, whatever the type filter", async () => {
    await post('wrk_head', [systemEvent('wrk_head:0'), systemEvent('wrk_head:1')]);
    await waitFor('wrk_head stored', async () => (await list('wrk_head')).items.length === 2);
    const query = { worker_id: 'wrk_head', after_id: '1', limit: 10, with_last_id: true };
    expect(await requestJson(bus.nc, subjects.rpc.listEvents, query)).toMatchObject({ items: [{ id: '2' }], total: 2, last_id: '2' });
    expect(await requestJson(bus.nc, subjects.rpc.listEvents, { ...query, types: ['control_response'] })).toEqual({ items: [], total: 0, last_id: '2' });
    expect(await requestJson(bus.nc, subjects.rpc.listEvents, { ...query, worker_id: 'wrk_nobody' })).toEqual({ items: [], total: 0, last_id: '0' });
  });
});
