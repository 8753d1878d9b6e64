import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket, { WebSocketServer } from 'ws';
import { eventFactory, waitFor } from '@svc/test-support';
import { followEventStream } from './event-stream.js';
import { wsTransport } from './ws-transport.js';
import { WorkerView } from './worker-view.js';

/** The follower's pause before reconnecting, here. */
const BACKOFF_MS = 50;
/** Several of those pauses: a follower that would reconnect has done so by then (the negative check waits this long). */
const SEVERAL_BACKOFFS_MS = 6 * BACKOFF_MS;

/**
 * A stand-in of the gateway's event stream on loopback: it sends the events after `after_id`,
 * then a `live` frame, and lets a test drop the connection the way a network would.
 */
async function startStreamServer(options: { refuse?: number; skip?: string } = {}) {
  const event = eventFactory();
  const events = Array.from({ length: 10 }, (_, i) => event('assistant', { text: `e${i + 1}` }));
  const connections: string[] = [];
  const server = new WebSocketServer({
    port: 0,
    verifyClient: (_info, done) => (options.refuse ? done(false, options.refuse, 'refused') : done(true)),
  });
  server.on('connection', (socket, request) => {
    const afterId = Number(new URL(request.url ?? '/', 'http://x').searchParams.get('after_id'));
    connections.push(String(afterId));
    const sent = events
      .slice(afterId, afterId + 5)
      .filter((e) => e.id !== options.skip)
      .map((e) => new Promise((resolve) => socket.send(JSON.stringify({ kind: 'event', event: e }), resolve)));
    if (afterId + 5 >= events.length) socket.send(JSON.stringify({ kind: 'live', last_id: String(events.length) }));
    // The first connection drops once its 5 events are written, like a network failure.
    else void Promise.all(sent).then(() => socket.terminate());
  });
  await new Promise((resolve) => server.once('listening', resolve));
  const url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const reads: string[] = [];
  // The list endpoint's stand-in: what a refill reads.
  const read = async (afterId: string) => {
    reads.push(afterId);
    return events.filter((e) => BigInt(e.id) > BigInt(afterId)).slice(0, 5);
  };
  return { url, connections, read, reads, close: () => new Promise((resolve) => server.close(resolve)) };
}

describe('following the event stream', () => {
  const cleanups: Array<() => unknown> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  /** Follows the stand-in's stream into the view (ended with the test). */
  function follow(server: Awaited<ReturnType<typeof startStreamServer>>, view: WorkerView) {
    const stream = followEventStream({
      view,
      transport: wsTransport((afterId) => new WebSocket(`${server.url}/?after_id=${afterId}`)),
      read: server.read,
      backoffMs: () => BACKOFF_MS,
      onFatal: () => {},
    });
    cleanups.push(() => stream.close());
    return stream;
  }

  /** Follows the stand-in's ten events into a view until live; every one must arrive once, in order. */
  async function followAll(options: { skip?: string } = {}) {
    const server = await startStreamServer(options);
    cleanups.push(server.close);
    const view = new WorkerView({ readOnly: false });
    follow(server, view);
    await waitFor('all ten events, live', () => view.events.length === 10 && view.connection.kind === 'live');
    expect(view.events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    return { server, view };
  }

  it('reconnects after a drop and resumes after the last id it saw: every event once, in order, said on screen', async () => {
    const { server, view } = await followAll();
    expect(server.connections).toEqual(['0', '5']);
    expect(view.notices.map((n) => n.text)).toContain('reconnected; resumed after event #5');
  });

  it('a frame that skips an id: the hole is read from the list endpoint first, so the view still gets every event once, in order', async () => {
    const { server } = await followAll({ skip: '3' });
    expect(server.reads).toEqual(['2']);
  });

  it('a refused stream (HTTP 404 on the upgrade) is fatal, with the reason', async () => {
    const server = await startStreamServer({ refuse: 404 });
    cleanups.push(server.close);
    const view = new WorkerView({ readOnly: false });
    let fatal: string | undefined;
    const stream = followEventStream({
      view,
      transport: wsTransport((afterId) => new WebSocket(`${server.url}/?after_id=${afterId}`)),
      read: server.read,
      backoffMs: () => BACKOFF_MS,
      onFatal: (message) => (fatal = message),
    });
    cleanups.push(() => stream.close());
    await waitFor('the refusal', () => fatal);
    expect(fatal).toBe('HTTP 404');
    expect(view.connection).toEqual({ kind: 'closed', reason: 'HTTP 404' });
  });

  it('while the server is away it says it is reconnecting, with the attempt and the wait', async () => {
    const view = new WorkerView({ readOnly: false });
    const stream = followEventStream({
      view,
      transport: wsTransport((afterId) => new WebSocket(`ws://127.0.0.1:9/?after_id=${afterId}`)),
      read: () => Promise.resolve([]),
      backoffMs: (attempt) => attempt * 100,
      onFatal: () => {},
    });
    cleanups.push(() => stream.close());
    await waitFor('a second attempt', () => view.connection.kind === 'reconnecting' && view.connection.attempt >= 2);
    expect(view.connection).toMatchObject({ kind: 'reconnecting', inMs: expect.any(Number) as unknown as number });
  });

  it('suspended (offline), it drops the connection and tries nothing; resumed, it reconnects at once after the last id it holds', async () => {
    const { server, view } = await followAll();
    const stream = follow(server, view);
    await waitFor('the second follower connected', () => server.connections.length === 3);
    stream.suspend();
    expect(view.connection).toEqual({ kind: 'offline' });
    await new Promise((resolve) => setTimeout(resolve, SEVERAL_BACKOFFS_MS));
    expect(server.connections).toHaveLength(3);
    stream.resume();
    await waitFor('reconnected, live', () => server.connections.length === 4 && view.connection.kind === 'live');
    expect(server.connections.at(-1)).toBe('10');
    expect(view.events.map((e) => e.id)).toEqual(['1', '2', '3', '4', '5', '6', '7', '8', '9', '10']);
    expect(view.notices.at(-1)?.text).toBe('reconnected; resumed after event #10');
  });
});
