import { type WorkerDirectory } from '@svc/auth';
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

/** The open WebSockets, so a shutdown can tell each client why (and an event viewer where to resume). */
export interface OpenStreams {
  /** `goodbye` gives the close reason sent at shutdown; `stream` what the socket follows (counted by it). */
  add(socket: WebSocket, goodbye: () => string, stream: 'events' | 'logs'): void;
  delete(socket: WebSocket): void;
  /** Closes every socket with 1012 and its goodbye. */
  closeAll(): void;
}

const viewers = gauge({ name: 'svc_websocket_viewers', help: 'WebSockets open on this gateway, by what they follow (events, logs).', labelNames: ['stream'] });

export function createOpenStreams(): OpenStreams {
  const open = new Map<WebSocket, { goodbye: () => string; stream: 'events' | 'logs' }>();
  return {
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

export interface EventStreamOptions {
  nc: NatsConnection;
  workers: WorkerDirectory;
  live: LiveFeeds;
  streams: OpenStreams;
  /** Counts the refills of this gateway's followers. */
  followers: FollowerStats;
  /** How often the server pings an idle client, in ms. */
  pingIntervalMs?: number;
}

/**
 * `WS /v1/workers/{id}/sdk-events/stream?after_id=N`: the stored events after N, then live ones,
 * each exactly once and in id order (docs/event-stream.md), through an `EventFollower`.
 */
export const eventStreamRoutes: FastifyPluginAsyncTypebox<EventStreamOptions> = async (
  app,
  { nc, workers, live, streams, followers, pingIntervalMs = 15_000 },
) => {
  app.route({
    method: 'GET',
    url: '/v1/workers/:id/sdk-events/stream',
    schema: {
      tags: ['events'],
      summary: 'Stream stored events after a cursor, then live ones (WebSocket)',
      description:
        'Upgrade to a WebSocket. Frames: `{kind:"event",event}` for each stored event in id order, one `{kind:"live",last_id}` when the replay is done. On shutdown the server closes with 1012 and `{"resume_after_id":"<id>"}`. See docs/event-stream.md.',
      params: WorkerParams,
      querystring: StreamSdkEventsQuery,
      response: { 400: APIErrorSchema, 401: APIErrorSchema, 403: APIErrorSchema, 404: APIErrorSchema, 429: APIErrorSchema },
    },
    // Checked before the upgrade, so a refusal is an ordinary HTTP APIError.
    preHandler: async (request) => {
      await authorizeWorker(request, workers, request.params.id);
    },
    handler: async () => {
      throw new CodedError('invalid_request', 'this endpoint is a WebSocket: connect with "Upgrade: websocket"');
    },
    wsHandler: (socket, request) => {
      const workerId = request.params.id;
      const log = request.log.child({ worker_id: workerId });
      let closed = false;
      // Text frames, whether given a string or the UTF-8 a live feed encoded once for everyone.
      const send = (frame: string | Buffer) => {
        if (!closed) socket.send(frame, { binary: false });
      };
      const follower = new EventFollower<LiveFrame>(request.query.after_id ?? '0', {
        read: async (afterId) =>
          (await listStoredEvents(nc, { worker_id: workerId, after_id: afterId, limit: EVENT_LIST_LIMIT.max }, { requestId: request.id })).items,
        pageSize: EVENT_LIST_LIMIT.max,
        deliver: (event, frame) => send(frame ? frame() : JSON.stringify({ kind: 'event', event } satisfies StreamFrame)),
        onError: (err) => {
          log.error({ err }, 'event stream failed');
          closed = true;
          socket.close(STREAM_CLOSE.unavailable, JSON.stringify({ resume_after_id: follower.lastId.toString() }));
        },
        stats: followers,
      });
      // Watching starts before the replay, so nothing falls between the two.
      const stopWatching = live.watch(workerId, (event, frame) => follower.heard(event, frame));
      void follower.start().then(() => {
        if (!closed) send(JSON.stringify({ kind: 'live', last_id: follower.lastId.toString() } satisfies StreamFrame));
      });

      streams.add(socket, () => JSON.stringify({ resume_after_id: follower.lastId.toString() }), 'events');
      const ping = setInterval(() => socket.ping(), pingIntervalMs);
      socket.on('close', () => {
        closed = true;
        clearInterval(ping);
        stopWatching();
        follower.stop();
        streams.delete(socket);
      });
    },
  });
};
