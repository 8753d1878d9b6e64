import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { WebSocket } from 'ws';
import { listStoredEvents } from '@svc/bus';
import { CodedError, EVENT_LIST_LIMIT, EventFollower, STREAM_CLOSE, StreamSdkEventsQuery, WorkerParams, type StreamFrame } from '@svc/protocol';
import { authorizeWorker } from '../auth/authorization.js';
import type { LiveFrame } from '../live-feeds.js';
import { createSocketFlow } from '../stream-limits.js';
import { errorResponses, routePlugin } from './route-plugin.js';

/** The close code for a viewer that is not reading what it is sent (a policy violation, RFC 6455). */
const STREAM_CLOSE_NOT_READING = 1008;
/** The most a WebSocket close reason may hold (RFC 6455: 125 bytes of payload, 2 of them the code). */
const CLOSE_REASON_MAX_BYTES = 123;

/** A close reason that says where to resume (and why, if there is room: a reason holds 123 bytes). */
export function resumeReason(lastId: bigint, reason?: string): string {
  const bare = JSON.stringify({ resume_after_id: lastId.toString() });
  if (reason === undefined) return bare;
  const room = CLOSE_REASON_MAX_BYTES - Buffer.byteLength(bare) - Buffer.byteLength(',"reason":""');
  return room > 0 ? JSON.stringify({ resume_after_id: lastId.toString(), reason: reason.slice(0, room) }) : bare;
}

/** How often the server pings an idle viewer. */
const PING_INTERVAL_MS = 15_000;

/** One viewer's stream: the worker it follows, and where its request's log lines and store reads are tagged. */
interface Viewer {
  socket: WebSocket;
  workerId: string;
  requestId: string;
  log: FastifyBaseLogger;
}

/** What a follower of the stream asks of it. */
interface FollowerHooks {
  ended(): boolean;
  /** Resolves once the viewer has read most of what it was sent. */
  writable(): Promise<void>;
  send(frame: string | Buffer): void;
  fail(err: unknown): void;
}

/** A follower from `afterId`: reads the store page by page, at the pace the viewer reads. */
function followerOf(app: FastifyInstance, viewer: Viewer, afterId: string, hooks: FollowerHooks): EventFollower<LiveFrame> {
  return new EventFollower<LiveFrame>(afterId, {
    read: async (after) => {
      // The next page waits until the viewer has read most of the last: what waits for it stays bounded.
      await hooks.writable();
      if (hooks.ended()) return [];
      const query = { worker_id: viewer.workerId, after_id: after, limit: EVENT_LIST_LIMIT.max };
      return (await listStoredEvents(app.bus, query, { requestId: viewer.requestId })).items;
    },
    pageSize: EVENT_LIST_LIMIT.max,
    deliver: (event, frame) => hooks.send(frame ? frame() : JSON.stringify({ kind: 'event', event } satisfies StreamFrame)),
    onError: hooks.fail,
    stats: app.followers,
  });
}

/**
 * Streams the worker's stored events after `afterId`, then its live ones, to the viewer; pauses
 * a viewer that falls behind (its live events are left to the store until it catches up) and
 * closes one that does not read.
 */
