import { type WorkerDirectory } from '@svc/auth';
import type { FastifyRequest } from 'fastify';
import type { WebSocket } from 'ws';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { listStoredEvents, type NatsConnection } from '@svc/bus';
import {
  APIErrorSchema,
  CodedError,
  EVENT_LIST_LIMIT,
  EventFollower,
  STREAM_CLOSE,
  StreamSdkEventsQuery,
  WorkerParams,
  type FollowerStats,
  type StreamFrame,
} from '@svc/protocol';
import { gauge } from '@svc/service-kit';
import { authorizeWorker } from '../auth/authorization.js';
import type { LiveFeeds, LiveFrame } from '../live-feeds.js';
import { checkStreamLimits, createConcurrencyCap, createSocketFlow, DEFAULT_STREAM_LIMITS, type StreamLimits } from '../stream-limits.js';

/** The close code for a viewer that is not reading what it is sent (a policy violation, RFC 6455). */
export const STREAM_CLOSE_NOT_READING = 1008;
/** The most a WebSocket close reason may hold (RFC 6455: 125 bytes of payload, 2 of them the code). */
const CLOSE_REASON_MAX_BYTES = 123;

/** The open WebSockets, so a shutdown can tell each client why (and an event viewer where to resume). */
export interface OpenStreams {
  /**
   * Before a WebSocket upgrade: takes one of the person's places (at most `maxStreamsPerUser` a
   * `sub`, admins too), given back when the connection closes; all taken → 429 `too_many_streams`
   * with `Retry-After`. A request that is not an upgrade takes none.
   */
  admit(request: FastifyRequest): void;
  /** `goodbye` gives the close reason sent at shutdown; `stream` what the socket follows (counted by it). */
  add(socket: WebSocket, goodbye: () => string, stream: 'events' | 'logs'): void;
  delete(socket: WebSocket): void;
  /** Closes every socket with 1012 and its goodbye. */
  closeAll(): void;
}

const viewers = gauge({ name: 'svc_websocket_viewers', help: 'WebSockets open on this gateway, by what they follow (events, logs).', labelNames: ['stream'] });

export function createOpenStreams(limits: Pick<StreamLimits, 'maxStreamsPerUser'> = DEFAULT_STREAM_LIMITS): OpenStreams {
  const open = new Map<WebSocket, { goodbye: () => string; stream: 'events' | 'logs' }>();
  const perUser = createConcurrencyCap(limits.maxStreamsPerUser);
  return {
    admit(request) {
      const principal = request.principal;
      if (!request.ws || principal?.kind !== 'user') return;
      const release = perUser.claim(principal.sub);
      if (!release) {
        throw new CodedError(
          'too_many_streams',
          `you have ${perUser.max} streams open on this gateway, the most one person may; close one (another tab or terminal), then connect again`,
        );
      }
      // The upgraded connection is this request's socket alone: its place is free when it closes, however that happens.
      const connection = request.raw.socket;
      if (connection.destroyed) release();
      else connection.once('close', release);
    },
    add(socket, goodbye, stream) {
      open.set(socket, { goodbye, stream });
      viewers.inc({ stream });
    },
    delete(socket) {
      const entry = open.get(socket);
      if (!entry) return;
      open.delete(socket);
      viewers.dec({ stream: entry.stream });
    },
    closeAll() {
      for (const [socket, { goodbye }] of open) socket.close(STREAM_CLOSE.serverRestart, goodbye());
    },
  };
}

/** A close reason that says where to resume (and why, if there is room: a reason holds 123 bytes). */
export function resumeReason(lastId: bigint, reason?: string): string {
  const bare = JSON.stringify({ resume_after_id: lastId.toString() });
  if (reason === undefined) return bare;
  const room = CLOSE_REASON_MAX_BYTES - Buffer.byteLength(bare) - Buffer.byteLength(',"reason":""');
  return room > 0 ? JSON.stringify({ resume_after_id: lastId.toString(), reason: reason.slice(0, room) }) : bare;
}

export interface EventStreamOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  streams: OpenStreams;
  /** Counts the refills of this gateway's followers. */
  followers: FollowerStats;
  /** How often the server pings an idle client, in ms. */
  pingIntervalMs?: number;
  /** The flow control of each viewer (default: `DEFAULT_STREAM_LIMITS`). */
  limits?: StreamLimits;
}

/**
 * `WS /v1/workers/{id}/sdk-events/stream?after_id=N`: the stored events after N, then live ones,
 * each exactly once and in id order (docs/event-stream.md), through an `EventFollower`; a viewer
 * that falls behind is paused, and closed (1008) if it does not read (docs/event-stream.md "Bounds").
 */
export const eventStreamRoutes: FastifyPluginAsyncTypebox<EventStreamOptions> = async (
  app,
  { nc, workers, live, streams, followers, pingIntervalMs = 15_000, limits = DEFAULT_STREAM_LIMITS },
) => {
  checkStreamLimits(limits);
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
      response: { 400: APIErrorSchema, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 429: APIErrorSchema },
    },
    // Checked before the upgrade, so a refusal is an ordinary HTTP APIError.
    preHandler: async (request) => {
      await authorizeWorker(request, workers, request.params.id);
      streams.admit(request);
    },
    handler: async () => {
      throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
    },
    wsHandler: (socket, request) => {
      const workerId = request.params.id;
      const log = request.log.child({ worker_id: workerId });
      let ended = false;
      let saidLive = false;
      // A follower is reading the store (a replay, or a refill).
      let reading = false;
      // Live events went by while the viewer was paused: the store has them, and the next follower reads them there.
      let missedLive = false;

      const flow = createSocketFlow(socket, limits, {
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
      const follow = (afterId: string) =>
        new EventFollower<LiveFrame>(afterId, {
          read: async (after) => {
            // The next page waits until the viewer has read most of the last: what waits for it stays bounded.
            await flow.writable();
            if (ended) return [];
            return (await listStoredEvents(nc, { worker_id: workerId, after_id: after, limit: EVENT_LIST_LIMIT.max }, { requestId: request.id })).items;
          },
          pageSize: EVENT_LIST_LIMIT.max,
          deliver: (event, frame) => send(frame ? frame() : JSON.stringify({ kind: 'event', event } satisfies StreamFrame)),
          onError: (err) => {
            if (ended) return;
            log.error({ err }, 'event stream failed');
            end(STREAM_CLOSE.unavailable, resumeReason(follower.lastId));
          },
          stats: followers,
        });
      let follower = follow(request.query.after_id ?? '0');

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
        follower = follow(resumeAfter);
        run();
      };

      // Watching starts before the replay, so nothing falls between the two.
      const stopWatching = live.watch(workerId, (event, frame) => {
        // Nothing is kept for a paused viewer: from the first event it missed, it reads the rest from the store.
        if (missedLive || flow.paused) {
          if (!missedLive)
            log.debug({ last_id: follower.lastId.toString() }, 'the viewer is behind: its live events are left to the store until it catches up');
          missedLive = true;
          return;
        }
        follower.heard(event, frame);
      });
      const ping = setInterval(() => socket.ping(), pingIntervalMs);
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

      streams.add(socket, () => resumeReason(follower.lastId), 'events');
      socket.on('close', () => {
        end();
        streams.delete(socket);
      });
    },
  });
};
