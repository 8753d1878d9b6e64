import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type APIErrorBody, type CreateWorkerResultType, type StreamFrame } from '@svc/protocol';
import { metricsRegistry } from '@svc/service-kit';
import { createEventStore } from '@svc/store';
import { systemEvent, waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../../test/fixture.js';
import { DEFAULT_STREAM_LIMITS } from '../stream-limits.js';

const MiB = 1024 * 1024;
const HISTORY = 100_000;
/** ~650 bytes a frame: 100,000 of them are ~65 MB, more than the growth the test allows. */
const PADDING = 'x'.repeat(500);
/**
 * The gateway's stall limit here (`streamStallMs`): a paused viewer reading nothing this long is
 * closed. Longer than a viewer that reads takes to replay the whole history, so a stream that did
 * not pause would have buffered all of it by then.
 */
const STALL_MS = 8_000;
/** How long the held long polls wait: far longer than the polls made while they are held take. */
const HELD_POLL_MS = 1_500;

interface Viewer {
  socket: WebSocket;
  /** The connection under the WebSocket: paused, the viewer reads nothing and the kernel's buffers fill. */
  tcp: Socket;
  frames: StreamFrame[];
  ids(): string[];
  closed: Promise<{ code: number; reason: string }>;
}

/** A refused upgrade: its status, `Retry-After` and APIError. */
interface Refusal {
  status: number;
  retryAfter: string | undefined;
  body: APIErrorBody;
}

describe('event stream bounds — slow viewers are paused, then closed; streams and long polls are capped', () => {
  let gw: GatewayFixture;
  let url: string;
  let alice: string;
  let history: CreateWorkerResultType;
  let seeded: ReturnType<typeof createEventStore>;

  const newWorker = (owner = 'alice') => requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner });
  const seed = async (workerId: string, count: number) => {
    for (let first = 0; first < count; first += 1000)
      await seeded.append(
        workerId,
        Array.from({ length: Math.min(1000, count - first) }, (_, i) => systemEvent(`h${first + i}`, `${first + i} ${PADDING}`)),
      );
  };

  beforeAll(async () => {
    // Postgres in its own process: this process's memory is the gateway's (and the in-process services').
    gw = await startGatewayFixture({ streamStallMs: STALL_MS }, [], { services: true, postgres: true });
    url = (await gw.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
    alice = await gw.userToken('alice');
    seeded = createEventStore(gw.database!.db);
    history = await newWorker();
    await seed(history.worker_id, HISTORY);
  }, 180_000);
  afterAll(() => gw?.stop());

  function connect(workerId: string, token: string, afterId = '0', options: { paused?: boolean } = {}): Promise<Viewer> {
    const socket = new WebSocket(`${url}/v1/workers/${workerId}/sdk-events/stream?after_id=${afterId}`, { headers: { authorization: `Bearer ${token}` } });
    const frames: StreamFrame[] = [];
    let tcp: Socket | undefined;
    socket.on('upgrade', (response) => (tcp = response.socket as Socket));
    socket.on('message', (data) => frames.push(JSON.parse(String(data)) as StreamFrame));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    return new Promise((resolve, reject) => {
      socket.on('open', () => {
        // At once, before the first frame is read.
        if (options.paused) tcp!.pause();
        resolve({ socket, tcp: tcp!, frames, closed, ids: () => frames.flatMap((f) => (f.kind === 'event' ? [f.event.id] : [])) });
      });
      socket.on('unexpected-response', (request, response: IncomingMessage) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          request.destroy();
          const refusal: Refusal = {
            status: response.statusCode ?? 0,
            retryAfter: response.headers['retry-after'],
            body: JSON.parse(Buffer.concat(chunks).toString()) as APIErrorBody,
          };
          reject(Object.assign(new Error(`HTTP ${refusal.status}`), { refusal }));
        });
      });
    });
  }

  const refusalOf = async (attempt: Promise<unknown>): Promise<Refusal> => {
    try {
      await attempt;
    } catch (err) {
      return (err as { refusal: Refusal }).refusal;
    }
    throw new Error('the stream was not refused');
  };

  const contiguous = (ids: string[], from = 1) => expect(ids).toEqual(Array.from({ length: ids.length }, (_, i) => String(from + i)));

  it(
    'a viewer that reads nothing while 100,000 events replay: memory grows by less than 50 MiB, and it is closed with 1008 and the id to resume after',
    { timeout: 180_000 },
    async () => {
      const before = process.memoryUsage().rss;
      let peak = before;
      const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 100);
      const viewer = await connect(history.worker_id, alice, '0', { paused: true });
      try {
        await waitFor('the gateway to give up on the viewer', () => gw.logs.some((line) => line.includes('closed a viewer that is not reading')), 60_000, 100);
      } finally {
        clearInterval(sampler);
      }
      expect(peak - before, `RSS ${(before / MiB).toFixed(0)} → peak ${(peak / MiB).toFixed(0)} MiB`).toBeLessThan(50 * MiB);

      // Reading again, the viewer gets what was on its way, then the close frame: 1008, after the last id it was sent.
      viewer.tcp.resume();
      const { code, reason } = await viewer.closed;
      expect(code).toBe(1008);
      const close = JSON.parse(reason) as { resume_after_id: string; reason: string };
      expect(close.reason).toBe(`the viewer is not reading: nothing read for ${STALL_MS / 1000} s`);
      const ids = viewer.ids();
      expect(ids.length).toBeGreaterThan(0);
      expect(ids.length).toBeLessThan(HISTORY);
      contiguous(ids);
      expect(close.resume_after_id).toBe(ids.at(-1));

      // Resuming there misses nothing.
      const resumed = await connect(history.worker_id, alice, close.resume_after_id);
      await waitFor('the rest of the history', () => resumed.frames.some((f) => f.kind === 'live'), 60_000);
      contiguous(resumed.ids(), ids.length + 1);
      expect(resumed.ids().at(-1)).toBe(String(HISTORY));
      resumed.socket.close();
    },
  );

  it('live events that come while a viewer is paused are not lost: it gets them from the store once it reads again, each once, in order', async () => {
    const worker = await newWorker();
    await seed(worker.worker_id, 20_000);
    const viewer = await connect(worker.worker_id, alice, '0', { paused: true });
    const post = (uid: string) =>
      gw.app.inject({
        method: 'POST',
        url: `/v1/workers/${worker.worker_id}/sdk-events`,
        headers: { authorization: `Bearer ${worker.token}` },
        payload: systemEvent(uid),
      });
    // Live events until one finds the viewer paused (its replay has filled the buffers by then).
    let posted = 0;
    await waitFor(
      'a live event to pass the paused viewer by',
      async () => {
        expect((await post(`live-${posted++}`)).statusCode).toBe(202);
        return gw.logs.some((line) => line.includes(worker.worker_id) && line.includes('its live events are left to the store'));
      },
      15_000,
      100,
    );
    for (let i = 0; i < 5; i++) expect((await post(`live-${posted++}`)).statusCode).toBe(202);

    viewer.tcp.resume();
    await waitFor('every event', () => viewer.ids().length === 20_000 + posted, 30_000);
    contiguous(viewer.ids());
    const uids = viewer.frames.flatMap((f) => (f.kind === 'event' ? [f.event.uid] : []));
    expect(uids.slice(20_000)).toEqual(Array.from({ length: posted }, (_, i) => `live-${i}`));
    await waitFor('the live frame', () => viewer.frames.some((f) => f.kind === 'live'));
    viewer.socket.close();
  }, 60_000);

  it('the 51st stream of a person is refused before the upgrade with 429 too_many_streams and Retry-After; others are not affected; a closed stream frees its place', async () => {
    const max = DEFAULT_STREAM_LIMITS.maxStreamsPerUser;
    expect(max).toBe(50);
    const worker = await newWorker('carol');
    const carol = await gw.userToken('carol');
    const open: Viewer[] = [];
    for (let i = 0; i < max; i++) open.push(await connect(worker.worker_id, carol));

    const refused = await refusalOf(connect(worker.worker_id, carol));
    expect(refused.status).toBe(429);
    expect(refused.retryAfter).toBe('5');
    expect(refused.body).toEqual({
      code: 'too_many_streams',
      message: 'you have 50 streams open on this gateway, the most one person may; close one (another tab or terminal), then connect again',
    });
    // A plain GET holds no connection and takes no place: still the usual 400.
    const plain = await gw.app.inject({ url: `/v1/workers/${worker.worker_id}/sdk-events/stream`, headers: { authorization: `Bearer ${carol}` } });
    expect(plain.statusCode).toBe(400);

    // An admin watching carol's worker has places of their own (and the same cap).
    const admin = await gw.userToken('root', { svc_admin: true });
    const watching = await connect(worker.worker_id, admin);

    open.shift()!.socket.close();
    await waitFor('a place to come free', async () => {
      try {
        open.push(await connect(worker.worker_id, carol));
        return true;
      } catch {
        return false;
      }
    });
    expect((await refusalOf(connect(worker.worker_id, carol))).status).toBe(429);
    for (const viewer of [...open, watching]) viewer.socket.close();
  }, 60_000);

  it('a worker holds at most 8 long polls: the next is 429 too_many_long_polls with Retry-After, a plain poll and other workers still answer', async () => {
    const max = DEFAULT_STREAM_LIMITS.maxLongPollsPerWorker;
    const worker = await newWorker();
    const other = await newWorker();
    const poll = (target: CreateWorkerResultType, waitMs?: number) =>
      gw.app.inject({
        url: `/v1/workers/${target.worker_id}/control/pending?after_id=0${waitMs ? `&wait_ms=${waitMs}` : ''}`,
        headers: { authorization: `Bearer ${target.token}` },
      });
    const inFlight = async () => (await metricsRegistry.getSingleMetric('svc_long_polls_in_flight')!.get()).values[0]?.value ?? 0;
    const start = await inFlight();
    const held = Array.from({ length: max }, () => poll(worker, HELD_POLL_MS));
    await waitFor(`${max} long polls held`, async () => (await inFlight()) === start + max);

    const refused = await poll(worker, HELD_POLL_MS);
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('1');
    expect(refused.json()).toMatchObject({ code: 'too_many_long_polls' });
    expect((await poll(worker)).statusCode).toBe(200);
    expect((await poll(other, 100)).statusCode).toBe(200);

    // Each answered at its deadline gives its place back.
    for (const answer of await Promise.all(held)) expect(answer.statusCode).toBe(200);
    expect((await poll(worker, 100)).statusCode).toBe(200);
  }, 30_000);
});
