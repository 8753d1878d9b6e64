import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIncomingEventPublisher, ensureStreams, requestJson } from '@svc/bus';
import {
  controlResponseUid,
  EVENT_PARTITIONS,
  partitionOfWorker,
  subjects,
  type DecisionAppendResultType,
  type EventSource,
  type StoredEventBatchType,
} from '@svc/protocol';
import type { RunningService } from '@svc/service-kit';
import { openDatabase, sql, type StoreDatabase } from '@svc/store';
import { startBusFixture, startPostgres, waitFor, type BusFixture, type PostgresProcess } from '@svc/test-support';
import { start } from './index.js';

const request = (requestId: string) => ({
  type: 'control_request' as const,
  uid: `cr-${requestId}`,
  ts: new Date().toISOString(),
  data: { request_id: requestId, tool_name: 'Bash', input: { command: 'ls' } },
});
const decision = (requestId: string, decidedBy: string, source: EventSource) => ({
  type: 'control_response' as const,
  uid: controlResponseUid(requestId),
  ts: new Date().toISOString(),
  data: { request_id: requestId, decision: 'allow', decided_by: decidedBy },
  source,
});

/** How soon the late decision must start (its turn comes after the held batch). */
const START_WITHIN_MS = 100;

describe("event-ingest — decisions appended by the worker's one writer", () => {
  let bus: BusFixture;
  let postgres: PostgresProcess;
  let database: StoreDatabase;
  let ingest: RunningService;

  beforeAll(async () => {
    [bus, postgres] = await Promise.all([startBusFixture(), startPostgres()]);
    await ensureStreams(bus.nc);
    database = await openDatabase({ url: postgres.url });
    ingest = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'ingest-0', replicaIndex: 0, replicaCount: 1 });
  });
  afterAll(async () => {
    await ingest?.stop();
    await database?.close();
    await Promise.all([bus?.stop(), postgres?.stop()]);
  });

  const append = (workerId: string, body: Record<string, unknown>, partition = partitionOfWorker(workerId)) =>
    requestJson<DecisionAppendResultType>(bus.nc, subjects.decisionAppend(partition), {
      worker_id: workerId,
      start_within_ms: 5000,
      attempt_id: randomUUID(),
      ...body,
    });

  /** A worker with one stored control request, and the batches announced for it from now on. */
  async function workerWithRequest(workerId: string, requestId: string) {
    const announced: StoredEventBatchType[] = [];
    const sub = bus.nc.subscribe(subjects.storedEvent(workerId), { callback: (_err, msg) => void announced.push(msg.json<StoredEventBatchType>()) });
    const publisher = createIncomingEventPublisher(bus.nc, 'worker');
    await publisher.publish(workerId, request(requestId));
    publisher.close();
    await waitFor('the request announced', () => announced.length === 1);
    return { announced, stop: () => sub.unsubscribe() };
  }

  it("decision appends — a person's decision is checked and stored, then announced after the worker's earlier events, in id order", async () => {
    const workerId = 'wrk_person';
    const worker = await workerWithRequest(workerId, 'r1');
    const result = await append(workerId, { decision: decision('r1', 'alice', 'user:api:alice'), person_timeout_s: 600 });
    expect(result).toMatchObject({ outcome: 'stored', decision: { id: '2', source: 'user:api:alice' }, request: { id: '1' } });
    expect(Date.parse(result.request_stored_at!)).toBeGreaterThan(Date.now() - 60_000);
    await waitFor('the decision announced', () => worker.announced.length === 2);
    expect(worker.announced.flatMap((batch) => batch.events).map((event) => [event.id, event.type])).toEqual([
      ['1', 'control_request'],
      ['2', 'control_response'],
    ]);
    // A second person finds the first decision.
    const second = await append(workerId, { decision: decision('r1', 'bob', 'user:api:bob'), person_timeout_s: 600 });
    expect(second).toMatchObject({ outcome: 'decided', decision: { id: '2', data: { decided_by: 'alice' } } });
    worker.stop();
  });

  it('decision appends — a try whose earlier try was stored is answered stored; another decision, even the same to the millisecond, decided', async () => {
    const workerId = 'wrk_retried';
    const worker = await workerWithRequest(workerId, 'r1');
    const mine = decision('r1', 'alice', 'user:console:alice');
    expect(await append(workerId, { decision: mine, person_timeout_s: 600, attempt_id: 'try-1' })).toMatchObject({ outcome: 'stored', decision: { id: '2' } });
    // Its answer lost, the same decision asked again: stored, by that try.
    expect(await append(workerId, { decision: mine, person_timeout_s: 600, attempt_id: 'try-1' })).toMatchObject({ outcome: 'stored', decision: { id: '2' } });
    // The same person's second click, identical to the millisecond: someone (they) decided already.
    expect(await append(workerId, { decision: mine, person_timeout_s: 600, attempt_id: 'try-2' })).toMatchObject({ outcome: 'decided', decision: { id: '2' } });
    expect(worker.announced.flatMap((batch) => batch.events).filter((event) => event.type === 'control_response')).toHaveLength(1);
    worker.stop();
  });

  it("decision appends — the deadline's decision is stored once; again, it is answered with the one stored", async () => {
    const workerId = 'wrk_deadline';
    const worker = await workerWithRequest(workerId, 'r1');
    expect(await append(workerId, { decision: decision('r1', 'policy:timeout', 'policy') })).toMatchObject({ outcome: 'stored', decision: { id: '2' } });
    expect(await append(workerId, { decision: decision('r1', 'policy:timeout', 'policy') })).toMatchObject({ outcome: 'decided', decision: { id: '2' } });
    worker.stop();
  });

  it('decision appends — a request that is unknown, or past its deadline, is said so and nothing is stored', async () => {
    const workerId = 'wrk_late';
    const worker = await workerWithRequest(workerId, 'r1');
    expect(await append(workerId, { decision: decision('nope', 'alice', 'user:api:alice'), person_timeout_s: 600 })).toEqual({ outcome: 'not_found' });
    // The request was stored before now, so a deadline of 1 ms is past.
    expect(await append(workerId, { decision: decision('r1', 'alice', 'user:api:alice'), person_timeout_s: 0.001 })).toMatchObject({
      outcome: 'expired',
      request: { id: '1' },
    });
    worker.stop();
  });

  it('decision appends — a decision for another partition, not a control_response, or without a source is refused', async () => {
    const workerId = 'wrk_refused';
    const otherPartition = (partitionOfWorker(workerId) + 1) % EVENT_PARTITIONS;
    const valid = decision('r1', 'alice', 'user:api:alice');
    await expect(append(workerId, { decision: valid }, otherPartition)).rejects.toMatchObject({ code: 'invalid_request', message: /is not of partition/ });
    await expect(append(workerId, { decision: { ...request('r1'), source: 'policy' } })).rejects.toMatchObject({
      code: 'invalid_request',
      message: /control_response/,
    });
    const { source: _source, ...unsourced } = valid;
    await expect(append(workerId, { decision: unsourced })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(append(workerId, { decision: { ...valid, source: 'someone' } })).rejects.toMatchObject({ code: 'invalid_request' });
  });

  it("decision appends — a decision that cannot start in time (the partition's batch is held up) is left, answered unavailable, and not stored", async () => {
    // Two workers of one partition: the first one's batch waits on a lock held here.
    const held = 'wrk_held';
    const late = Array.from({ length: 200 }, (_, i) => `wrk_late_${i}`).find((id) => partitionOfWorker(id) === partitionOfWorker(held))!;
    const lateWorker = await workerWithRequest(late, 'r1');
    await workerWithRequest(held, 'h0').then((worker) => worker.stop());
    // A second connection holds the first worker's head row, as a long transaction would.
    const locker = await openDatabase({ url: postgres.url });
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    let locked = () => {};
    const isLocked = new Promise<void>((resolve) => (locked = resolve));
    const holding = locker.db.transaction().execute(async (trx) => {
      await sql`SELECT 1 FROM event_streams WHERE worker_id = ${held} FOR UPDATE`.execute(trx);
      locked();
      await released;
    });
    try {
      await isLocked;
      const publisher = createIncomingEventPublisher(bus.nc, 'worker');
      await publisher.publish(held, request('h1'));
      publisher.close();
      // The held worker's batch is being stored (waiting for the lock) before the decision comes.
      await waitFor('the batch waiting for the lock', async () => {
        const { rows } = await sql<{ waiting: number }>`SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE wait_event_type = 'Lock'`.execute(
          locker.db,
        );
        return rows[0]!.waiting > 0;
      });
      const answer = append(late, { decision: decision('r1', 'alice', 'user:api:alice'), person_timeout_s: 600, start_within_ms: START_WITHIN_MS });
      // Held past the decision's start_within_ms, so its turn comes too late.
      await new Promise((resolve) => setTimeout(resolve, 3 * START_WITHIN_MS));
      release();
      await expect(answer).rejects.toMatchObject({ code: 'unavailable', message: /waited over 100 ms for its turn/ });
      const stored = await database.db.selectFrom('events').select('id').where('worker_id', '=', late).execute();
      expect(stored).toHaveLength(1);
    } finally {
      release();
      await holding;
      await locker.close();
      lateWorker.stop();
    }
  });
});
