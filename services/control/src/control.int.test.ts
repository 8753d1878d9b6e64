import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signUserAssertion } from '@svc/auth';
import { jetstreamManager } from '@nats-io/jetstream';
import { ensureStreams, requestJson } from '@svc/bus';
import {
  partitionOfWorker,
  streams,
  subjects,
  type ListResponseOf,
  type StoredElsewhereMessageType,
  type PermissionRule,
  type ServiceHealth,
  type StoredEvent,
} from '@svc/protocol';
import { createEventStore, migrateToLatest, openDatabase, type StoreDatabase } from '@svc/store';
import { startBusFixture, waitFor, type BusFixture } from '@svc/test-support';
import { readConfig } from '@svc/service-kit';
import { controlSettings, start } from './index.js';

/** The key a gateway would sign who decides with (docs/nats-security.md). */
const USER_ASSERTION_KEY = 'the-user-assertion-key-of-this-test-0123';
const asAlice = (workerId: string, requestId: string) =>
  signUserAssertion(USER_ASSERTION_KEY, { sub: 'alice', admin: false, channel: 'api', workerId, requestId });

describe('control — start and stop', () => {
  let bus: BusFixture;
  let database: StoreDatabase;
  beforeAll(async () => {
    bus = await startBusFixture();
    database = await openDatabase({});
    // The event log is event-ingest's to migrate; the control service only reads it.
    await migrateToLatest(database.db, 'event-log');
    // Its webhook queue and the lifecycle stream it follows (control's main waits for them too).
    await ensureStreams(bus.nc);
  });
  afterAll(async () => {
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
  async function startWithRequest(instance: string, workerId: string, requestId: string, command: string) {
    await ensureStreams(bus.nc);
    const config = readConfig(controlSettings, { ...process.env, SVC_USER_ASSERTION_KEY: USER_ASSERTION_KEY });
    const service = await start({ nc: bus.nc, db: database.db, logger: bus.logger, instance, config });
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

  it('the decider is answered without waiting for the hand-over to event-ingest; one that fails is handed over again later', async () => {
    const workerId = 'wrk_announce';
    const service = await startWithRequest('control-announce', workerId, 'ra', 'ls');
    // No stream takes incoming messages for now: JetStream refuses the hand-over.
    const jsm = await jetstreamManager(bus.nc);
    await jsm.streams.delete(streams.incomingEvents.name);
    const decided = await requestJson<StoredEvent<'control_response'>>(bus.nc, subjects.rpc.decide, {
      worker_id: workerId,
      decision: { request_id: 'ra', decision: 'allow' },
      assertion: await asAlice(workerId, 'ra'),
    });
    expect(decided.data).toMatchObject({ request_id: 'ra', decision: 'allow' });
    await ensureStreams(bus.nc);
    // Nothing consumes the partition here, so the hand-over stays in the stream to be looked at.
    const kept = await waitFor(
      'the decision handed over once the stream is back',
      async () => {
        const message = await jsm.streams
          .getMessage(streams.incomingEvents.name, { last_by_subj: subjects.incomingEvent(partitionOfWorker(workerId), workerId) })
          .catch(() => null);
        return message?.json<StoredElsewhereMessageType>();
      },
      10_000,
    );
    expect(kept).toEqual({ worker_id: workerId, stored: decided });
    await service.stop();
  });
});
