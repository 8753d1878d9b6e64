import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUserAssertion } from '@svc/auth';
import { ensureStreams, requestJson } from '@svc/bus';
import { start as startEventIngest } from '@svc/event-ingest';
import {
  partitionOfWorker,
  subjects,
  type DecisionAppendRequestType,
  type ListResponseOf,
  type PermissionRule,
  type ServiceHealth,
  type SourcedEvent,
  type StoredEvent,
  type StoredEventBatchType,
} from '@svc/protocol';
import { createEventStore, migrateToLatest, openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, waitFor, type BusFixture } from '@svc/test-support';
import { readConfig, type RunningService } from '@svc/service-kit';
import { controlSettings, start } from './index.js';

/** The key a gateway would sign who decides with (docs/nats-security.md). */
const USER_ASSERTION_KEY = 'the-user-assertion-key-of-this-test-0123';
const asAlice = (workerId: string, requestId: string) =>
  signUserAssertion(USER_ASSERTION_KEY, { sub: 'alice', groups: [], admin: false, channel: 'api', workerId, requestId });

describe('control — start and stop', () => {
  let bus: BusFixture;
  let database: StoreDatabase;
  /** The worker's one writer: event-ingest appends every decision (docs/architecture.md). */
  let ingest: RunningService | undefined;
  const startIngest = async () =>
    (ingest = await startEventIngest({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'ingest-0', replicaIndex: 0, replicaCount: 1 }));
  beforeAll(async () => {
    bus = await startBusFixture();
    database = await openDatabase({});
    // The event log is event-ingest's to migrate; the control service only reads it.
    await migrateToLatest(database.db, 'event-ingest');
    // Its webhook queue and the lifecycle stream it follows (control's main waits for them too).
    await ensureStreams(bus.nc);
    await startIngest();
  });
  afterAll(async () => {
    await ingest?.stop();
    await database?.close();
    await bus?.stop();
  });

  it('answers health on the bus while running, and no longer after stop', async () => {
    const service = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance: 'control-0' });
    const health = await requestJson<ServiceHealth>(bus.nc, subjects.health('control'), {});
    expect(health).toMatchObject({ service: 'control', status: 'up', instance: 'control-0' });
    await service.stop();
    await expect(requestJson(bus.nc, subjects.health('control'), {})).rejects.toMatchObject({ code: 'unavailable' });
  });

  /** A running control service and a worker with one stored `control_request`. */
  async function startWithRequest(instance: string, workerId: string, requestId: string, command: string, env: Record<string, string> = {}) {
    await ensureStreams(bus.nc);
    const config = readConfig(controlSettings, { ...process.env, SVC_USER_ASSERTION_KEY: USER_ASSERTION_KEY, ...env });
    const service = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance, config });
    // alice's worker: she may decide its requests.
    await bus.registerWorker(workerId, 'alice');
    await createEventStore(database.db).append(workerId, [
      { type: 'control_request', uid: `cr-${requestId}`, ts: new Date().toISOString(), data: { request_id: requestId, tool_name: 'Bash', input: { command } } },
    ]);
    return service;
  }

  it('on embedded PGlite (one connection) a decision that adds an "always" rule stores both', async () => {
    const workerId = 'wrk_pglite';
    const service = await startWithRequest('control-pglite', workerId, 'r1', 'npm test');
    const decided = await requestJson<StoredEvent<'control_response'>>(bus.nc, subjects.rpc.decide, {
      worker_id: workerId,
      decision: { request_id: 'r1', decision: 'allow', scope: 'always', input_pattern: 'npm *' },
      assertion: await asAlice(workerId, 'r1'),
    });
    expect(decided.data).toMatchObject({ scope: 'always', decided_by: 'alice' });
    const rules = await requestJson<ListResponseOf<PermissionRule>>(bus.nc, subjects.rpc.permissionRules, { worker_id: workerId });
    expect(rules.items).toEqual([expect.objectContaining({ tool_name: 'Bash', input_pattern: 'npm *', added_by: 'alice' })]);
    await service.stop();
  });

  const decide = async (workerId: string, requestId: string) =>
    requestJson<StoredEvent<'control_response'>>(
      bus.nc,
      subjects.rpc.decide,
      { worker_id: workerId, decision: { request_id: requestId, decision: 'allow' }, assertion: await asAlice(workerId, requestId) },
      { timeoutMs: 15_000 },
    );

  it("control — a person's decision is appended and announced by event-ingest, the worker's one writer", async () => {
    const workerId = 'wrk_announce';
    const service = await startWithRequest('control-announce', workerId, 'ra', 'ls');
    const announced: StoredEvent[] = [];
    const following = bus.nc.subscribe(subjects.storedEvent(workerId), {
      callback: (_err, msg) => void announced.push(...msg.json<StoredEventBatchType>().events),
    });
    const decided = await decide(workerId, 'ra');
    expect(decided).toMatchObject({ type: 'control_response', source: 'user:api:alice', data: { request_id: 'ra', decision: 'allow', decided_by: 'alice' } });
    await waitFor('the decision announced', () => announced.find((event) => event.id === decided.id));
    following.unsubscribe();
    await service.stop();
  });

  it('control — while no event-ingest replica owns the partition a decision waits, and is taken once one starts', async () => {
    const workerId = 'wrk_waits';
    const service = await startWithRequest('control-waits', workerId, 'rw', 'ls');
    await ingest!.stop();
    ingest = undefined;
    try {
      const pending = decide(workerId, 'rw');
      // Long enough for several tries to go unanswered (the first pause is 50 ms, doubling).
      const WRITER_AWAY_MS = 700;
      await new Promise((resolve) => setTimeout(resolve, WRITER_AWAY_MS));
      expect(await createEventStore(database.db).count(workerId, { types: ['control_response'] })).toBe(0);
      await startIngest();
      expect((await pending).data).toMatchObject({ request_id: 'rw', decided_by: 'alice' });
      expect(await createEventStore(database.db).count(workerId, { types: ['control_response'] })).toBe(1);
    } finally {
      ingest ??= await startIngest();
      await service.stop();
    }
  });

  it('control — an owner that stored a decision and died before answering: the person is answered with it, and a second decision of theirs is refused', async () => {
    const workerId = 'wrk_owner_died';
    const service = await startWithRequest('control-owner-died', workerId, 'rd', 'ls', { SVC_DECISION_TRY_MS: '300' });
    await ingest!.stop();
    ingest = undefined;
    // An owner that commits the decision it is asked for and dies before it answers.
    const dying = bus.nc.subscribe(subjects.decisionAppend(partitionOfWorker(workerId)), {
      max: 1,
      callback: (_err, msg) => {
        const asked = msg.json<DecisionAppendRequestType>();
        void createEventStore(database.db).decide(workerId, 'rd', asked.person_timeout_s!, asked.decision as SourcedEvent);
      },
    });
    try {
      const pending = decide(workerId, 'rd');
      await waitFor('the decision committed', async () => (await createEventStore(database.db).count(workerId, { types: ['control_response'] })) === 1);
      await startIngest();
      // The owner started again knows nothing of the try: it finds the decision, this very one.
      expect((await pending).data).toMatchObject({ request_id: 'rd', decision: 'allow', decided_by: 'alice' });
      await expect(decide(workerId, 'rd')).rejects.toMatchObject({ code: 'already_decided', details: { decided_by: 'alice' } });
      expect(await createEventStore(database.db).count(workerId, { types: ['control_response'] })).toBe(1);
    } finally {
      dying.unsubscribe();
      ingest ??= await startIngest();
      await service.stop();
    }
  });

  it('control — past SVC_DECISION_WAIT_MS without a writer the decision is answered unavailable (503) and nothing is stored', async () => {
    const workerId = 'wrk_no_writer';
    const service = await startWithRequest('control-no-writer', workerId, 'rn', 'ls', { SVC_DECISION_WAIT_MS: '400', SVC_DECISION_TRY_MS: '100' });
    await ingest!.stop();
    ingest = undefined;
    try {
      await expect(decide(workerId, 'rn')).rejects.toMatchObject({
        code: 'unavailable',
        message: expect.stringMatching(/took no decision within 400 ms.*try again/),
      });
      expect(await createEventStore(database.db).count(workerId, { types: ['control_response'] })).toBe(0);
    } finally {
      await startIngest();
      await service.stop();
    }
  });
});
