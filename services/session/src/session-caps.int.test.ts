import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CodedError, type CallerType } from '@svc/protocol';
import { ALICE, BOB, startSessionFixture, type SessionFixture } from '../test/fixture.js';
import { checkSessionCap, confirmSessionCap, countUnendedSessions } from './session-caps.js';
import { createSessionStore, type SessionStore } from './session-store.js';
import { createWorkerRegistry, type WorkerRegistry } from './worker-registry.js';

const sleeper = `
[agent]
command = "sleep"
args = ["600"]
`;

const refusalOf = async (attempt: Promise<unknown>): Promise<CodedError> => {
  try {
    await attempt;
  } catch (err) {
    if (err instanceof CodedError) return err;
    throw err;
  }
  throw new Error('not refused');
};

describe('session caps — sessions not ended, per person', () => {
  let fixture: SessionFixture;
  let store: SessionStore;
  let registry: WorkerRegistry;
  beforeAll(async () => {
    fixture = await startSessionFixture({ SVC_MAX_RUNNING_SESSIONS_PER_USER: '2' });
    await fixture.writeTemplate('sleeper', sleeper);
    store = createSessionStore(fixture.database.db);
    registry = await createWorkerRegistry(fixture.bus.nc, fixture.bus.logger);
  });
  afterAll(() => fixture?.stop());

  /** A session row of `owner` (and its worker), as the create path stores it, in `status`. */
  const stored = async (owner: string, status: 'pending' | 'provisioning' | 'running' | 'completed' | 'failed' | 'stopped' = 'pending') => {
    const sessionId = `ses_${randomBytes(9).toString('base64url')}`;
    const worker = await registry.create({ owner, session_id: sessionId });
    await store.insert({ id: sessionId, worker_id: worker.worker_id, owner, template: 'sleeper', has_sidecar: false, access: [], routePrincipals: [] });
    if (status !== 'pending') await store.setStatus(sessionId, status);
    return { sessionId, workerId: worker.worker_id };
  };

  it('session caps — pending, provisioning and running sessions count; ended ones and other people’s do not; admins are counted by their own sub', async () => {
    const dave: CallerType = { sub: 'dave', groups: [], admin: false };
    await stored('dave', 'pending');
    await stored('dave', 'provisioning');
    await stored('dave', 'running');
    for (const ended of ['completed', 'failed', 'stopped'] as const) await stored('dave', ended);
    await stored('erin', 'running');
    expect(await countUnendedSessions(fixture.database.db, 'dave')).toBe(3);

    await checkSessionCap(fixture.database.db, dave, 4);
    const refused = await refusalOf(checkSessionCap(fixture.database.db, dave, 3));
    expect(refused.code).toBe('too_many_sessions');
    expect(refused.status).toBe(429);
    expect(refused.message).toBe(
      'you have 3 sessions that have not ended, and one person may have 3: stop one (DELETE /v1/sessions/{id}) or wait for one to end, then try again',
    );
    expect(refused.details).toEqual({ unended: 3, max: 3 });
    expect((await refusalOf(checkSessionCap(fixture.database.db, { sub: 'dave', groups: [], admin: true }, 3))).code).toBe('too_many_sessions');
    await checkSessionCap(fixture.database.db, { sub: 'erin', groups: [], admin: false }, 2);
  });

  it('session caps — counting again once stored: within the cap nothing changes; over it the new session ends failed (admission), its worker ended and its token revoked', async () => {
    const frank: CallerType = { sub: 'frank', groups: [], admin: false };
    const deps = { db: fixture.database.db, registry };
    const first = await stored('frank');
    await confirmSessionCap(deps, frank, first, 1);
    expect((await store.get(first.sessionId))!.session.status).toBe('pending');

    const second = await stored('frank');
    const refused = await refusalOf(confirmSessionCap(deps, frank, second, 1));
    expect(refused.code).toBe('too_many_sessions');
    expect(refused.details).toEqual({ unended: 1, max: 1 });
    expect((await store.get(second.sessionId))!.session).toMatchObject({
      status: 'failed',
      failure: { step: 'admission', reason: 'refused: frank had 1 sessions that had not ended' },
    });
    const worker = await registry.get(second.workerId);
    expect(worker.status).toBe('failed');
    expect(worker.token_hash).toBeUndefined();
    expect(await countUnendedSessions(fixture.database.db, 'frank')).toBe(1);
  });

  it('session caps — through the service: the third session of a person with a cap of 2 is refused (429 too_many_sessions), making nothing; another person is not; a stopped one frees a place', async () => {
    const first = await fixture.create(ALICE, { template: 'sleeper' });
    const second = await fixture.create(ALICE, { template: 'sleeper' });
    const refused = await refusalOf(fixture.create(ALICE, { template: 'sleeper' }));
    expect(refused.code).toBe('too_many_sessions');
    expect(refused.status).toBe(429);
    expect((await store.list(ALICE, { limit: 50, offset: 0 })).total).toBe(2);

    const bobs = await fixture.create(BOB, { template: 'sleeper' });
    await fixture.remove(ALICE, first.id);
    const third = await fixture.create(ALICE, { template: 'sleeper' });
    for (const session of [second, third]) await fixture.remove(ALICE, session.id);
    await fixture.remove(BOB, bobs.id);
  }, 60_000);

  it('session caps — through the service: of six concurrent creates of one person with a cap of 2, exactly 2 are made; the rest are refused with too_many_sessions', async () => {
    const grace: CallerType = { sub: 'grace', groups: [], admin: false };
    const results = await Promise.allSettled(Array.from({ length: 6 }, () => fixture.create(grace, { template: 'sleeper' })));
    const created = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
    const refusals = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as CodedError] : []));
    // Every create may pass the first count together: the second, one at a time, keeps as many as there is room for.
    expect(created).toHaveLength(2);
    expect(refusals).toHaveLength(4);
    for (const refusal of refusals) expect(refusal.code).toBe('too_many_sessions');
    expect(await countUnendedSessions(fixture.database.db, 'grace')).toBe(2);
    for (const session of created) await fixture.remove(grace, session.id);
  }, 60_000);
});