function streamEvents(app: FastifyInstance, viewer: Viewer, afterId: string): void {
  const { socket, workerId, log } = viewer;
  let ended = false;
  let saidLive = false;
  // A follower is reading the store (a replay, or a refill).
  let reading = false;
  // Live events went by while the viewer was paused: the store has them, and the next follower reads them there.
  let missedLive = false;

  const flow = createSocketFlow(socket, app.settings.streamLimits, {
    onResume: () => readMissed(),
    onStalled: (why) => {
      log.warn({ last_id: follower.lastId.toString(), buffered_bytes: socket.bufferedAmount }, `closed a viewer that is not reading: ${why}`);
      end(STREAM_CLOSE_NOT_READING, resumeReason(follower.lastId, `the viewer is not reading: ${why}`));
    },
  });
  // Text frames, whether given a string or the UTF-8 a live feed encoded once for everyone.
  const send = (frame: string | Buffer) => {
    if (ended) return;
    socket.send(frame, { binary: false });
    flow.sent();
  };
  const hooks: FollowerHooks = {
    ended: () => ended,
    writable: () => flow.writable(),
    send,
    fail: (err) => {
      if (ended) return;
      log.error({ err }, 'event stream failed');
      end(STREAM_CLOSE.unavailable, resumeReason(follower.lastId));
    },
  };
  let follower = followerOf(app, viewer, afterId, hooks);

  const run = () => {
    reading = true;
    void follower.start().then(() => {
      reading = false;
      if (ended) return;
      if (!missedLive && !saidLive) {
        saidLive = true;
        send(JSON.stringify({ kind: 'live', last_id: follower.lastId.toString() } satisfies StreamFrame));
      }
      readMissed();
    });
  };
  // Once the viewer has caught up, a new follower reads from the store what went by meanwhile (not counted as a refill: nothing was lost).
  const readMissed = () => {
    if (!missedLive || reading || ended || flow.paused) return;
    missedLive = false;
    const resumeAfter = follower.lastId.toString();
    follower.stop();
    follower = followerOf(app, viewer, resumeAfter, hooks);
    run();
  };

  // Watching starts before the replay, so nothing falls between the two.
  const stopWatching = app.liveFeeds.watch(workerId, (event, frame) => {
    // Nothing is kept for a paused viewer: from the first event it missed, it reads the rest from the store.
    if (missedLive || flow.paused) {
      if (!missedLive) log.debug({ last_id: follower.lastId.toString() }, 'the viewer is behind: its live events are left to the store until it catches up');
      missedLive = true;
      return;
    }
    follower.heard(event, frame);
  });
  const ping = setInterval(() => socket.ping(), PING_INTERVAL_MS);
  const end = (code?: number, reason?: string) => {
    if (ended) return;
    ended = true;
    clearInterval(ping);
    flow.stop();
    stopWatching();
    follower.stop();
    if (code !== undefined) socket.close(code, reason);
  };
  run();

  app.openStreams.add(socket, () => resumeReason(follower.lastId), 'events');
  socket.on('close', () => {
    end();
    app.openStreams.delete(socket);
  });
}

/**
 * `WS /v1/workers/{id}/sdk-events/stream?after_id=N`: the stored events after N, then live ones,
 * each exactly once and in id order (docs/event-stream.md), through an `EventFollower`; a viewer
 * that falls behind is paused, and closed (1008) if it does not read (docs/event-stream.md "Bounds").
 */
export const eventStreamRoutes = routePlugin(
  'svc-event-stream-routes',
  ['svc-settings', 'svc-bus', 'svc-worker-directory', 'svc-live-feeds', 'svc-followers', 'svc-websockets'],
  async (app) => {
    app.route({
      method: 'GET',
      url: '/v1/workers/:id/sdk-events/stream',
      schema: {
        tags: ['events'],
        summary: 'Stream stored events after a cursor, then live ones (WebSocket)',
        description:
          'Upgrade to a WebSocket. Frames: `{kind:"event",event}` for each stored event in id order, one `{kind:"live",last_id}` when the replay is done. On shutdown the server closes with 1012 and `{"resume_after_id":"<id>"}`; a viewer that does not read what it is sent is closed with 1008 and `{"resume_after_id":"<id>","reason":"…"}`. 429 `too_many_streams` when the person already holds the most streams one may. See docs/event-stream.md.',
        params: WorkerParams,
        querystring: StreamSdkEventsQuery,
        response: errorResponses(400, 401, 403, 404, 429),
      },
      // Checked before the upgrade, so a refusal is an ordinary HTTP APIError.
      preHandler: async (request) => {
        await authorizeWorker(request, app.workers, request.params.id);
        app.openStreams.admit(request);
      },
      handler: async () => {
        throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
      },
      wsHandler: (socket, request) => {
        const workerId = request.params.id;
        streamEvents(app, { socket, workerId, requestId: request.id, log: request.log.child({ worker_id: workerId }) }, request.query.after_id ?? '0');
      },
    });
  },
);
