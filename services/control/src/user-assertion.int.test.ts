import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUserAssertion, type UserAssertion } from '@svc/auth';
import { connectBus, ensureStreams, natsAuthorization, openWorkerRecords, requestJson, type NatsConnection, type NatsCredentials } from '@svc/bus';
import { launchNatsServer, type NatsServerProcess } from '@svc/nats-server';
import { subjects, type StoredEvent, type WorkerRecord } from '@svc/protocol';
import { createLogger, readConfig, type RunningService } from '@svc/service-kit';
import { createControlRequestLog, createEventStore, migrateToLatest, openDatabase, type StoreDatabase } from '@svc/store';
import { start as startEventIngest } from '@svc/event-ingest';
import { controlSettings, start } from './index.js';

const logger = createLogger({ name: 'user-assertion-test', level: 'silent' });
const KEY = 'the-user-assertion-key-of-this-test-0123';
const WORKER = 'wrk_asserted';

const alice = (requestId: string, overrides: Partial<UserAssertion> = {}): UserAssertion => ({
  sub: 'alice',
  name: 'Alice',
  email: 'alice@example.com',
  groups: ['payments'],
  admin: false,
  channel: 'console',
  workerId: WORKER,
  requestId,
  ...overrides,
});

describe('control — who decides is the user assertion, never the payload (docs/nats-security.md)', () => {
  let nats: NatsServerProcess<NatsCredentials>;
  let database: StoreDatabase;
  let operator: NatsConnection;
  /** The connections of the control service and of the gateway, each as its own NATS user. */
  let control: NatsConnection;
  let gateway: NatsConnection;
  /** event-ingest, as its own NATS user: it appends the decisions. */
  let ingestNc: NatsConnection;
  let ingest: RunningService | undefined;
  let service: RunningService | undefined;

  const startControl = async (env: Record<string, string>) => {
    const started = await start({
      nc: control,
      db: database.db,
      logger,
      instance: 'control-asserted',
      config: readConfig(controlSettings, { ...process.env, ...env }),
    });
    await control.flush();
    return started;
  };
  /** A decide RPC as the gateway's NATS user sends it. */
  const decide = (payload: Record<string, unknown>) => requestJson<StoredEvent<'control_response'>>(gateway, subjects.rpc.decide, payload);
  const allow = (requestId: string) => ({ worker_id: WORKER, decision: { request_id: requestId, decision: 'allow' } });
  const decisionOn = async (requestId: string) => (await createControlRequestLog(database.db).findRequest(WORKER, requestId))?.decision;

  beforeAll(async () => {
    nats = await launchNatsServer({ authorization: natsAuthorization() });
    operator = await connectBus({ servers: nats.url, name: 'operator', logger, credentials: nats.credentials.operator });
    await ensureStreams(operator);
    control = await connectBus({ servers: nats.url, name: 'control', logger, credentials: nats.credentials.control });
    gateway = await connectBus({ servers: nats.url, name: 'gateway', logger, credentials: nats.credentials.gateway });
    database = await openDatabase({});
    // The event log is event-ingest's to migrate; the control service only reads it.
    await migrateToLatest(database.db, 'event-ingest');
    // alice's worker, recorded as the session service records it: she may decide its requests.
    const record: WorkerRecord = { worker_id: WORKER, owner: 'alice', status: 'running', updated_at: new Date().toISOString() };
    await (await openWorkerRecords(operator, logger)).put(WORKER, JSON.stringify(record));
    await createEventStore(database.db).append(
      WORKER,
      ['r1', 'r2', 'r3'].map((requestId) => ({
        type: 'control_request' as const,
        uid: `cr-${requestId}`,
        ts: new Date().toISOString(),
        data: { request_id: requestId, tool_name: 'Bash', input: { command: 'rm -rf build' } },
      })),
    );
    ingestNc = await connectBus({ servers: nats.url, name: 'event-ingest', logger, credentials: nats.credentials['event-ingest'] });
    ingest = await startEventIngest({ nc: ingestNc, db: database.db, logger, instance: 'ingest-0', replicaIndex: 0, replicaCount: 1 });
    service = await startControl({ SVC_USER_ASSERTION_KEY: KEY });
  }, 60_000);
  afterAll(async () => {
    await service?.stop();
    await ingest?.stop();
    await Promise.all([operator?.close(), control?.close(), gateway?.close(), ingestNc?.close()]);
    await database?.close();
    await nats?.stop();
  });

  it('user assertion — a decide RPC from the gateway’s user with a forged decided_by and no assertion is refused; nothing is stored', async () => {
    // The payload cannot name anyone: decided_by and channel are no fields of the RPC.
    await expect(decide({ ...allow('r1'), decided_by: { sub: 'mallory' }, channel: 'console' })).rejects.toMatchObject({ code: 'invalid_request' });
    // Not even beside a valid assertion.
    const valid = await signUserAssertion(KEY, alice('r1'));
    await expect(decide({ ...allow('r1'), decided_by: { sub: 'mallory' }, assertion: valid })).rejects.toMatchObject({ code: 'invalid_request' });
    await expect(decide(allow('r1'))).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining('no user assertion') });
    expect(await decisionOn('r1')).toBeUndefined();
  });

  it('user assertion — forged, signed with another key, expired, or made for another request or worker: forbidden, saying why; nothing is stored', async () => {
    const refusals: Array<[string, string]> = [
      ['eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJtYWxsb3J5In0.forged', 'not valid'],
      [await signUserAssertion('another-key-that-the-gateway-does-not-have', alice('r1', { sub: 'mallory' })), 'not valid'],
      [await signUserAssertion(KEY, alice('r1'), new Date(Date.now() - 61_000)), 'expired'],
      [await signUserAssertion(KEY, alice('r2')), 'for request r2 of worker wrk_asserted, not request r1'],
      [await signUserAssertion(KEY, alice('r1', { workerId: 'wrk_other' })), 'for request r1 of worker wrk_other'],
    ];
    for (const [assertion, why] of refusals) {
      await expect(decide({ ...allow('r1'), assertion }), why).rejects.toMatchObject({ code: 'forbidden', message: expect.stringContaining(why) });
    }
    expect(await decisionOn('r1')).toBeUndefined();
  });

  it('user assertion — a valid one decides: the decision is stored as the asserted person, through the asserted channel', async () => {
    const decided = await decide({ ...allow('r1'), assertion: await signUserAssertion(KEY, alice('r1')) });
    expect(decided.source).toBe('user:console:alice');
    expect(decided.data).toMatchObject({
      request_id: 'r1',
      decision: 'allow',
      decided_by: 'alice',
      decided_by_name: 'Alice',
      decided_by_email: 'alice@example.com',
    });
    expect((await decisionOn('r1'))?.source).toBe('user:console:alice');
    // A decision link's person, through the link channel.
    const linked = await decide({
      ...allow('r2'),
      assertion: await signUserAssertion(KEY, { sub: 'bob', groups: [], admin: false, channel: 'link', workerId: WORKER, requestId: 'r2' }),
    });
    expect(linked.source).toBe('user:link:bob');
    expect(linked.data).not.toHaveProperty('decided_by_name');
  });

  it('user assertion — a control service without SVC_USER_ASSERTION_KEY refuses every person’s decision, a valid assertion too', async () => {
    await service?.stop();
    service = await startControl({ SVC_USER_ASSERTION_KEY: '' });
    await expect(decide({ ...allow('r3'), assertion: await signUserAssertion(KEY, alice('r3')) })).rejects.toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('no SVC_USER_ASSERTION_KEY'),
    });
    expect(await decisionOn('r3')).toBeUndefined();
  });

  it('nats permissions — control ran, served and handed its decisions over as its own NATS user without one permission violation', () => {
    expect(nats.permissionViolations()).toEqual([]);
  });
});
