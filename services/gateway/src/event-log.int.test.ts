import WebSocket from 'ws';
import { afterEach, describe, expect, it } from 'vitest';
import { requestJson, subscribeStoredEvents, type StoredEventSubscription } from '@svc/bus';
import {
  createFollowerStats,
  subjects,
  type CreateWorkerResultType,
  type IncomingEvent,
  type StoredEvent,
  type StoredEventBatchType,
  type StreamFrame,
} from '@svc/protocol';
import { systemEvent, waitFor } from '@svc/test-support';
import { startGatewayFixture, type FixtureOptions } from '../test/fixture.js';

const EVENTS = 1000;
const REQUESTS = 200;
const VIEWERS = 5;
const POLLS = 5;

const requestEvent = (n: number): IncomingEvent => ({
  type: 'control_request',
  uid: `req-${n}`,
  ts: new Date().toISOString(),
  data: { request_id: `r${n}`, tool_name: 'Bash', input: { command: `echo ${n}` } },
});

/** Each reader's ids must be 1, 2, 3 … without a gap or a repeat. */
const contiguous = (ids: string[], count: number) => expect(ids).toEqual(Array.from({ length: count }, (_, i) => String(i + 1)));

/**
 * One worker's whole stored-event log read every way svc reads it, while its events (from the
 * sidecar) and its decisions (from people, stored by the control service) are written at the
 * same time: WebSocket viewers, the sidecar's long polls and an internal bus subscriber.
 */
async function runWorkload(fixtureOptions: FixtureOptions) {
  const gw = await startGatewayFixture({}, [], { services: true, ...fixtureOptions });
  const stop: Array<() => unknown> = [() => gw.stop()];
  const url = (await gw.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
  const worker = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
  const userToken = await gw.userToken('alice');

  const viewers = Array.from({ length: VIEWERS }, () => {
    const ids: string[] = [];
    const requests: string[] = [];
    const decisions: string[] = [];
    const socket = new WebSocket(`${url}/v1/workers/${worker.worker_id}/sdk-events/stream?after_id=0`, { headers: { authorization: `Bearer ${userToken}` } });
    socket.on('message', (data) => {
      const frame = JSON.parse(String(data)) as StreamFrame;
      if (frame.kind !== 'event') return;
      ids.push(frame.event.id);
      if (frame.event.type === 'control_request') requests.push((frame.event as StoredEvent<'control_request'>).data.request_id);
      if (frame.event.type === 'control_response') decisions.push(frame.event.id);
    });
    stop.push(() => socket.close());
    return { ids, requests, decisions, open: new Promise((resolve) => socket.once('open', resolve)) };
  });
  await Promise.all(viewers.map((viewer) => viewer.open));

  const busStats = createFollowerStats();
  const busIds: string[] = [];
  const subscription: StoredEventSubscription = await subscribeStoredEvents(gw.bus.nc, {
    durableName: 'event-log-test',
    workerId: worker.worker_id,
    from: 'all',
    logger: gw.bus.logger,
    stats: busStats,
    handler: (event) => void busIds.push(event.id),
  });
  stop.unshift(() => subscription.stop());

  // The sidecar's control channel polls, each from its own cursor, as a sidecar polls.
  let polling = true;
  const polls = Array.from({ length: POLLS }, () => {
    const decisions: string[] = [];
    const done = (async () => {
      let cursor = '0';
      while (polling && decisions.length < REQUESTS) {
        const answer = await gw.app.inject({
          url: `/v1/workers/${worker.worker_id}/control/pending?after_id=${cursor}&wait_ms=2000&limit=100`,
          headers: { authorization: `Bearer ${worker.token}` },
        });
        expect(answer.statusCode).toBe(200);
        for (const decision of answer.json<{ items: StoredEvent[] }>().items) {
          decisions.push(decision.id);
          cursor = decision.id;
        }
      }
    })();
    return { decisions, done };
  });

  // The sidecar posts every fifth event as a control request, 20 events per POST, one POST at a time.
  const posting = (async () => {
    for (let first = 0; first < EVENTS; first += 20) {
      const events = Array.from({ length: 20 }, (_, i) => first + i).map((n) => (n % 5 === 0 ? requestEvent(n / 5) : systemEvent(`e${n}`)));
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${worker.worker_id}/sdk-events`,
        headers: { authorization: `Bearer ${worker.token}` },
        payload: { events },
      });
      expect(answer.statusCode).toBe(202);
    }
  })();
  // A person decides each request as soon as the first viewer shows it, while events keep coming.
  const deciding = (async () => {
    for (let decided = 0; decided < REQUESTS; decided++) {
      await waitFor(`request r${decided} on screen`, () => viewers[0]!.requests.includes(`r${decided}`), 20_000);
      const answer = await gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${worker.worker_id}/control`,
        headers: { authorization: `Bearer ${userToken}` },
        payload: { request_id: `r${decided}`, decision: 'allow' },
      });
      expect(answer.statusCode).toBe(201);
    }
  })();
  await Promise.all([posting, deciding]);

  const total = EVENTS + REQUESTS;
  await waitFor('every viewer has every event', () => viewers.every((viewer) => viewer.ids.length >= total), 30_000);
  await waitFor('the bus subscriber has every event', () => busIds.length >= total, 30_000);
  await Promise.all(polls.map((poll) => poll.done));
  polling = false;
  for (const viewer of viewers) contiguous(viewer.ids, total);
  contiguous(busIds, total);
  // Each poll got every decision once, in id order.
  expect(viewers[0]!.decisions).toHaveLength(REQUESTS);
  for (const poll of polls) expect(poll.decisions).toEqual(viewers[0]!.decisions);

  return { gateway: gw.app.followers.refills, bus: busStats.refills, stop: () => Promise.all(stop.map((close) => close())) };
}

describe('one stored-event log: every reader sees every event once, in id order', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it(`${EVENTS} events and ${REQUESTS} decisions written at once: ${VIEWERS} viewers, ${POLLS} long polls and a bus subscriber read them, and no follower ever refills`, async () => {
    const run = await runWorkload({});
    cleanups.push(run.stop);
    expect(run.gateway).toBe(0);
    expect(run.bus).toBe(0);
  }, 120_000);

  it("one announcement lost: every follower (each viewer, the long polls' log, the bus subscriber) refills the hole from the store", async () => {
    let dropped = false;
    // A batch of the agent's events, not one holding a decision: the gateway that took a decision
    // offers it to the input log from the control service's answer, so a lost announcement of
    // a decision alone (decisions are handed over on their own now) is no hole for that log.
    const dropAnnouncement = (batch: StoredEventBatchType) => {
      if (dropped || BigInt(batch.events[0]!.id) < 500n || batch.events.some((event) => event.type === 'control_response')) return false;
      dropped = true;
      return true;
    };
    const run = await runWorkload({ dropAnnouncement });
    cleanups.push(run.stop);
    expect(dropped).toBe(true);
    // Five viewers and the one input log of the worker that the polls share.
    expect(run.gateway).toBeGreaterThanOrEqual(VIEWERS + 1);
    expect(run.bus).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
