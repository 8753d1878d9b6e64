import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createIncomingEventPublisher, requestJson } from '@svc/bus';
import { subjects, type CreateWorkerResultType, type WorkerRecord } from '@svc/protocol';
import { waitFor } from '@svc/test-support';
import { ALICE, startSessionFixture, type SessionFixture } from '../test/fixture.js';

const DAY_MS = 24 * 3600 * 1000;
/** How often the service under test sweeps (`SVC_RETENTION_SWEEP_INTERVAL_MS`). */
const SWEEP_INTERVAL_MS = 100;
/** Several sweeps' time: a purge that was due would have happened by then (the negative checks wait this long). */
const SEVERAL_SWEEPS_MS = 5 * SWEEP_INTERVAL_MS;
const agent = `
[agent]
command = "sleep"
args = ["600"]
`;

/**
 * Retention of ended sessions' events (docs/event-ingest.md "Retention"): the session service
 * decides from its sessions (ended when, under which template), event-ingest deletes. The
 * service's clock is moved forward instead of waiting days.
 */
describe('session service — retention of ended sessions’ events', () => {
  let fixture: SessionFixture;
  let clock = Date.now();
  beforeAll(async () => {
    fixture = await startSessionFixture(
      { SVC_EVENT_RETENTION_DAYS: '7', SVC_RETENTION_SWEEP_INTERVAL_MS: String(SWEEP_INTERVAL_MS) },
      {},
      undefined,
      () => clock,
    );
    await fixture.writeTemplate('default-retention', agent);
    await fixture.writeTemplate('one-day', `${agent}\n[retention]\nevents_days = 1\n`);
    await fixture.writeTemplate('kept', `${agent}\n[retention]\nevents_days = 0\n`);
  });
  afterAll(() => fixture?.stop());

  /** A running session with `extra` events of its own beside the spawn's steps. */
  async function runningSession(template: string, extra = 50) {
    const session = await fixture.create(ALICE, { template });
    await fixture.waitForStatus(session.id, 'running');
    const publisher = createIncomingEventPublisher(fixture.bus.nc, 'worker');
    await Promise.all(
      Array.from({ length: extra }, (_, n) =>
        publisher.publish(session.worker_id, {
          type: 'system',
          uid: `${session.worker_id}:x${n}`,
          ts: new Date().toISOString(),
          data: { level: 'info', subtype: 'note', message: `n${n}` },
        }),
      ),
    );
    publisher.close();
    await waitFor(`${session.worker_id}'s events stored`, async () => (await fixture.events(session.worker_id)).length >= extra, 10_000);
    return session;
  }

  const counts = async (sessions: Array<{ worker_id: string }>) => Promise.all(sessions.map(async (s) => (await fixture.events(s.worker_id)).length));

  it('an ended session loses its events once its retention (its template’s, else the default) is over; a live one, or one whose template keeps them, loses none', async () => {
    const [oneDay, byDefault, kept, live] = await Promise.all([
      runningSession('one-day'),
      runningSession('default-retention'),
      runningSession('kept'),
      runningSession('default-retention'),
    ]);
    for (const ended of [oneDay, byDefault, kept]) await fixture.remove(ALICE, ended.id);
    const before = await counts([oneDay, byDefault, kept, live]);
    expect(before.every((count) => count > 50)).toBe(true);

    // Half a day on: nothing is due.
    clock += DAY_MS / 2;
    await sleep(SEVERAL_SWEEPS_MS);
    expect(await counts([oneDay, byDefault, kept, live])).toEqual(before);

    // Two days on: the one-day session's retention is over.
    clock += 1.5 * DAY_MS;
    await waitFor('the one-day session purged', async () => (await fixture.events(oneDay.worker_id)).length === 0, 10_000);
    expect((await counts([byDefault, kept, live])).join()).toBe(before.slice(1).join());

    // Eight days on: the default's (7) is over too; `events_days = 0` and a live session keep theirs.
    clock += 6 * DAY_MS;
    await waitFor('the default-retention session purged', async () => (await fixture.events(byDefault.worker_id)).length === 0, 10_000);
    await sleep(SEVERAL_SWEEPS_MS);
    expect(await counts([kept, live])).toEqual(before.slice(2));

    // Its ids are not handed out again: a late event of a purged worker comes after the old ones.
    const publisher = createIncomingEventPublisher(fixture.bus.nc, 'worker');
    await publisher.publish(oneDay.worker_id, {
      type: 'system',
      uid: `${oneDay.worker_id}:late`,
      ts: new Date().toISOString(),
      data: { level: 'info', subtype: 'note', message: 'late' },
    });
    publisher.close();
    const [late] = await waitFor('the late event stored', async () => {
      const events = await fixture.events(oneDay.worker_id);
      return events.length > 0 ? events : undefined;
    });
    expect(Number(late!.id)).toBe(before[0]! + 1);
  }, 60_000);

  it('a worker registered without a session (no template) is kept the default days after it ended, then loses its events; a live one keeps them', async () => {
    // Back to the real time first: the registry stamps `ended_at` with it, and a sweep still on the
    // test before's clock (eight days ahead) would find this worker ended eight days ago at once.
    // (A sweep reads the clock when it starts; by the time the worker ends, long after, none of those is left.)
    clock = Date.now();
    const register = () => requestJson<CreateWorkerResultType>(fixture.bus.nc, subjects.rpc.createWorker, { owner: ALICE.sub });
    const [ended, live] = await Promise.all([register(), register()]);
    const publisher = createIncomingEventPublisher(fixture.bus.nc, 'worker');
    for (const worker of [ended, live])
      for (let n = 0; n < 20; n++)
        await publisher.publish(worker.worker_id, {
          type: 'system',
          uid: `${worker.worker_id}:${n}`,
          ts: new Date().toISOString(),
          data: { level: 'info', message: `n${n}` },
        });
    publisher.close();
    await waitFor('both workers’ events stored', async () => (await counts([ended, live])).every((count) => count === 20), 10_000);
    const stopped = await requestJson<WorkerRecord>(fixture.bus.nc, subjects.rpc.setWorkerStatus, { worker_id: ended.worker_id, status: 'stopped' });
    expect(stopped.ended_at).toBeDefined();

    // Six days after it ended (the default is 7): kept.
    clock = Date.parse(stopped.ended_at!) + 6 * DAY_MS;
    await sleep(SEVERAL_SWEEPS_MS);
    expect(await counts([ended, live])).toEqual([20, 20]);

    // Eight days after: gone, and its record says when; the live worker keeps its events.
    clock += 2 * DAY_MS;
    await waitFor('the ended worker purged', async () => (await fixture.events(ended.worker_id)).length === 0, 10_000);
    const record = await waitFor('its record marked', async () => {
      const worker = await requestJson<WorkerRecord>(fixture.bus.nc, subjects.rpc.getWorker, { worker_id: ended.worker_id });
      return worker.events_purged_at ? worker : undefined;
    });
    expect(Date.parse(record.events_purged_at!)).toBeGreaterThanOrEqual(Date.parse(stopped.ended_at!) + 8 * DAY_MS);
    expect(await counts([live])).toEqual([20]);
  }, 60_000);

  it('event-ingest away when a retention is over: the round fails and nothing is marked; once it is back, the next round purges', async () => {
    const session = await runningSession('one-day', 10);
    await fixture.remove(ALICE, session.id);
    await fixture.stopIngest();
    clock += 2 * DAY_MS;
    // Rounds run meanwhile and fail: nobody answers the purge.
    await sleep(2 * SEVERAL_SWEEPS_MS);
    await fixture.startIngest();
    await waitFor('the session purged once event-ingest is back', async () => (await fixture.events(session.worker_id)).length === 0, 15_000);
  }, 60_000);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
