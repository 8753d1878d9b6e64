import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestJson } from '@svc/bus';
import { subjects, type CreateWorkerResultType, type IncomingEvent, type StoredEvent, type StreamFrame } from '@svc/protocol';
import { createEventStore } from '@svc/store';
import { systemEvent, waitFor } from '@svc/test-support';
import { startGatewayFixture, type GatewayFixture } from '../test/fixture.js';

interface Viewer {
  frames: StreamFrame[];
  events(): StoredEvent[];
  closed: Promise<{ code: number; reason: string }>;
  socket: WebSocket;
}

describe('sdk-events stream — replay, then live, each event once and in order', () => {
  let gw: GatewayFixture;
  let url: string;
  let worker: CreateWorkerResultType;
  let token: string;

  beforeAll(async () => {
    gw = await startGatewayFixture({}, [], { services: true });
    url = (await gw.app.listen({ host: '127.0.0.1', port: 0 })).replace('http', 'ws');
    worker = await requestJson<CreateWorkerResultType>(gw.bus.nc, subjects.rpc.createWorker, { owner: 'alice' });
    token = await gw.userToken('alice');
  });
  afterAll(() => gw?.stop());

  const post = (events: IncomingEvent[]) =>
    gw.app.inject({
      method: 'POST',
      url: `/v1/workers/${worker.worker_id}/sdk-events`,
      headers: { authorization: `Bearer ${worker.token}` },
      payload: { events },
    });

  function connect(afterId = '0', authorization = `Bearer ${token}`, workerId = worker.worker_id): Promise<Viewer> {
    const socket = new WebSocket(`${url}/v1/workers/${workerId}/sdk-events/stream?after_id=${afterId}`, { headers: { authorization } });
    const frames: StreamFrame[] = [];
    socket.on('message', (data) => frames.push(JSON.parse(String(data)) as StreamFrame));
    const closed = new Promise<{ code: number; reason: string }>((resolve) => socket.on('close', (code, reason) => resolve({ code, reason: String(reason) })));
    return new Promise((resolve, reject) => {
      socket.on('open', () => resolve({ socket, frames, closed, events: () => frames.flatMap((f) => (f.kind === 'event' ? [f.event] : [])) }));
      socket.on('unexpected-response', (request, response) => {
        request.destroy();
        reject(new Error(`HTTP ${response.statusCode}`));
      });
    });
  }

  it('replays the stored events, says "live", then delivers new ones; ids contiguous, no duplicate', async () => {
    await post(Array.from({ length: 5 }, (_, i) => systemEvent(`r${i}`)));
    await waitFor(
      '5 stored',
      async () =>
        (await gw.app.inject({ url: `/v1/workers/${worker.worker_id}/sdk-events`, headers: { authorization: `Bearer ${token}` } })).json().total === 5,
    );
    const viewer = await connect();
    await waitFor('the live frame', () => viewer.frames.some((f) => f.kind === 'live'));
    expect(viewer.frames.find((f) => f.kind === 'live')).toEqual({ kind: 'live', last_id: '5' });
    // Live events posted while and after the viewer joined.
    for (let i = 0; i < 5; i++) await post([systemEvent(`l${i}a`), systemEvent(`l${i}b`)]);
    await waitFor('15 events', () => viewer.events().length === 15);
    expect(viewer.events().map((e) => e.id)).toEqual(Array.from({ length: 15 }, (_, i) => String(i + 1)));
    viewer.socket.close();
  });

  it('resuming with after_id sends only what came after it', async () => {
    const viewer = await connect('12');
    await waitFor('the live frame', () => viewer.frames.some((f) => f.kind === 'live'));
    expect(viewer.events().map((e) => e.id)).toEqual(['13', '14', '15']);
    viewer.socket.close();
  });

  it('a hole in the live feed (an announcement that never came) is refilled from the store', async () => {
    const viewer = await connect('15');
    await waitFor('the live frame', () => viewer.frames.some((f) => f.kind === 'live'));
    // Stored without an announcement, as after a crash between commit and publish.
    await createEventStore(gw.database!.db).append(worker.worker_id, [systemEvent('silent')]);
    await post([systemEvent('announced')]);
    await waitFor('two more events', () => viewer.events().length === 2);
    expect(viewer.events().map((e) => [e.id, e.uid])).toEqual([
      ['16', 'silent'],
      ['17', 'announced'],
    ]);
    viewer.socket.close();
  });

  it('a viewer that drops mid-stream and resumes with after_id misses nothing and gets nothing twice', async () => {
    const first = await connect('0');
    const posting = (async () => {
      for (let i = 0; i < 20; i++) await post([systemEvent(`m${i}`)]);
    })();
    await waitFor('a few events', () => first.events().length >= 20);
    first.socket.terminate();
    const received = first.events();
    const lastSeen = received[received.length - 1]!.id;
    await posting;
    const resumed = await connect(lastSeen);
    const total =
      Number(lastSeen) +
      (await waitFor('the rest', async () => {
        const stored = (
          await gw.app.inject({
            url: `/v1/workers/${worker.worker_id}/sdk-events?after_id=${lastSeen}&limit=1000`,
            headers: { authorization: `Bearer ${token}` },
          })
        ).json();
        return resumed.events().length === stored.items.length && stored.items.length > 0 ? stored.items.length : undefined;
      }));
    const ids = [...received, ...resumed.events()].map((e) => Number(e.id));
    expect(ids).toEqual(Array.from({ length: total }, (_, i) => i + 1));
    resumed.socket.close();
  });

  it('many viewers of one worker share one live feed: each gets every event once, in order, and one leaving stops no other', async () => {
    const start = (
      await gw.app.inject({ url: `/v1/workers/${worker.worker_id}/sdk-events?limit=1000&after_id=0`, headers: { authorization: `Bearer ${token}` } })
    ).json().total as number;
    const viewers = await Promise.all(Array.from({ length: 40 }, () => connect(String(start))));
    await waitFor('every viewer live', () => viewers.every((v) => v.frames.some((f) => f.kind === 'live')));
    await post([systemEvent('shared-1'), systemEvent('shared-2')]);
    await waitFor('two events each', () => viewers.every((v) => v.events().length === 2));
    viewers[0]!.socket.close();
    await viewers[0]!.closed;
    await post([systemEvent('shared-3')]);
    await waitFor('the third event for those still watching', () => viewers.slice(1).every((v) => v.events().length === 3));
    for (const viewer of viewers.slice(1)) {
      expect(viewer.events().map((e) => e.uid)).toEqual(['shared-1', 'shared-2', 'shared-3']);
      expect(viewer.events().map((e) => Number(e.id))).toEqual([start + 1, start + 2, start + 3]);
      viewer.socket.close();
    }
  });

  it('a viewer that may not see the worker is refused before the upgrade', async () => {
    await expect(connect('0', `Bearer ${await gw.userToken('bob')}`)).rejects.toThrow('HTTP 404');
    await expect(connect('0', 'Bearer nope')).rejects.toThrow('HTTP 401');
  });

  it('a server shutdown closes the stream with 1012 and the id to resume after', async () => {
    const viewer = await connect('10');
    await waitFor('the live frame', () => viewer.frames.some((f) => f.kind === 'live'));
    const lastSent = viewer.events().at(-1)!.id;
    await gw.app.close();
    const { code, reason } = await viewer.closed;
    expect(code).toBe(1012);
    expect(JSON.parse(reason)).toEqual({ resume_after_id: lastSent });
  });
});
